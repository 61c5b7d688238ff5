// Learning-rate schedules: constant, step decay, cosine decay, each optionally after a linear warm-up.
#pragma once

#include <cstdint>

namespace oneflow::train {

enum class LrScheduleKind { kConstant, kStep, kCosine };

// The learning rate of update number `step` (0-based) is base_lr times a factor:
//   warm-up (step < warmup_steps): warmup_start_factor + (1 - warmup_start_factor) * step / warmup_steps
//   then, with s = step - warmup_steps (the main schedule starts after the warm-up):
//     constant: 1
//     step:     gamma ^ floor(s / step_size)                                  (PyTorch's StepLR)
//     cosine:   m + (1 - m) * (1 + cos(pi * min(s, decay_steps) / decay_steps)) / 2,
//               m = min_lr_factor                                          (CosineAnnealingLR's form)
struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  int64_t warmup_steps = 0;
  float warmup_start_factor = 0.0f;
  int64_t step_size = 1;     // step
  float gamma = 0.1f;        // step
  int64_t decay_steps = 1;   // cosine: steps from the end of warm-up to the minimum
  float min_lr_factor = 0.0f;  // cosine: the final rate as a fraction of base_lr
};

// Throws kInvalidArgument naming the first bad field.
void ValidateLrSchedule(const LrSchedule& schedule);

float LearningRate(const LrSchedule& schedule, float base_lr, int64_t step);

}  // namespace oneflow::train
