// DType.java — element types; codes equal the C ABI's oneflow_dtype_t (ONNX TensorProto.DataType).
package org.oneflow;

/** A tensor element type. Sizes and names come from the engine, not from this binding. */
public enum DType {
  UNDEFINED(0),
  FLOAT32(1),
  UINT8(2),
  INT8(3),
  UINT16(4),
  INT16(5),
  INT32(6),
  INT64(7),
  /** Byte strings (ABI 6): use {@link Tensor#fromStrings} and {@link Tensor#toStringArray}. */
  STRING(8),
  /** One byte per element, 0 or 1. */
  BOOL(9),
  FLOAT16(10),
  FLOAT64(11),
  UINT32(12),
  UINT64(13),
  BFLOAT16(16),
  // The narrow storage types (ABI 4): one byte per element, sub-byte ones included (a 4- or 2-bit
  // integer is its value in a byte, a float4e2m1 its code in the low nibble); raw bytes only.
  FLOAT8E4M3FN(17),
  FLOAT8E4M3FNUZ(18),
  FLOAT8E5M2(19),
  FLOAT8E5M2FNUZ(20),
  UINT4(21),
  INT4(22),
  FLOAT4E2M1(23),
  FLOAT8E8M0(24),
  UINT2(25),
  INT2(26);

  private final int code;

  DType(int code) {
    this.code = code;
  }

  /** The numeric {@code oneflow_dtype_t} value. */
  public int code() {
    return code;
  }

  /** Bytes per element, as the engine defines it (0 for UNDEFINED). */
  public int byteSize() {
    return (int) Native.dtypeSize(code);
  }

  /** The engine's name for the type, e.g. "float32". */
  public String engineName() {
    return Utf8.decode(Native.dtypeName(code));
  }

  /** The enum constant for a C code; UNDEFINED for a code this binding does not know. */
  public static DType of(int code) {
    for (DType d : values()) {
      if (d.code == code) return d;
    }
    return UNDEFINED;
  }
}
