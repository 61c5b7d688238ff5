// Fixtures.java — access to the models and numpy reference data the ctest fixtures write.
package org.oneflow.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * The c_api fixture (tests/c_api/make_c_api_fixture.py) and the dtype fixture
 * (tests/c_api/make_dtype_fixture.py): models plus inputs and outputs computed by numpy, stored raw and
 * little-endian. Their directories come from the system properties ctest sets.
 */
final class Fixtures {
  private Fixtures() {}

  static Path dir(String property) {
    String d = System.getProperty(property);
    if (d == null) throw new IllegalStateException("system property " + property + " is not set (run the tests from ctest)");
    return Paths.get(d);
  }

  /** A file of the c_api fixture. */
  static Path capi(String name) {
    return dir("oneflow.test.fixture").resolve(name);
  }

  /** A file of the dtype fixture. */
  static Path dtypes(String name) {
    return dir("oneflow.test.dtypes").resolve(name);
  }

  static ByteBuffer read(Path p) {
    try {
      return ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static byte[] bytes(Path p) {
    try {
      return Files.readAllBytes(p);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static float[] floats(Path p) {
    ByteBuffer b = read(p);
    float[] a = new float[b.remaining() / 4];
    b.asFloatBuffer().get(a);
    return a;
  }

  static double[] doubles(Path p) {
    ByteBuffer b = read(p);
    double[] a = new double[b.remaining() / 8];
    b.asDoubleBuffer().get(a);
    return a;
  }

  static int[] ints(Path p) {
    ByteBuffer b = read(p);
    int[] a = new int[b.remaining() / 4];
    b.asIntBuffer().get(a);
    return a;
  }

  static long[] longs(Path p) {
    ByteBuffer b = read(p);
    long[] a = new long[b.remaining() / 8];
    b.asLongBuffer().get(a);
    return a;
  }

  static short[] shorts(Path p) {
    ByteBuffer b = read(p);
    short[] a = new short[b.remaining() / 2];
    b.asShortBuffer().get(a);
    return a;
  }

  static boolean[] booleans(Path p) {
    byte[] raw = bytes(p);
    boolean[] a = new boolean[raw.length];
    for (int i = 0; i < raw.length; i++) a[i] = raw[i] != 0;
    return a;
  }
}
