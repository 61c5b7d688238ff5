// ModelFormat.java — the file formats a model is saved in (oneflow_model_format_t).
package org.oneflow;

/** The format {@link Graph#save} writes. Loading always detects the format from the content. */
public enum ModelFormat {
  /** By the path's extension: {@code .ofm} native, anything else ONNX. */
  AUTO(0),
  ONNX(1),
  /** OneFlow's own container with memory-mapped weights ({@code .ofm}); see docs/native-format.md. */
  NATIVE(2);

  private final int code;

  ModelFormat(int code) {
    this.code = code;
  }

  int code() {
    return code;
  }
}
