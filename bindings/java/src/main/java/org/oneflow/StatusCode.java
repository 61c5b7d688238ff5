// StatusCode.java — the C ABI's oneflow_code_t as a Java enum.
package org.oneflow;

/** Why an engine call failed; mirrors {@code oneflow_code_t}. */
public enum StatusCode {
  /** A value passed in is wrong: shape, dtype, name. */
  INVALID_ARGUMENT(1),
  /** A named input, output or file does not exist. */
  NOT_FOUND(2),
  /** A model file or graph is malformed. */
  INVALID_MODEL(3),
  /** An op, opset, dtype or attribute value is not implemented. */
  UNSUPPORTED(4),
  OUT_OF_MEMORY(5),
  /** A file could not be read or written. */
  IO(6),
  /** A kernel failed on the data (e.g. an index out of range). */
  RUNTIME(7),
  /** A bug in the engine; report it with the message. */
  INTERNAL(8),
  /** A code this binding does not know yet (a newer engine); the message still says what failed. */
  UNKNOWN(-1);

  private final int code;

  StatusCode(int code) {
    this.code = code;
  }

  /** The numeric {@code oneflow_code_t} value (-1 for UNKNOWN). */
  public int code() {
    return code;
  }

  static StatusCode of(int code) {
    for (StatusCode c : values()) {
      if (c.code == code) return c;
    }
    return UNKNOWN;
  }
}
