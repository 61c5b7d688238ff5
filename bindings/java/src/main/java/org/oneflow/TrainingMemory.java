// TrainingMemory.java — intermediate memory of one training step (oneflow_training_memory_t).
package org.oneflow;

/**
 * Bytes one training step holds, from the static plans of the last input shapes.
 *
 * @param forwardArenaBytes the forward graph's arena
 * @param savedActivationBytes activations the last train-mode run kept for backward
 * @param backwardArenaBytes the backward graph's arena (recomputed segments included)
 * @param peakBytes the sum of the three
 */
public record TrainingMemory(long forwardArenaBytes, long savedActivationBytes, long backwardArenaBytes, long peakBytes) {}
