// Training over a placement: the training graph (train/training_graph.h) run as global tensors.
// Two strategies behind one interface:
//  * planned (train/planned_trainer.cc): one plan (plan/) of the whole forward + backward
//    graph: data parallel, ZeRO-1/2, tensor parallel (manual SBP of weights), n-D data x tensor,
//    or the auto planner's choice. Gradients leave the graph as partial sums and are reduced in
//    buckets; the optimizer runs on each device's block (ZeRO: each device's slice of it).
//  * pipeline (train/pipeline_trainer.cc): the forward graph cut into stages on consecutive
//    groups of the placement, micro-batches scheduled 1F1B, activations and their gradients sent
//    between stages, data parallel inside a stage.
// Plan mode auto (train/auto_layouts.h) estimates layouts of both strategies on the planner's cost
// model at the first step and trains the cheapest within the memory budget.
// Every rank of a Gloo job builds the same trainer (SPMD); in-process, one trainer drives all.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/tensor.h"
#include "engine/distributed_session.h"
#include "graph/graph.h"
#include "train/training_session.h"

namespace oneflow::train {

struct DistributedTrainingOptions {
  // Loss, optimizer, schedule, clipping, frozen parameters, NaN policy. intra_op_threads is
  // ignored (dist.threads_per_device applies); activation_checkpointing is not supported here.
  TrainingOptions training;
  // Placement, plan mode (data: the default; manual: SBP annotations of weights select tensor
  // parallelism; auto: planned and pipeline layouts searched, see auto_layouts.h), cost model,
  // memory budget, backend (in-process or gloo), timeout.
  DistributedOptions dist;
  // ZeRO: 0 off; 1 optimizer state sharded (each device updates 1/n of every data-parallel weight,
  // then the weights are all-gathered); 2 gradients too (reduce-scatter instead of all-reduce);
  // 3 the weights too: each is held split on dim 0 (B where dim 0 has fewer rows than devices),
  // the plan all-gathers it where it is used and reduce-scatters its gradient (plan mode data or
  // auto; auto also considers this layout whatever zero_stage says).
  int zero_stage = 0;
  // Gradient all-reduce bucket size: gradients are reduced in buckets of about this many bytes,
  // in the order backward produces them.
  int64_t bucket_bytes = 25 << 20;
  // Pipeline parallel: > 1 cuts the model into this many stages over the placement's first axis
  // (the placement is 1-D; its devices divide evenly into stages, each stage data parallel over
  // its share); `micro_batches` (>= stages for a full pipeline) split each global batch.
  int pipeline_stages = 1;
  int micro_batches = 1;
  // The plan search's state cap for training graphs (PlanOptions::max_states applies to
  // inference): forward + backward graphs keep several times more values alive, and 128 states
  // plan the 4-layer encoder's training graph in about a second.
  int max_states = 128;
};

struct TrainStepResult {
  double loss = 0;         // the global batch's loss (as the single-device run computes it)
  bool applied = true;     // false: skipped (NaN/Inf with the skip policy)
  double grad_norm = 0;    // global norm before clipping
};

class DistributedTrainer {
 public:
  // `model` must be prepared. Errors: as TrainingSession and DistributedSession, plus bad
  // zero_stage / pipeline settings, and activation checkpointing (not supported here).
  static std::unique_ptr<DistributedTrainer> Create(const Graph& model, const DistributedTrainingOptions& options);
  virtual ~DistributedTrainer() = default;

  // What callers feed (model inputs, then labels) and fetch (model outputs, then the loss).
  virtual const Graph& interface_graph() const = 0;
  // One optimizer step on a global batch: forward, backward, gradient reduction, update. Every
  // input is fed whole (every rank of a Gloo job feeds the same global batch).
  virtual TrainStepResult TrainStep(const std::vector<std::pair<std::string, Tensor>>& feeds) = 0;
  // Inference under the same placement and parameters; `fetches` empty: every model output.
  virtual std::vector<std::pair<std::string, Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                          const std::vector<std::string>& fetches) = 0;
  virtual const std::vector<std::string>& parameter_names() const = 0;
  // The whole (logical) parameter. With Gloo this is a collective: every rank must call it.
  virtual Tensor GetParameter(const std::string& name) = 0;
  virtual int64_t step() const = 0;
  // Plans (and compiles) for a global batch of these input shapes without running anything, so
  // Explain answers before the first step (`oneflow plan --train`). Names must be the interface's
  // inputs; in-process only for the planned strategy's compilation to be free of collectives.
  virtual void Prepare(const std::map<std::string, Shape>& input_shapes) = 0;
  // The plan as text or JSON (per-op SBP, collectives, per-device memory including optimizer
  // state, estimated step time). The JSON document's "strategy" ("planned" or "pipeline") and
  // "estimated_step_seconds" keys are common to both; the rest is the strategy's own.
  virtual std::string Explain(bool json) const = 0;
};

// The strategies (Create picks one: pipeline_stages > 1 the pipeline, plan mode auto the auto
// trainer of auto_layouts.h, else planned).
std::unique_ptr<DistributedTrainer> CreatePlannedTrainer(const Graph& model, const DistributedTrainingOptions& options);
std::unique_ptr<DistributedTrainer> CreatePipelineTrainer(const Graph& model, const DistributedTrainingOptions& options);

}  // namespace oneflow::train
