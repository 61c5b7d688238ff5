// TrainingState.java — the counters of a training session (oneflow_training_state_t).
package org.oneflow;

/**
 * A snapshot of a training session's progress.
 *
 * @param step updates applied
 * @param skippedSteps updates skipped by the NaN/Inf policy
 * @param learningRate the rate the next step will use
 * @param lastLoss the loss of the last train-mode run (NaN before the first)
 * @param lastGradNorm the global gradient norm before clipping at the last step (NaN before)
 */
public record TrainingState(long step, long skippedSteps, double learningRate, double lastLoss, double lastGradNorm) {}
