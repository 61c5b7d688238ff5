// Native.java — the JNI entry points (bindings/java/native/oneflow_jni.c), one per C ABI call used.
package org.oneflow;

import java.nio.ByteBuffer;

/**
 * Static natives over the C ABI. Handles are the C pointers as longs; the callers in this package
 * guarantee every handle passed in is live (see {@link NativeHandle}). Strings cross as UTF-8 byte
 * arrays, NUL-terminated on the way in.
 */
final class Native {
  static {
    NativeLibrary.load();
  }

  private Native() {}

  static native byte[] version();

  static native int apiVersion();

  static native byte[] dtypeName(int dtype);

  static native long dtypeSize(int dtype);

  static native long envCreate();

  static native void envRelease(long env);

  static native long tensorCreate(int dtype, long[] shape);

  static native long tensorCreateBorrowed(int dtype, long[] shape, ByteBuffer buffer, long offset, long byteSize);

  static native void tensorRelease(long tensor);

  static native int tensorDType(long tensor);

  static native long tensorCreateSequence(int dtype, long[] elements);

  static native long tensorCreateNone(int dtype);

  static native long tensorCreateStrings(long[] shape, byte[][] elements);

  static native byte[][] tensorStrings(long tensor);

  static native int tensorKind(long tensor);

  static native long tensorSequenceLength(long tensor);

  static native long tensorSequenceElement(long tensor, long index);

  static native long[] tensorShape(long tensor);

  static native long tensorElementCount(long tensor);

  static native long tensorByteSize(long tensor);

  static native void tensorWriteArray(long tensor, Object primitiveArray, long arrayBytes);

  static native void tensorReadArray(long tensor, Object primitiveArray, long arrayBytes);

  static native void tensorReadBuffer(long tensor, ByteBuffer direct, long offset, long capacity);

  static native long graphLoadFile(byte[] path);

  static native long graphLoadMemory(byte[] model, byte[] externalDataDir);

  static native void graphRelease(long graph);

  static native ValueInfo[] graphInfo(long graph, boolean outputs);

  static native long sessionCreate(long env, long graph, int setMask, int intraOpThreads, int optimizationLevel);

  static native void sessionRelease(long session);

  static native ValueInfo[] sessionInfo(long session, boolean outputs);

  static native long sessionPlannedPeakBytes(long session);

  static native long[] sessionRun(long session, byte[][] inputNames, long[] inputs, byte[][] outputNames);

  // Training sessions and model saving (native/oneflow_jni_train.c).

  static native byte[] trainingOptionsDefaults(int[] ints, float[] floats, long[] longs);

  static native long trainingSessionCreate(long env, long graph, int setMask, int intraOpThreads,
      int optimizationLevel, int[] ints, float[] floats, long[] longs, byte[] lossOutput, byte[] logitsOutput,
      byte[] labelsInput, byte[][] frozen);

  static native void trainSetRunMode(long session, int mode);

  static native void trainBackward(long session);

  static native boolean trainStep(long session);

  static native void trainZeroGradients(long session);

  static native byte[][] trainParameterNames(long session);

  static native long trainGetParameter(long session, byte[] name, boolean gradient);

  static native void trainSetParameter(long session, byte[] name, long tensor);

  static native void trainState(long session, long[] longs, double[] doubles);

  static native long[] trainMemory(long session);

  static native void trainCheckpoint(long session, byte[] path, boolean load);

  static native long trainExportModel(long session);

  static native void graphSave(long graph, byte[] path, int format, byte[] externalDataFile, boolean checksums);
}
