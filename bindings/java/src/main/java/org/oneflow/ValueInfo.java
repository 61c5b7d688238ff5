// ValueInfo.java — the description of one graph input or output (oneflow_value_info_t).
package org.oneflow;

import java.util.Arrays;

/**
 * Name, kind, element type and (possibly symbolic) shape of a graph input or output. Immutable. For a
 * sequence or an optional, the dtype and shape are those of the element tensor.
 */
public final class ValueInfo {
  /** What a model input or output is declared to be. */
  public enum Kind {
    TENSOR,
    SEQUENCE,
    OPTIONAL,
    OPTIONAL_SEQUENCE
  }

  private final String name;
  private final Kind kind;
  private final DType dtype;
  private final long[] dims;
  private final String[] dimNames;

  /** Called from the JNI glue; {@code dims} is null when the rank is unknown. */
  ValueInfo(byte[] name, int dtype, long[] dims, byte[][] dimNames, int kind) {
    this.name = Utf8.decode(name);
    this.kind = Kind.values()[kind];
    this.dtype = DType.of(dtype);
    this.dims = dims;
    if (dimNames == null) {
      this.dimNames = null;
    } else {
      this.dimNames = new String[dimNames.length];
      for (int i = 0; i < dimNames.length; i++) this.dimNames[i] = Utf8.decode(dimNames[i]);
    }
  }

  public String name() {
    return name;
  }

  public DType dtype() {
    return dtype;
  }

  public Kind kind() {
    return kind;
  }

  /** The rank, or -1 when it is unknown. */
  public int rank() {
    return dims == null ? -1 : dims.length;
  }

  /** The dims, -1 for a dynamic one; null when the rank is unknown. A copy. */
  public long[] dims() {
    return dims == null ? null : dims.clone();
  }

  /** The symbolic name of each dynamic dim (null entries for fixed or unnamed dims); null when the rank is unknown. */
  public String[] dimNames() {
    return dimNames == null ? null : dimNames.clone();
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder(name).append(": ").append(dtype);
    if (dims == null) return sb.append("[?]").toString();
    sb.append('[');
    for (int i = 0; i < dims.length; i++) {
      if (i > 0) sb.append(", ");
      if (dims[i] >= 0) sb.append(dims[i]);
      else sb.append(dimNames[i] != null ? dimNames[i] : "?");
    }
    return sb.append(']').toString();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ValueInfo)) return false;
    ValueInfo v = (ValueInfo) o;
    return name.equals(v.name) && dtype == v.dtype && Arrays.equals(dims, v.dims) && Arrays.equals(dimNames, v.dimNames);
  }

  @Override
  public int hashCode() {
    return name.hashCode() * 31 + Arrays.hashCode(dims);
  }
}
