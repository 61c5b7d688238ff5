// OneFlow.java — library-level facts: versions and where the native code was loaded from.
package org.oneflow;

/** Entry point for library-wide information. */
public final class OneFlow {
  private OneFlow() {}

  /** The engine's version string, e.g. "0.1.0". */
  public static String version() {
    return Utf8.decode(Native.version());
  }

  /** The C ABI version the loaded engine implements. */
  public static int apiVersion() {
    return Native.apiVersion();
  }

  /**
   * How the native library was found: {@code "java.library.path"} or {@code "jar"} (extracted from the
   * jar's bundled copy). Loads it if nothing has yet.
   */
  public static String nativeLibrarySource() {
    NativeLibrary.load();
    return NativeLibrary.source();
  }
}
