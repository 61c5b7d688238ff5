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

  /** Loads an ONNX file; external data files are resolved next to it (and must stay inside its directory). */
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
