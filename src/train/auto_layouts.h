// The auto mode of DistributedTrainer (docs/distributed.md): the layouts it considers, planned
// (one plan of the whole training graph: data parallel, tensor parallel per placement axis, 2-D
// data x tensor views) and pipeline (stages x data parallel, micro-batch counts), each estimated
// under the planner's cost model for the first batch's shapes; the cheapest within the memory
// budget is built and trained.
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "train/distributed_trainer.h"

namespace oneflow::train {

struct LayoutCandidate {
  std::string label;
  int pipeline_stages = 1;  // > 1: a pipeline layout of this many stages and `micro_batches`
  int micro_batches = 1;
  double step_seconds = std::numeric_limits<double>::infinity();  // estimated, with the optimizer update
  double memory_bytes = 0;  // per device (the busiest): parameters, gradients, optimizer state, activations
  std::string error;        // non-empty: could not be planned (why)
};

// Whether a candidate was planned and fits `budget_bytes` per device (0: unlimited).
bool Admissible(const LayoutCandidate& c, int64_t budget_bytes);
// The index of the cheapest admissible candidate (ties: the first); -1 if none.
int CheapestCandidate(const std::vector<LayoutCandidate>& c, int64_t budget_bytes);
// "label: 8.54 ms, 21.3 MiB" per candidate, separated by `separator`.
std::string DescribeCandidates(const std::vector<LayoutCandidate>& c, int64_t budget_bytes, const std::string& separator);
std::string CandidatesJson(const std::vector<LayoutCandidate>& c, int64_t budget_bytes);

// The planned layouts of a trainer made by CreatePlannedTrainer with plan mode auto, estimated
// for a global batch of `input_shapes` (planning only: nothing compiled, no collectives); then one
// adopted by index before its first step.
std::vector<LayoutCandidate> PlannedLayoutCandidates(DistributedTrainer& planned,
                                                     const std::map<std::string, Shape>& input_shapes);
void AdoptPlannedLayout(DistributedTrainer& planned, size_t index, const std::map<std::string, Shape>& input_shapes,
                        const std::string& report);

// The pipeline layouts of a 1-D placement: every stage count S >= 2 dividing its devices (data
// parallel over size / S inside a stage) with 2, 4 or 8 micro-batches that divide the batch into
// blocks of at least one row per device; none when the options exclude a pipeline (ZeRO, a 2-D
// placement). Models the forward graph cannot be cut into S stages get an error entry.
std::vector<LayoutCandidate> PipelineLayoutCandidates(const Graph& model, const DistributedTrainingOptions& options,
                                                      const std::map<std::string, Shape>& input_shapes);

// Plan mode auto: decides at the first TrainStep or Prepare among both kinds, then trains with
// the chosen strategy (a pipeline layout builds the pipeline trainer with its stages and
// micro-batches, data parallel inside the stages).
std::unique_ptr<DistributedTrainer> CreateAutoTrainer(const Graph& model, const DistributedTrainingOptions& options);

}  // namespace oneflow::train
