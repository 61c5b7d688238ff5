// Utf8.java — String <-> the C ABI's NUL-terminated UTF-8.
package org.oneflow;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

final class Utf8 {
  private Utf8() {}

  /** The NUL-terminated UTF-8 bytes of {@code s}; a NUL inside would silently cut the C string. */
  static byte[] encode(String s, String what) {
    if (s == null) throw new NullPointerException(what + " is null");
    if (s.indexOf('\0') >= 0) throw new IllegalArgumentException(what + " contains a NUL character: " + s);
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    return Arrays.copyOf(b, b.length + 1);
  }

  static String decode(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }
}
