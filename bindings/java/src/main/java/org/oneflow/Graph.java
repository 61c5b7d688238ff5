// Graph.java — a loaded, validated ONNX model (oneflow_graph_t).
package org.oneflow;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * A loaded model. Immutable; safe to share between threads. Sessions created from it keep their own
 * copy, so it may be closed as soon as they exist.
 */
public final class Graph extends NativeHandle {
  private Graph(long handle) {
    super("Graph", handle, Native::graphRelease);
  }

  /** Takes ownership of a graph handle the engine returned (e.g. a training session's export). */
  static Graph adopt(long handle) {
    return new Graph(handle);
  }

  /** Loads a model file (ONNX or native .ofm, told apart by content); external data files are resolved next to it (and must stay inside its directory). */
  public static Graph load(Path path) {
    return new Graph(Native.graphLoadFile(Utf8.encode(path.toString(), "path")));
  }

  /** Loads an ONNX model from memory (the bytes are copied). A model with external data is refused. */
  public static Graph fromBytes(byte[] model) {
    return fromBytes(model, null);
  }

  /**
   * Loads an ONNX model from memory (the bytes are copied), resolving external data files in
   * {@code externalDataDir} (nullable: then a model that references external data is refused).
   */
  public static Graph fromBytes(byte[] model, Path externalDataDir) {
    if (model == null) throw new NullPointerException("model is null");
    byte[] dir = externalDataDir == null ? null : Utf8.encode(externalDataDir.toString(), "externalDataDir");
    return new Graph(Native.graphLoadMemory(model, dir));
  }

  /**
   * Saves the model as loaded (not a session's optimized form) to {@code path}, in the format its
   * extension names ({@code .ofm} native, otherwise ONNX). The write is atomic: a failure never
   * leaves a damaged file.
   */
  public void save(Path path) {
    save(path, ModelFormat.AUTO, null, true);
  }

  /**
   * Saves with options (oneflow_save_options_t). {@code externalDataFile} (native only, nullable): a
   * plain file name next to the model that receives the weights; null stores them in the model file.
   * {@code checksums} (native only): store per-tensor checksums.
   *
   * @throws OneflowException e.g. IO when the file cannot be written, UNSUPPORTED for ONNX output
   *     from a build without the exporter
   */
  public void save(Path path, ModelFormat format, String externalDataFile, boolean checksums) {
    byte[] p = Utf8.encode(path.toString(), "path");
    byte[] ext = externalDataFile == null ? null : Utf8.encode(externalDataFile, "externalDataFile");
    long h = lock();
    try {
      Native.graphSave(h, p, format.code(), ext, checksums);
    } finally {
      unlock();
    }
  }

  public List<ValueInfo> inputs() {
    return info(false);
  }

  public List<ValueInfo> outputs() {
    return info(true);
  }

  private List<ValueInfo> info(boolean outputs) {
    long h = lock();
    try {
      return Collections.unmodifiableList(Arrays.asList(Native.graphInfo(h, outputs)));
    } finally {
      unlock();
    }
  }
}
