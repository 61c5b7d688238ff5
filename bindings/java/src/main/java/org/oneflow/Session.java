// Session.java — a compiled model that runs inference (oneflow_session_t).
package org.oneflow;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * A model compiled for inference: validated, optimized, memory planned, every kernel created (so an
 * unsupported op fails when the session is created, not in a run).
 *
 * <p>Thread safety: {@link #run} may be called concurrently from many threads on one session. {@link
 * #close} waits for runs in flight; runs after it throw IllegalStateException.
 */
public final class Session extends NativeHandle {
  private final List<ValueInfo> inputs;
  private final List<ValueInfo> outputs;

  /** Compiles {@code graph}; {@code options} may be null (defaults). The graph may be closed afterwards. */
  public Session(Graph graph, SessionOptions options) {
    super("Session", create(graph, options), Native::sessionRelease);
    long h = lock();
    try {
      inputs = Collections.unmodifiableList(Arrays.asList(Native.sessionInfo(h, false)));
      outputs = Collections.unmodifiableList(Arrays.asList(Native.sessionInfo(h, true)));
    } finally {
      unlock();
    }
  }

  /** Loads and compiles an ONNX file; {@code options} may be null. */
  public static Session load(Path model, SessionOptions options) {
    try (Graph g = Graph.load(model)) {
      return new Session(g, options);
    }
  }

  /** Loads and compiles an ONNX model held in memory; {@code externalDataDir} and {@code options} may be null. */
  public static Session fromBytes(byte[] model, Path externalDataDir, SessionOptions options) {
    try (Graph g = Graph.fromBytes(model, externalDataDir)) {
      return new Session(g, options);
    }
  }

  private static long create(Graph graph, SessionOptions options) {
    if (graph == null) throw new NullPointerException("graph is null");
    SessionOptions o = options != null ? options : new SessionOptions();
    Env env = o.env();
    long g = graph.lock();
    try {
      long e = env != null ? env.lock() : 0;
      try {
        return Native.sessionCreate(e, g, o.setMask(), o.intraOpThreads(), o.optimizationLevel());
      } finally {
        if (env != null) env.unlock();
      }
    } finally {
      graph.unlock();
    }
  }

  /** The graph inputs, in declaration order. */
  public List<ValueInfo> inputs() {
    return inputs;
  }

  /** The graph outputs, in declaration order. */
  public List<ValueInfo> outputs() {
    return outputs;
  }

  /**
   * Runs inference. Every graph input must be fed once, by name. Returns the outputs named in {@code
   * outputNames} in that order, or all graph outputs in declaration order when none are named. The
   * caller closes the result (which closes its tensors). Inputs are only read; they stay the caller's.
   *
   * @throws OneflowException with the engine's code and message: e.g. NOT_FOUND for an unknown input
   *     or output name, INVALID_ARGUMENT for a wrong dtype or shape or a missing input
   * @throws IllegalStateException when this session or an input tensor is closed
   */
  public Outputs run(Map<String, Tensor> feeds, String... outputNames) {
    long s = lock();
    try {
      return runLocked(s, outputs, feeds, outputNames);
    } finally {
      unlock();
    }
  }

  /**
   * Runs the live session {@code session} (its owner's lock held by the caller): locks the input
   * tensors, runs, and names the results: {@code outputNames}, or with none the first results of
   * {@code outputs} (a training session in EVAL mode returns the model outputs, a prefix of them).
   */
  static Outputs runLocked(long session, List<ValueInfo> outputs, Map<String, Tensor> feeds, String[] outputNames) {
    int n = feeds.size();
    byte[][] names = new byte[n][];
    Tensor[] tensors = new Tensor[n];
    int i = 0;
    for (Map.Entry<String, Tensor> e : feeds.entrySet()) {
      names[i] = Utf8.encode(e.getKey(), "input name");
      if (e.getValue() == null) throw new NullPointerException("input '" + e.getKey() + "' is null");
      tensors[i++] = e.getValue();
    }
    byte[][] outNames = null;
    if (outputNames.length > 0) {
      outNames = new byte[outputNames.length][];
      for (int k = 0; k < outputNames.length; k++) outNames[k] = Utf8.encode(outputNames[k], "output name");
    }
    long[] handles = new long[n];
    int locked = 0;
    try {
      for (; locked < n; locked++) handles[locked] = tensors[locked].lock();
      long[] out = Native.sessionRun(session, names, handles, outNames);
      List<String> resultNames = new ArrayList<>(out.length);
      if (outputNames.length > 0) {
        resultNames.addAll(Arrays.asList(outputNames));
      } else {
        for (int k = 0; k < out.length; k++) resultNames.add(outputs.get(k).name());
      }
      return new Outputs(resultNames, out);
    } finally {
      for (int k = 0; k < locked; k++) tensors[k].unlock();
    }
  }

  /**
   * The arena size of the current static memory plan: all intermediate tensors of a run for the most
   * recently used input shapes (0 before the first run when shapes are dynamic).
   */
  public long plannedPeakBytes() {
    long h = lock();
    try {
      return Native.sessionPlannedPeakBytes(h);
    } finally {
      unlock();
    }
  }
}
