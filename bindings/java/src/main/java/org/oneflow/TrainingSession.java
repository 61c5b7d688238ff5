// TrainingSession.java — a model compiled for training (oneflow_training_session_create): run, backward, step.
package org.oneflow;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * A training session: the model plus a loss (its own output or one appended to the logits), the
 * gradient graph and an optimizer. One step is {@link #run} (TRAIN mode), {@link #backward}, {@link
 * #step}; several run+backward pairs before a step accumulate gradients. The engine keeps the state
 * machine and reports misuse (backward without a train-mode run, step without backward) as
 * OneflowException(INVALID_ARGUMENT).
 *
 * <p>Thread safety: calls on one session are serialized by the engine (a training session is a state
 * machine; concurrent runs gain nothing). {@link #close} waits for calls in flight; calls after it
 * throw IllegalStateException. Parameters are f32 tensors.
 */
public final class TrainingSession extends NativeHandle {
  private final List<ValueInfo> inputs;
  private final List<ValueInfo> outputs;
  private final List<String> parameterNames;

  /** Builds a training session from {@code graph}; {@code sessionOptions} may be null (defaults). */
  public TrainingSession(Graph graph, SessionOptions sessionOptions, TrainingOptions trainingOptions) {
    super("TrainingSession", create(graph, sessionOptions, trainingOptions), Native::sessionRelease);
    long h = lock();
    try {
      inputs = Collections.unmodifiableList(Arrays.asList(Native.sessionInfo(h, false)));
      outputs = Collections.unmodifiableList(Arrays.asList(Native.sessionInfo(h, true)));
      List<String> names = new ArrayList<>();
      for (byte[] b : Native.trainParameterNames(h)) names.add(Utf8.decode(b));
      parameterNames = Collections.unmodifiableList(names);
    } finally {
      unlock();
    }
  }

  /** Loads a model file (ONNX or native) and builds a training session from it. */
  public static TrainingSession load(Path model, SessionOptions sessionOptions, TrainingOptions trainingOptions) {
    try (Graph g = Graph.load(model)) {
      return new TrainingSession(g, sessionOptions, trainingOptions);
    }
  }

  private static long create(Graph graph, SessionOptions sessionOptions, TrainingOptions trainingOptions) {
    if (graph == null) throw new NullPointerException("graph is null");
    if (trainingOptions == null) throw new NullPointerException("trainingOptions is null");
    SessionOptions so = sessionOptions != null ? sessionOptions : new SessionOptions();
    Env env = so.env();
    long g = graph.lock();
    try {
      long e = env != null ? env.lock() : 0;
      try {
        return trainingOptions.create(e, g, so);
      } finally {
        if (env != null) env.unlock();
      }
    } finally {
      graph.unlock();
    }
  }

  /** The inputs of a train-mode run (the model's, then an appended loss's labels). */
  public List<ValueInfo> inputs() {
    return inputs;
  }

  /** The outputs of a train-mode run: the model's, then the loss (when it is not one of them). */
  public List<ValueInfo> outputs() {
    return outputs;
  }

  /** The trained parameters (frozen ones excluded), in the model's initializer order. */
  public List<String> parameterNames() {
    return parameterNames;
  }

  /** Sets the mode of later runs (a new session starts in {@link RunMode#TRAIN}). */
  public void setRunMode(RunMode mode) {
    long h = lock();
    try {
      Native.trainSetRunMode(h, mode.code());
    } finally {
      unlock();
    }
  }

  /**
   * Runs forward in the current mode. Returns the named outputs in that order, or with none named: in
   * TRAIN mode every output of {@link #outputs} (the loss last), in EVAL mode the model outputs.
   *
   * @see Session#run
   */
  public Outputs run(Map<String, Tensor> feeds, String... outputNames) {
    long s = lock();
    try {
      return Session.runLocked(s, outputs, feeds, outputNames);
    } finally {
      unlock();
    }
  }

  /** Adds the gradients of the last train-mode run to the accumulated ones. */
  public void backward() {
    long h = lock();
    try {
      Native.trainBackward(h);
    } finally {
      unlock();
    }
  }

  /**
   * Clips, updates every trained parameter, zeroes the gradients and advances the step counter.
   *
   * @return true when applied, false when the NaN/Inf policy SKIP dropped the update
   */
  public boolean step() {
    long h = lock();
    try {
      return Native.trainStep(h);
    } finally {
      unlock();
    }
  }

  /** Drops the accumulated gradients (and a NaN/Inf loss seen since the last step). */
  public void zeroGradients() {
    long h = lock();
    try {
      Native.trainZeroGradients(h);
    } finally {
      unlock();
    }
  }

  /** A copy of a parameter's value as a new tensor the caller closes; NOT_FOUND for an unknown name. */
  public Tensor parameter(String name) {
    return fetch(name, false);
  }

  /** A copy of a parameter's accumulated gradient (zeros when none) as a new tensor the caller closes. */
  public Tensor gradient(String name) {
    return fetch(name, true);
  }

  /** A parameter's value as a float array (row-major). */
  public float[] parameterFloats(String name) {
    try (Tensor t = parameter(name)) {
      return t.toFloatArray();
    }
  }

  /** A parameter's accumulated gradient as a float array (row-major). */
  public float[] gradientFloats(String name) {
    try (Tensor t = gradient(name)) {
      return t.toFloatArray();
    }
  }

  private Tensor fetch(String name, boolean gradient) {
    byte[] n = Utf8.encode(name, "parameter name");
    long h = lock();
    try {
      return Tensor.adopt(Native.trainGetParameter(h, n, gradient));
    } finally {
      unlock();
    }
  }

  /** Overwrites a parameter with a copy of {@code value} (same dtype and shape required). */
  public void setParameter(String name, Tensor value) {
    if (value == null) throw new NullPointerException("value is null");
    byte[] n = Utf8.encode(name, "parameter name");
    long h = lock();
    try {
      long t = value.lock();
      try {
        Native.trainSetParameter(h, n, t);
      } finally {
        value.unlock();
      }
    } finally {
      unlock();
    }
  }

  /** Overwrites a parameter with {@code values} (row-major, the parameter's element count). */
  public void setParameter(String name, float[] values) {
    try (Tensor t = Tensor.fromArray(values, parameterShape(name))) {
      setParameter(name, t);
    }
  }

  /** Overwrites a parameter with the f32 values in {@code buffer} (direct, native byte order, from its position). */
  public void setParameter(String name, ByteBuffer buffer) {
    try (Tensor t = Tensor.fromBuffer(DType.FLOAT32, buffer, parameterShape(name))) {
      setParameter(name, t);
    }
  }

  private long[] parameterShape(String name) {
    try (Tensor p = parameter(name)) {
      return p.shape();
    }
  }

  public TrainingState state() {
    long[] l = new long[2];
    double[] d = new double[3];
    long h = lock();
    try {
      Native.trainState(h, l, d);
    } finally {
      unlock();
    }
    return new TrainingState(l[0], l[1], d[0], d[1], d[2]);
  }

  /** The intermediate memory of one step, from the plans of the last input shapes. */
  public TrainingMemory memory() {
    long h = lock();
    try {
      long[] m = Native.trainMemory(h);
      return new TrainingMemory(m[0], m[1], m[2], m[3]);
    } finally {
      unlock();
    }
  }

  /** Writes parameters, optimizer state, gradients and the step counter, atomically. */
  public void saveCheckpoint(Path path) {
    checkpoint(path, false);
  }

  /**
   * Restores a checkpoint of the same model and optimizer; on failure (INVALID_ARGUMENT naming
   * mismatches, INVALID_MODEL or IO for a damaged file) the session is unchanged.
   */
  public void loadCheckpoint(Path path) {
    checkpoint(path, true);
  }

  private void checkpoint(Path path, boolean load) {
    byte[] p = Utf8.encode(path.toString(), "path");
    long h = lock();
    try {
      Native.trainCheckpoint(h, p, load);
    } finally {
      unlock();
    }
  }

  /** The model as loaded (no loss, no gradients) with the current parameters: save it or serve it. */
  public Graph exportModel() {
    long h = lock();
    try {
      return Graph.adopt(Native.trainExportModel(h));
    } finally {
      unlock();
    }
  }
}
