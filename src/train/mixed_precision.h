// Mixed-precision training: the graph pass that runs the compute-heavy part of a model in bf16 or
// f16 around f32 master weights, and the dynamic loss scale that keeps f16 gradients in range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "base/dtype.h"
#include "graph/graph.h"

namespace oneflow::train {

// Rewrites a prepared forward graph (trained parameters are f32 graph inputs) so that:
//  * MatMul, Gemm, Conv and ConvTranspose read their float inputs cast to `low` (f16/bf16) and
//    produce `low` (kernels accumulate in f32);
//  * the elementwise and data-movement ops between them (Add, Sub, Mul, Div, Relu, LeakyRelu,
//    Gelu, Sigmoid, Tanh, Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Identity) run in `low`
//    when one of their inputs is already a `low` result, their other float inputs cast to it;
//  * everything else (Softmax, LayerNormalization, reductions, losses, ...) keeps f32: a `low`
//    result it reads is cast back.
// Every original value keeps its name and f32 type (a low result is cast back under the old name;
// unread casts are removed later by dead-code elimination), so outputs, the loss and any pass
// that looks values up by name are unaffected. Parameters stay f32: each is cast where it is
// used, so autodiff's Cast rule turns the low-precision gradient back into f32 for the
// optimizer. Returns the number of nodes now computing in `low`. The graph is re-prepared.
size_t ApplyMixedPrecision(Graph& g, DType low);

// The dynamic loss scale of f16 training (PyTorch's GradScaler rules): the loss is multiplied by
// `scale` before backward and the gradients divided by it at step. A step whose gradients hold
// Inf/NaN is skipped and the scale multiplied by `backoff`; after `growth_interval` consecutive
// applied steps it is multiplied by `growth`.
struct LossScaleConfig {
  bool enabled = true;  // only read for f16
  float initial_scale = 65536.0f;
  float growth = 2.0f;
  float backoff = 0.5f;
  int64_t growth_interval = 2000;
};

void ValidateLossScaleConfig(const LossScaleConfig& config);

class DynamicLossScale {
 public:
  explicit DynamicLossScale(const LossScaleConfig& config) : config_(config), scale_(config.initial_scale) {}
  float scale() const { return scale_; }
  // Records a step's outcome: overflow (skipped) backs off; an applied step counts toward growth.
  void Update(bool overflow);
  // Applied steps since the last change of the scale (checkpoints save it with the scale).
  int64_t good_steps() const { return good_steps_; }
  // Restores a checkpointed state; kInvalidArgument for a scale that is not finite and > 0 or a
  // negative count.
  void Restore(float scale, int64_t good_steps);

 private:
  LossScaleConfig config_;
  float scale_;
  int64_t good_steps_ = 0;
};

}  // namespace oneflow::train
