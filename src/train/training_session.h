// A training session: a model compiled into forward, backward and eval executors around live f32
// parameters, with gradient accumulation, an optimizer step, checkpoints and model export.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/executor.h"
#include "engine/session.h"
#include "graph/graph.h"
#include "train/lr_schedule.h"
#include "train/mixed_precision.h"
#include "train/optimizer.h"

namespace oneflow::train {

// A loss appended to the model: `logits_output` (a model output) against a new graph input
// `labels_input`, reduced to a scalar by the mean over the batch (or the sum).
enum class AppendedLoss { kNone, kMse, kL1, kSoftmaxCrossEntropy };

// What a step does when the loss or a gradient holds NaN or Inf: skip the update (gradients are
// dropped, the step counter does not advance, skipped_steps() counts it) or refuse it (the step
// fails with kRuntime naming the parameter; gradients stay for inspection until ZeroGradients).
// Parameters are never touched either way.
enum class NonFinitePolicy { kSkip, kRefuse };

// The precision of the compute-heavy ops (train/mixed_precision.h); parameters, optimizer state
// and gradients stay f32 either way.
enum class Precision { kFloat32, kBFloat16, kFloat16 };

struct TrainingOptions {
  // What every session has, checked once (CheckSessionOptions): threads or a shared pool (deterministic
  // mode needs an explicit intra_op_threads), the passes for the compiled graphs (parameters are
  // never folded), and where it trains (docs/training.md, "Training on a CUDA device"): kCuda keeps
  // parameters, gradients and optimizer state in memory of CUDA device `device_index`, runs the
  // forward and backward graphs there (CPU fallback for ops without a CUDA kernel) and steps with
  // the fused multi-tensor optimizer; Run still takes and returns host tensors. `cuda_graphs` applies
  // to the forward, backward and eval graphs (each captured by its executor when shapes are static).
  SessionOptions session;

  // The loss: either a model output named `loss_output`, or `appended_loss` built on
  // `logits_output` and the new input `labels_input` (class indices, int64, for cross entropy;
  // targets shaped like the logits for MSE/L1). The appended loss is the output "loss" (unless the
  // model has a value of that name) and always the last output of interface_graph().
  std::string loss_output;
  AppendedLoss appended_loss = AppendedLoss::kNone;
  std::string logits_output;
  std::string labels_input = "labels";
  bool loss_sum = false;  // appended loss: sum instead of mean over the batch

  OptimizerConfig optimizer;
  LrSchedule schedule;
  float max_grad_norm = 0.0f;        // global-norm clipping; <= 0 disables it
  std::vector<std::string> frozen;   // parameter names or glob patterns kept fixed

  // Same seed, thread count and inputs give bit-identical parameters: kernels use fixed work
  // partitions and fixed-order reductions, so this pins the thread count and records the seed
  // (for ops that draw random numbers; the current op set draws none).
  bool deterministic = false;
  uint64_t seed = 0;
  NonFinitePolicy nonfinite = NonFinitePolicy::kSkip;
  bool activation_checkpointing = false;

  // Mixed precision: MatMul/Gemm/Conv and the elementwise ops between them in bf16 or f16 around
  // f32 master weights; f16 also scales the loss dynamically (`loss_scale`), skipping steps whose
  // scaled gradients overflow whatever `nonfinite` says.
  Precision precision = Precision::kFloat32;
  LossScaleConfig loss_scale;
};

enum class RunMode { kTrain, kEval };
enum class StepOutcome { kApplied, kSkipped };

struct TrainingMemory {
  size_t forward_arena = 0;   // the forward graph's planned arena (last input shapes)
  size_t backward_arena = 0;  // the backward graph's planned arena
  size_t saved_bytes = 0;     // activations (and input copies) the last train-mode run kept for backward
  size_t eval_arena = 0;
  // forward arena + saved activations + backward arena: the intermediate memory one training step
  // holds (the arenas are kept between steps).
  size_t peak() const { return forward_arena + saved_bytes + backward_arena; }
};

// All calls are serialized by one mutex: a training session is a state machine, not a pure function.
class TrainingSession {
 public:
  // `model` must be prepared (graph/prepare.h; loaded models are). Fails with kInvalidArgument for bad options, a missing
  // loss or logits output, or no trainable parameter; kUnsupported naming the op when the loss
  // does not differentiate back to the parameters.
  TrainingSession(const Graph& model, const TrainingOptions& options);
  ~TrainingSession();

  // The inputs a caller feeds (model inputs, then the labels of an appended loss) and the outputs
  // it can fetch (model outputs, then the loss when it is not one of them).
  const Graph& interface_graph() const { return interface_; }
  const TrainingOptions& options() const { return options_; }

  // Forward. Train mode needs every input (labels too) and keeps what backward needs, replacing
  // what an earlier train-mode run kept; eval mode needs only the inputs the model outputs read
  // and keeps nothing. `fetches` empty: all model outputs (and the loss in train mode).
  std::vector<std::pair<std::string, Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                  const std::vector<std::string>& fetches, RunMode mode);
  // How many outputs Run returns when `fetches` is empty.
  size_t DefaultFetchCount(RunMode mode) const;
  // Adds this run's gradients to the accumulated ones and releases the kept activations. Fails
  // (kInvalidArgument) when no train-mode run precedes it since the last backward.
  void Backward();
  // Clips, updates every trained parameter, drops the gradients and advances the step counter.
  // kInvalidArgument when no backward ran since the last step.
  StepOutcome Step();
  void ZeroGradients();

  const std::vector<std::string>& parameter_names() const { return param_names_; }
  Tensor GetParameter(const std::string& name) const;  // a copy
  void SetParameter(const std::string& name, const Tensor& value);
  Tensor GetGradient(const std::string& name) const;   // a copy; zeros when none accumulated
  int64_t step() const;
  int64_t skipped_steps() const;
  float learning_rate() const;    // the rate the next step will use
  double last_loss() const;       // the loss of the last train-mode run (NaN before any)
  double last_grad_norm() const;  // the global norm before clipping at the last step (NaN before any)
  float loss_scale() const;       // the dynamic loss scale the next backward uses (1 without scaling)
  TrainingMemory memory() const;
  // CUDA graphs captured so far by the forward, backward and eval executors (0 on the CPU).
  size_t cuda_graphs_captured() const;

  // Checkpoints: trained parameters, optimizer state, accumulated gradients, the step counter and
  // the options that shape the state, in the native container, written atomically. Loading
  // validates everything (names, shapes, dtypes, optimizer kind) before changing anything and
  // lists every mismatch.
  void SaveCheckpoint(const std::string& path) const;
  void LoadCheckpoint(const std::string& path);

  // The model as loaded (no loss appended, no gradients) with the current parameter values.
  Graph ExportModel() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  TrainingOptions options_;
  Graph interface_;
  std::vector<std::string> param_names_;
};

}  // namespace oneflow::train
