// Estimated training step time and memory under the planner's cost model (plan/plan.h's
// CostModel), for the two strategies of DistributedTrainer, so that the auto mode compares them
// on one scale (docs/distributed.md, docs/pipeline.md):
//  * the optimizer update, common to both: a memory-bound pass over the elements a device updates;
//  * the pipeline: each stage's forward and backward graphs costed op by op as the planner costs
//    them (on the one device that runs a micro-batch block), the boundary sends over the link,
//    the 1F1B schedule, the stage's data-parallel gradient all-reduce (the planner's boxing cost).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "train/pipeline_stages.h"

namespace oneflow::train {

// Seconds to update `elements` f32 parameters with `states` f32 optimizer states per element:
// each pass reads the parameter, its gradient and the states and writes the parameter and the
// states back, at the cost model's memory bandwidth.
double OptimizerUpdateSeconds(double elements, int states, const CostModel& cost);

struct PipelineLayout {
  int data_parallel = 1;  // devices per stage
  int micro_batches = 1;
  int optimizer_states = 0;  // f32 tensors per parameter element (SGD with momentum 1, Adam 2)
  CostModel cost;
};

struct StageEstimate {
  double flops = 0;                // forward, one micro-batch block
  double forward_seconds = 0;      // per micro-batch block, the planner's per-op costs
  double backward_seconds = 0;
  double send_seconds = 0;         // per micro-batch: its activation forward, its input's gradient back
  double boundary_bytes = 0;       // the activation it sends per micro-batch block
  double all_reduce_seconds = 0;   // gradients over the stage's data-parallel group (and tied stages)
  double optimizer_seconds = 0;
  double param_bytes = 0, state_bytes = 0;  // per device: its parameters (gradients as many), optimizer state
  double saved_bytes = 0;          // activations kept for backward, per micro-batch block
  double transient_bytes = 0;      // peak of live values inside one forward or backward run
  int in_flight = 0;               // micro-batches whose activations a device holds at the peak
  double memory_bytes = 0;         // per device: parameters + gradients + state + activations
};

struct PipelineEstimate {
  std::vector<StageEstimate> stages;
  double slot_seconds = 0;      // the slowest stage's forward + backward + sends per micro-batch
  double compute_seconds = 0;   // that stage's forward + backward over the step's micro-batches
  double send_seconds = 0;      // its sends over the step's micro-batches
  double reduce_seconds = 0;    // the slowest stage's gradient all-reduce + optimizer update
  double step_seconds = 0;      // (micro_batches + stages - 1) slots + reduce_seconds
  double bubble_fraction = 0;   // (stages - 1) / (micro_batches + stages - 1)
  double memory_bytes = 0;      // the busiest device's
};

// `block_inputs`: the data inputs' shapes for one micro-batch block (one device's share of one
// micro-batch); empty: symbolic dims taken as 1. Errors: as MakePlan (shapes that do not infer).
PipelineEstimate EstimatePipeline(const std::vector<PipelineStage>& stages, const std::vector<PipelineParam>& params,
                                  const std::map<std::string, Shape>& block_inputs, const PipelineLayout& layout);

}  // namespace oneflow::train
