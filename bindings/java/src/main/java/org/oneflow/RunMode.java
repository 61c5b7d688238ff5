// RunMode.java — what TrainingSession.run computes (oneflow_run_mode_t).
package org.oneflow;

/** The mode of {@link TrainingSession#run}; a new training session starts in {@link #TRAIN}. */
public enum RunMode {
  /** Needs every input (labels too); keeps the activations backward needs; returns the outputs then the loss. */
  TRAIN(0),
  /** Needs only the inputs the model outputs read; keeps nothing; returns the model outputs. */
  EVAL(1);

  private final int code;

  RunMode(int code) {
    this.code = code;
  }

  int code() {
    return code;
  }
}
