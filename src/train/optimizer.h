// Optimizers applied by step (SGD with momentum/Nesterov/weight decay, Adam, AdamW), the global
// gradient norm, and one fused, vectorized, multi-threaded update over every trained parameter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "base/thread_pool.h"

namespace oneflow::train {

enum class OptimizerKind { kSgd, kAdam, kAdamW };

const char* OptimizerKindName(OptimizerKind kind);

// Hyper-parameters. The update rules are PyTorch's (torch.optim.SGD / Adam / AdamW as documented):
//   SGD:   d = g + wd*p;  b = (step == 0) ? d : momentum*b + (1-dampening)*d;
//          d = nesterov ? d + momentum*b : b  (when momentum != 0);  p -= lr*d
//   Adam:  g += wd*p (L2 penalty);  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2;
//          p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps),   t = step + 1
//   AdamW: p *= 1 - lr*wd (decoupled decay), then Adam without the L2 term.
// `g` is the accumulated gradient times the clipping scale.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  float lr = 1e-3f;  // the base learning rate; the schedule scales it per step
  float weight_decay = 0.0f;
  float momentum = 0.0f;   // SGD
  float dampening = 0.0f;  // SGD
  bool nesterov = false;   // SGD; needs momentum > 0 and dampening == 0 (as in PyTorch)
  float beta1 = 0.9f;      // Adam/AdamW
  float beta2 = 0.999f;    // Adam/AdamW
  float eps = 1e-8f;       // Adam/AdamW
};

// Throws kInvalidArgument naming the first bad hyper-parameter.
void ValidateOptimizerConfig(const OptimizerConfig& config);

// Names of the per-parameter state tensors (each shaped like its parameter), in a fixed order:
// SGD with momentum: {"momentum_buffer"}; plain SGD: {}; Adam/AdamW: {"exp_avg", "exp_avg_sq"}.
std::vector<std::string> OptimizerStateNames(const OptimizerConfig& config);

// One trained parameter as the optimizer sees it: f32 value (updated in place), its accumulated
// f32 gradient (same shape) and its state tensors (OptimizerStateNames order, zero-initialized).
struct ParamSlot {
  Tensor value;
  Tensor grad;
  std::vector<Tensor> state;
};

// The L2 norm over all gradients, summed in double over fixed-size blocks in a fixed order, so it
// is bit-identical for any thread count. NaN or Inf in any gradient makes `finite` false.
struct GradientNorm {
  double norm = 0.0;
  bool finite = true;
};
GradientNorm GlobalGradientNorm(const std::vector<ParamSlot*>& params, ThreadPool& pool);

// The factor gradients are multiplied by for global-norm clipping (PyTorch's clip_grad_norm_:
// max_norm / (norm + 1e-6), capped at 1). max_norm <= 0 disables clipping (factor 1).
float ClipScale(double norm, float max_norm);

// Scalars of one step, precomputed in double the way PyTorch does (Python floats): what every
// element's update reads. Shared by the CPU loops and the CUDA multi-tensor kernel
// (train/optimizer_cuda.h), so both devices round alike.
struct UpdateScalars {
  float lr, scale, wd, momentum, dampening_c, decay;  // decay: AdamW's 1 - lr*wd
  float b1, c1, b2, c2, step_size, bc2_sqrt, eps;
  bool first;  // SGD: the momentum buffer starts as the first gradient
};
UpdateScalars ComputeUpdateScalars(const OptimizerConfig& config, float lr, float grad_scale, int64_t step);

// Applies one update to every parameter in one parallel region: `lr` is this step's learning rate,
// `grad_scale` multiplies every gradient (clipping), `step` is the number of updates applied
// before this one. Element-wise, so results do not depend on the thread count.
void ApplyUpdate(const OptimizerConfig& config, const std::vector<ParamSlot*>& params, float lr, float grad_scale,
                 int64_t step, ThreadPool& pool);

}  // namespace oneflow::train
