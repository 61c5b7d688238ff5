// Learning-rate schedules (formulas in lr_schedule.h), evaluated in double then rounded once.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace oneflow::train {

void ValidateLrSchedule(const LrSchedule& s) {
  OF_REQUIRE(s.kind == LrScheduleKind::kConstant || s.kind == LrScheduleKind::kStep ||
                 s.kind == LrScheduleKind::kCosine,
             "unknown learning-rate schedule ", static_cast<int>(s.kind));
  OF_REQUIRE(s.warmup_steps >= 0, "warmup_steps must be >= 0, got ", s.warmup_steps);
  OF_REQUIRE(s.warmup_start_factor >= 0.0f && s.warmup_start_factor <= 1.0f,
             "warmup_start_factor must be in [0, 1], got ", s.warmup_start_factor);
  if (s.kind == LrScheduleKind::kStep) {
    OF_REQUIRE(s.step_size > 0, "step schedule: step_size must be > 0, got ", s.step_size);
    OF_REQUIRE(std::isfinite(s.gamma) && s.gamma > 0.0f, "step schedule: gamma must be > 0, got ", s.gamma);
  }
  if (s.kind == LrScheduleKind::kCosine) {
    OF_REQUIRE(s.decay_steps > 0, "cosine schedule: decay_steps must be > 0, got ", s.decay_steps);
    OF_REQUIRE(s.min_lr_factor >= 0.0f && s.min_lr_factor <= 1.0f, "cosine schedule: min_lr_factor must be in [0, 1], got ",
               s.min_lr_factor);
  }
}

float LearningRate(const LrSchedule& s, float base_lr, int64_t step) {
  if (step < s.warmup_steps) {
    double f = s.warmup_start_factor + (1.0 - s.warmup_start_factor) * static_cast<double>(step) /
                                           static_cast<double>(s.warmup_steps);
    return static_cast<float>(base_lr * f);
  }
  const int64_t t = step - s.warmup_steps;
  double f = 1.0;
  switch (s.kind) {
    case LrScheduleKind::kConstant: break;
    case LrScheduleKind::kStep: f = std::pow(static_cast<double>(s.gamma), static_cast<double>(t / s.step_size)); break;
    case LrScheduleKind::kCosine: {
      const double pi = 3.14159265358979323846;
      double progress = static_cast<double>(std::min(t, s.decay_steps)) / static_cast<double>(s.decay_steps);
      f = s.min_lr_factor + (1.0 - s.min_lr_factor) * 0.5 * (1.0 + std::cos(pi * progress));
      break;
    }
  }
  return static_cast<float>(base_lr * f);
}

}  // namespace oneflow::train
