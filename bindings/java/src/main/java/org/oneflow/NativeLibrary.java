// NativeLibrary.java — finds and loads liboneflow_jni (and liboneflow) once per class loader.
package org.oneflow;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Loads the JNI glue. First from {@code java.library.path} ({@code System.loadLibrary}), which is what a
 * system install or {@code -Djava.library.path=...} gives; failing that from the copies the jar carries
 * under {@code org/oneflow/native/<os>-<arch>/}: the glue, liboneflow and every library they need that a
 * Linux machine may lack, listed in that folder's {@code MANIFEST} (tools/bundle_natives.py), all
 * extracted to one temporary directory. Each copy's run path is {@code $ORIGIN}, so they find each other
 * there; liboneflow is loaded by full path before the glue. A library the machine lacks (the C++ runtime,
 * or CUDA's cuBLAS/cuDNN/NCCL for a CUDA build) fails the load with the loader's message, which names it.
 */
final class NativeLibrary {
  /** The resource folder for this platform, e.g. {@code org/oneflow/native/linux-x86_64}. */
  static final String RESOURCE_DIR = "org/oneflow/native/" + platform();

  private static final String JNI_NAME = "oneflow_jni";
  /** The engine's soname, as liboneflow_jni records it. */
  private static final String ENGINE_FILE = "liboneflow.so.0";
  /** The list of the folder's files, one a line (written when the jar is made). */
  private static final String MANIFEST = "MANIFEST";

  private static String source;

  private NativeLibrary() {}

  static synchronized void load() {
    if (source != null) return;
    UnsatisfiedLinkError fromPath;
    try {
      System.loadLibrary(JNI_NAME);
      source = "java.library.path";
      return;
    } catch (UnsatisfiedLinkError e) {
      fromPath = e;
    }
    try {
      loadFromJar();
      source = "jar";
    } catch (IOException | UnsatisfiedLinkError e) {
      UnsatisfiedLinkError err = new UnsatisfiedLinkError(
          "oneflow: " + System.mapLibraryName(JNI_NAME) + " is neither on java.library.path ("
              + fromPath.getMessage() + ") nor loadable from the jar's " + RESOURCE_DIR + " (" + e + ")");
      err.initCause(e);
      throw err;
    }
  }

  /** Where the library came from: "java.library.path" or "jar" (null before loading). */
  static synchronized String source() {
    return source;
  }

  private static void loadFromJar() throws IOException {
    String jniFile = System.mapLibraryName(JNI_NAME);
    if (NativeLibrary.class.getClassLoader().getResource(RESOURCE_DIR + "/" + jniFile) == null) {
      throw new IOException("the jar carries no " + RESOURCE_DIR + "/" + jniFile);
    }
    Path dir = Files.createTempDirectory("oneflow-native-");
    dir.toFile().deleteOnExit();
    for (String name : manifest()) {
      if (!name.equals(ENGINE_FILE) && !name.equals(jniFile)) extract(dir, name);
    }
    Path engine = extract(dir, ENGINE_FILE);
    Path jni = extract(dir, jniFile);
    System.load(engine.toString());
    System.load(jni.toString());
  }

  /** The files the jar carries for this platform (none besides the two libraries in older jars). */
  private static List<String> manifest() throws IOException {
    List<String> names = new ArrayList<>();
    try (InputStream in = NativeLibrary.class.getClassLoader().getResourceAsStream(RESOURCE_DIR + "/" + MANIFEST)) {
      if (in == null) return names;
      for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
        String name = line.trim();
        if (name.isEmpty()) continue;
        if (name.contains("/") || name.startsWith(".")) throw new IOException("bad entry in " + MANIFEST + ": " + name);
        names.add(name);
      }
    }
    return names;
  }

  private static Path extract(Path dir, String name) throws IOException {
    Path target = dir.resolve(name);
    try (InputStream in = NativeLibrary.class.getClassLoader().getResourceAsStream(RESOURCE_DIR + "/" + name)) {
      if (in == null) throw new IOException("the jar carries no " + RESOURCE_DIR + "/" + name);
      Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
    }
    target.toFile().deleteOnExit();
    return target;
  }

  private static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (os.startsWith("linux")) os = "linux";
    else if (os.startsWith("mac")) os = "darwin";
    else if (os.startsWith("windows")) os = "windows";
    if (arch.equals("amd64") || arch.equals("x86_64")) arch = "x86_64";
    else if (arch.equals("arm64") || arch.equals("aarch64")) arch = "aarch64";
    return os + "-" + arch;
  }
}
