// TrainingOptions.java — how a training session trains (oneflow_training_options_t), one setter per C field.
package org.oneflow;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Options for a {@link TrainingSession}: a fluent builder whose setters map 1:1 to the fields of
 * {@code oneflow_training_options_t} (see docs/training.md for what each means). A new instance holds
 * the engine's defaults, read from {@code oneflow_training_options_init} (Adam, lr 1e-3, softmax
 * cross-entropy against a new "labels" input, constant schedule). The engine validates the values
 * when the session is created and names a bad field. Not thread-safe: build, then share.
 */
public final class TrainingOptions {
  /** The loss (oneflow_loss_t). */
  public enum Loss {
    /** The model computes its loss: name the output with {@link #lossOutput}. */
    MODEL_OUTPUT,
    /** mean((logits - labels)^2), labels shaped like the logits. */
    MSE,
    /** mean(|logits - labels|). */
    L1,
    /** Logits [N, C], labels int64 class ids [N]. */
    SOFTMAX_CROSS_ENTROPY
  }

  /** The optimizer (oneflow_optimizer_t), each as its torch.optim namesake. */
  public enum Optimizer {
    SGD,
    ADAM,
    ADAMW
  }

  /** The learning-rate schedule after the warm-up (oneflow_lr_schedule_t). */
  public enum LrSchedule {
    CONSTANT,
    STEP,
    COSINE
  }

  /** What a step does when a loss or gradient holds NaN/Inf (oneflow_nonfinite_policy_t). */
  public enum NonfinitePolicy {
    /** No update, gradients dropped; {@link TrainingSession#step} returns false. */
    SKIP,
    /** The step throws (RUNTIME) naming the parameter; gradients stay until zeroGradients. */
    REFUSE
  }

  // Indices into the arrays the glue reads; equal to the OPT_* enums of native/oneflow_jni_train.c.
  private static final int LOSS = 0, LOSS_REDUCTION_SUM = 1, OPTIMIZER = 2, NESTEROV = 3, LR_SCHEDULE = 4,
      DETERMINISTIC = 5, NONFINITE_POLICY = 6, ACTIVATION_CHECKPOINTING = 7, NUM_INTS = 8;
  private static final int LEARNING_RATE = 0, WEIGHT_DECAY = 1, MOMENTUM = 2, DAMPENING = 3, BETA1 = 4, BETA2 = 5,
      EPS = 6, WARMUP_START_FACTOR = 7, GAMMA = 8, MIN_LR_FACTOR = 9, MAX_GRAD_NORM = 10, NUM_FLOATS = 11;
  private static final int WARMUP_STEPS = 0, STEP_SIZE = 1, DECAY_STEPS = 2, SEED = 3, NUM_LONGS = 4;

  private final int[] ints = new int[NUM_INTS];
  private final float[] floats = new float[NUM_FLOATS];
  private final long[] longs = new long[NUM_LONGS];
  private String lossOutput;
  private String logitsOutput;
  private String labelsInput;
  private final List<String> frozen = new ArrayList<>();

  /** The engine's defaults. */
  public TrainingOptions() {
    labelsInput = Utf8.decode(Native.trainingOptionsDefaults(ints, floats, longs));
  }

  public TrainingOptions loss(Loss loss) {
    ints[LOSS] = loss.ordinal();
    return this;
  }

  /** With {@link Loss#MODEL_OUTPUT}: the model output holding a one-element loss. */
  public TrainingOptions lossOutput(String name) {
    lossOutput = name;
    return this;
  }

  /** Appended losses: the model output they read. */
  public TrainingOptions logitsOutput(String name) {
    logitsOutput = name;
    return this;
  }

  /** Appended losses: the name of the new labels input (default "labels"). */
  public TrainingOptions labelsInput(String name) {
    labelsInput = name;
    return this;
  }

  /** Appended losses: true sums over the batch, false (default) takes the mean. */
  public TrainingOptions lossReductionSum(boolean sum) {
    ints[LOSS_REDUCTION_SUM] = sum ? 1 : 0;
    return this;
  }

  public TrainingOptions optimizer(Optimizer optimizer) {
    ints[OPTIMIZER] = optimizer.ordinal();
    return this;
  }

  public TrainingOptions learningRate(float lr) {
    floats[LEARNING_RATE] = lr;
    return this;
  }

  public TrainingOptions weightDecay(float decay) {
    floats[WEIGHT_DECAY] = decay;
    return this;
  }

  /** SGD. */
  public TrainingOptions momentum(float momentum) {
    floats[MOMENTUM] = momentum;
    return this;
  }

  /** SGD. */
  public TrainingOptions dampening(float dampening) {
    floats[DAMPENING] = dampening;
    return this;
  }

  /** SGD: needs momentum &gt; 0 and dampening 0. */
  public TrainingOptions nesterov(boolean nesterov) {
    ints[NESTEROV] = nesterov ? 1 : 0;
    return this;
  }

  /** Adam, AdamW. */
  public TrainingOptions betas(float beta1, float beta2) {
    floats[BETA1] = beta1;
    floats[BETA2] = beta2;
    return this;
  }

  /** Adam, AdamW. */
  public TrainingOptions eps(float eps) {
    floats[EPS] = eps;
    return this;
  }

  public TrainingOptions lrSchedule(LrSchedule schedule) {
    ints[LR_SCHEDULE] = schedule.ordinal();
    return this;
  }

  /** A linear warm-up over the first {@code steps} updates from {@code startFactor} times the rate. */
  public TrainingOptions warmup(long steps, float startFactor) {
    longs[WARMUP_STEPS] = steps;
    floats[WARMUP_START_FACTOR] = startFactor;
    return this;
  }

  /** {@link LrSchedule#STEP}: the rate is multiplied by {@code gamma} every {@code stepSize} updates. */
  public TrainingOptions stepSchedule(long stepSize, float gamma) {
    longs[STEP_SIZE] = stepSize;
    floats[GAMMA] = gamma;
    return this;
  }

  /** {@link LrSchedule#COSINE}: decays to {@code minLrFactor} times the rate over {@code decaySteps}. */
  public TrainingOptions cosineSchedule(long decaySteps, float minLrFactor) {
    longs[DECAY_STEPS] = decaySteps;
    floats[MIN_LR_FACTOR] = minLrFactor;
    return this;
  }

  /** Global gradient-norm clipping; &lt;= 0 (default) disables it. */
  public TrainingOptions maxGradNorm(float norm) {
    floats[MAX_GRAD_NORM] = norm;
    return this;
  }

  /** Parameters kept fixed: exact names or globs ('*', '?'), each of which must match a parameter. */
  public TrainingOptions frozen(String... patterns) {
    frozen.clear();
    frozen.addAll(Arrays.asList(patterns));
    return this;
  }

  /** Bit-identical results for the same seed, threads and inputs; needs an explicit intraOpThreads. */
  public TrainingOptions deterministic(boolean deterministic, long seed) {
    ints[DETERMINISTIC] = deterministic ? 1 : 0;
    longs[SEED] = seed;
    return this;
  }

  public TrainingOptions nonfinitePolicy(NonfinitePolicy policy) {
    ints[NONFINITE_POLICY] = policy.ordinal();
    return this;
  }

  /** Recompute forward segments in backward: less memory, about one extra forward of compute. */
  public TrainingOptions activationCheckpointing(boolean on) {
    ints[ACTIVATION_CHECKPOINTING] = on ? 1 : 0;
    return this;
  }

  public Optimizer optimizer() {
    return Optimizer.values()[ints[OPTIMIZER]];
  }

  public float learningRate() {
    return floats[LEARNING_RATE];
  }

  public Loss loss() {
    return Loss.values()[ints[LOSS]];
  }

  public String labelsInput() {
    return labelsInput;
  }

  /** Creates the session; called by TrainingSession with the graph and env handles locked. */
  long create(long env, long graph, SessionOptions so) {
    byte[][] frozenNames = new byte[frozen.size()][];
    for (int i = 0; i < frozenNames.length; i++) frozenNames[i] = Utf8.encode(frozen.get(i), "frozen pattern");
    return Native.trainingSessionCreate(env, graph, so.setMask(), so.intraOpThreads(), so.optimizationLevel(),
        ints, floats, longs, encodeOrNull(lossOutput, "lossOutput"), encodeOrNull(logitsOutput, "logitsOutput"),
        encodeOrNull(labelsInput, "labelsInput"), frozenNames);
  }

  private static byte[] encodeOrNull(String s, String what) {
    return s == null ? null : Utf8.encode(s, what);
  }
}
