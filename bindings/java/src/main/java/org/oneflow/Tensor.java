// Tensor.java — a dense row-major host tensor (oneflow_tensor_t): created from Java data, read back as Java data.
package org.oneflow;

import java.nio.BufferOverflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A tensor. Element bytes are in the platform's native byte order. Created from Java arrays (copied into
 * engine memory), from raw bytes (copied), or from a direct {@link ByteBuffer} (borrowed: no copy; the
 * engine keeps the buffer reachable for as long as it reads it, so the buffer may be dropped after
 * {@link #close}). Outputs of {@link Session#run} are tensors the caller closes.
 *
 * <p>Thread safety: reads ({@code dtype}, {@code shape}, {@code to*Array}, ...) may run from any number of
 * threads, also while a run uses the tensor as input. Writing a borrowed buffer while a run reads it is a
 * data race (the result is unspecified; the JVM does not crash). {@link #close} waits for calls in flight.
 */
public final class Tensor extends NativeHandle {
  /** The borrowed buffer, if any, also held here so a caller inspecting the tensor sees it alive. */
  private final ByteBuffer borrowed;

  private Tensor(long handle, ByteBuffer borrowed) {
    super("Tensor", handle, Native::tensorRelease);
    this.borrowed = borrowed;
  }

  /** Wraps a handle the engine returned (a run output); the new object owns it. */
  static Tensor adopt(long handle) {
    return new Tensor(handle, null);
  }

  /** A zero-filled tensor. */
  public static Tensor zeros(DType dtype, long... shape) {
    return new Tensor(Native.tensorCreate(dtype.code(), shape.clone()), null);
  }

  public static Tensor fromArray(float[] data, long... shape) {
    return copyOf(DType.FLOAT32, data, data.length, shape);
  }

  public static Tensor fromArray(double[] data, long... shape) {
    return copyOf(DType.FLOAT64, data, data.length, shape);
  }

  public static Tensor fromArray(int[] data, long... shape) {
    return copyOf(DType.INT32, data, data.length, shape);
  }

  public static Tensor fromArray(long[] data, long... shape) {
    return copyOf(DType.INT64, data, data.length, shape);
  }

  public static Tensor fromArray(short[] data, long... shape) {
    return copyOf(DType.INT16, data, data.length, shape);
  }

  /** An INT8 tensor; for UINT8 data use {@link #fromBytes}. */
  public static Tensor fromArray(byte[] data, long... shape) {
    return copyOf(DType.INT8, data, data.length, shape);
  }

  public static Tensor fromArray(boolean[] data, long... shape) {
    return copyOf(DType.BOOL, data, data.length, shape);
  }

  /** A tensor of any dtype from its raw native-order bytes (copied); e.g. UINT8, FLOAT16, BFLOAT16. */
  public static Tensor fromBytes(DType dtype, byte[] raw, long... shape) {
    Tensor t = zeros(dtype, shape);
    try {
      long h = t.lock();
      try {
        long size = Native.tensorByteSize(h);
        if (size != raw.length) {
          throw new IllegalArgumentException(raw.length + " bytes do not match " + dtype + Arrays.toString(shape)
              + " (" + size + " bytes)");
        }
        Native.tensorWriteArray(h, raw, raw.length);
      } finally {
        t.unlock();
      }
      return t;
    } catch (RuntimeException e) {
      t.close();
      throw e;
    }
  }

  /**
   * A tensor viewing {@code buffer}'s bytes from its position on, without copying. The buffer must be
   * direct and hold at least the tensor's byte size from its position; its byte order is ignored (the
   * engine reads native order). Later writes to the buffer are seen by later runs.
   */
  public static Tensor fromBuffer(DType dtype, ByteBuffer buffer, long... shape) {
    if (!buffer.isDirect()) throw new IllegalArgumentException("fromBuffer needs a direct ByteBuffer; use fromBytes to copy");
    long h = Native.tensorCreateBorrowed(dtype.code(), shape.clone(), buffer, buffer.position(), buffer.remaining());
    return new Tensor(h, buffer);
  }

  private static Tensor copyOf(DType dtype, Object array, int length, long[] shape) {
    Tensor t = zeros(dtype, shape);
    try {
      long h = t.lock();
      try {
        long count = Native.tensorElementCount(h);
        if (count != length) {
          throw new IllegalArgumentException("an array of " + length + " elements does not match shape "
              + Arrays.toString(shape) + " (" + count + " elements)");
        }
        Native.tensorWriteArray(h, array, Native.tensorByteSize(h));
      } finally {
        t.unlock();
      }
      return t;
    } catch (RuntimeException e) {
      t.close();
      throw e;
    }
  }

  /**
   * What a tensor handle holds: a dense tensor, or one of ONNX's two non-tensor values a model may take
   * or return — a sequence of tensors, or an optional holding nothing (an optional that holds a value is
   * that tensor or sequence).
   */
  public enum Kind {
    TENSOR,
    SEQUENCE,
    NONE
  }

  /**
   * A sequence of {@code elements}, each of dtype {@code elementType}, for a model input that is a
   * sequence. The sequence references the elements' data; closing the elements afterwards is fine.
   */
  public static Tensor sequence(DType elementType, Tensor... elements) {
    long[] handles = new long[elements.length];
    int locked = 0;
    try {
      for (; locked < elements.length; ++locked) handles[locked] = elements[locked].lock();
      return new Tensor(Native.tensorCreateSequence(elementType.code(), handles), null);
    } finally {
      for (int i = 0; i < locked; ++i) elements[i].unlock();
    }
  }

  /** A STRING tensor of {@code shape} from {@code data} (UTF-8; copied), one element per entry. */
  public static Tensor fromStrings(String[] data, long... shape) {
    byte[][] bytes = new byte[data.length][];
    for (int i = 0; i < data.length; ++i) {
      if (data[i] == null) throw new NullPointerException("data[" + i + "] is null");
      bytes[i] = data[i].getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
    return fromByteStrings(bytes, shape);
  }

  /** A STRING tensor of {@code shape} whose elements are these byte strings (any bytes; copied). */
  public static Tensor fromByteStrings(byte[][] data, long... shape) {
    long count = 1;
    for (long d : shape) count *= d;
    if (count != data.length)
      throw new IllegalArgumentException(data.length + " strings do not match shape " + java.util.Arrays.toString(shape));
    return new Tensor(Native.tensorCreateStrings(shape, data), null);
  }

  /** An empty optional (ONNX's None) of element type {@code elementType}, for an optional model input. */
  public static Tensor none(DType elementType) {
    return new Tensor(Native.tensorCreateNone(elementType.code()), null);
  }

  public Kind kind() {
    long h = lock();
    try {
      return Kind.values()[Native.tensorKind(h)];
    } finally {
      unlock();
    }
  }

  /** A sequence's element count (0 for the other kinds). */
  public long sequenceLength() {
    long h = lock();
    try {
      return Native.tensorSequenceLength(h);
    } finally {
      unlock();
    }
  }

  /** Element {@code index} of a sequence, as a new tensor the caller closes (it shares the data). */
  public Tensor element(long index) {
    long h = lock();
    try {
      return new Tensor(Native.tensorSequenceElement(h, index), null);
    } finally {
      unlock();
    }
  }

  public DType dtype() {
    long h = lock();
    try {
      return DType.of(Native.tensorDType(h));
    } finally {
      unlock();
    }
  }

  /** The dims (empty for a scalar). A copy. */
  public long[] shape() {
    long h = lock();
    try {
      return Native.tensorShape(h);
    } finally {
      unlock();
    }
  }

  public long elementCount() {
    long h = lock();
    try {
      return Native.tensorElementCount(h);
    } finally {
      unlock();
    }
  }

  public long byteSize() {
    long h = lock();
    try {
      return Native.tensorByteSize(h);
    } finally {
      unlock();
    }
  }

  /** Whether this tensor views a caller's buffer (created by {@link #fromBuffer}). */
  public boolean isBorrowed() {
    return borrowed != null;
  }

  public float[] toFloatArray() {
    long h = lockAs(DType.FLOAT32);
    try {
      float[] a = new float[arrayLength(h)];
      Native.tensorReadArray(h, a, Native.tensorByteSize(h));
      return a;
    } finally {
      unlock();
    }
  }

  public double[] toDoubleArray() {
    long h = lockAs(DType.FLOAT64);
    try {
      double[] a = new double[arrayLength(h)];
      Native.tensorReadArray(h, a, Native.tensorByteSize(h));
      return a;
    } finally {
      unlock();
    }
  }

  /** INT32 elements, or UINT32 elements as their raw bits. */
  public int[] toIntArray() {
    long h = lockAs(DType.INT32, DType.UINT32);
    try {
      int[] a = new int[arrayLength(h)];
      Native.tensorReadArray(h, a, Native.tensorByteSize(h));
      return a;
    } finally {
      unlock();
    }
  }

  /** INT64 elements, or UINT64 elements as their raw bits. */
  public long[] toLongArray() {
    long h = lockAs(DType.INT64, DType.UINT64);
    try {
      long[] a = new long[arrayLength(h)];
      Native.tensorReadArray(h, a, Native.tensorByteSize(h));
      return a;
    } finally {
      unlock();
    }
  }

  /** INT16 elements, or UINT16 / FLOAT16 / BFLOAT16 elements as their raw bits. */
  public short[] toShortArray() {
    long h = lockAs(DType.INT16, DType.UINT16, DType.FLOAT16, DType.BFLOAT16);
    try {
      short[] a = new short[arrayLength(h)];
      Native.tensorReadArray(h, a, Native.tensorByteSize(h));
      return a;
    } finally {
      unlock();
    }
  }

  /** INT8 elements, or UINT8 elements as their raw bits. */
  public byte[] toByteArray() {
    long h = lockAs(DType.INT8, DType.UINT8);
    try {
      byte[] a = new byte[arrayLength(h)];
      Native.tensorReadArray(h, a, Native.tensorByteSize(h));
      return a;
    } finally {
      unlock();
    }
  }

  public boolean[] toBooleanArray() {
    long h = lockAs(DType.BOOL);
    try {
      boolean[] a = new boolean[arrayLength(h)];
      Native.tensorReadArray(h, a, Native.tensorByteSize(h));
      return a;
    } finally {
      unlock();
    }
  }

  /** A STRING tensor's elements, decoded as UTF-8 (malformed bytes become U+FFFD, as Java decodes). */
  public String[] toStringArray() {
    byte[][] raw = toByteStrings();
    String[] out = new String[raw.length];
    for (int i = 0; i < raw.length; ++i) out[i] = new String(raw[i], java.nio.charset.StandardCharsets.UTF_8);
    return out;
  }

  /** A STRING tensor's elements as the bytes they are. */
  public byte[][] toByteStrings() {
    long h = lock();
    try {
      return Native.tensorStrings(h);
    } finally {
      unlock();
    }
  }

  /** A copy of the raw bytes in a new direct buffer (native byte order, position 0), any dtype. */
  public ByteBuffer toByteBuffer() {
    long h = lock();
    try {
      long size = Native.tensorByteSize(h);
      if (size > Integer.MAX_VALUE) throw new IllegalStateException("tensor of " + size + " bytes exceeds a ByteBuffer");
      ByteBuffer b = ByteBuffer.allocateDirect((int) size).order(ByteOrder.nativeOrder());
      Native.tensorReadBuffer(h, b, 0, size);
      return b;
    } finally {
      unlock();
    }
  }

  /** Copies the raw bytes into {@code dst} at its position and advances the position past them. */
  public void copyTo(ByteBuffer dst) {
    if (dst.isReadOnly()) throw new java.nio.ReadOnlyBufferException();
    long h = lock();
    try {
      long size = Native.tensorByteSize(h);
      if (size > dst.remaining()) throw new BufferOverflowException();
      if (dst.isDirect()) {
        Native.tensorReadBuffer(h, dst, dst.position(), dst.remaining());
      } else {
        byte[] tmp = new byte[(int) size];
        Native.tensorReadArray(h, tmp, size);
        dst.duplicate().put(tmp);
      }
      dst.position(dst.position() + (int) size);
    } finally {
      unlock();
    }
  }

  @Override
  public String toString() {
    long h = lock();
    try {
      return "Tensor(" + DType.of(Native.tensorDType(h)) + Arrays.toString(Native.tensorShape(h))
          + (borrowed != null ? ", borrowed" : "") + ")";
    } finally {
      unlock();
    }
  }

  /** Locks the handle after checking the dtype is one of {@code allowed}. */
  private long lockAs(DType... allowed) {
    long h = lock();
    DType d = DType.of(Native.tensorDType(h));
    for (DType a : allowed) {
      if (a == d) return h;
    }
    unlock();
    throw new IllegalStateException("the tensor holds " + d + ", not " + Arrays.toString(allowed));
  }

  private static int arrayLength(long h) {
    long n = Native.tensorElementCount(h);
    if (n > Integer.MAX_VALUE) {
      throw new IllegalStateException(n + " elements exceed a Java array; use copyTo(ByteBuffer)");
    }
    return (int) n;
  }
}
