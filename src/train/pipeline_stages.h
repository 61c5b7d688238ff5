// Pipeline stages: the forward part of a training graph cut at single-value separators into
// consecutive stages balanced by estimated flops, each with its own forward, backward and eval
// graphs. Used by the pipeline trainer (train/pipeline_trainer.cc, docs/pipeline.md).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "train/training_graph.h"

namespace oneflow::train {

// Backward of a stage is seeded through a surrogate objective sum(output * output_grad), whose
// gradient with respect to `output` is `output_grad`: on inner stages the gradient received from
// the next stage, on the last stage (output = the loss) the micro-batch block's loss weight.
struct PipelineStage {
  // inputs: data inputs it reads, `input` (not on stage 0), parameters;
  // outputs: `output`, the model outputs it computes, then the values backward reads.
  Graph forward;
  // inputs: saved values, data inputs, `input`, `output_grad`, parameters (those it reads);
  // outputs: the gradients of `params` in order, then (not on stage 0) the gradient of `input`.
  Graph backward;
  // inputs: data inputs it reads, `input`, parameters; outputs: `output` (not on the last stage),
  // then the model outputs it computes.
  Graph eval;
  std::string input;        // the boundary value received from the previous stage ("" on stage 0)
  std::string output;       // the boundary value sent to the next stage; the loss on the last stage
  std::string output_grad;  // backward's input holding d(objective)/d(output)
  std::vector<std::string> params;        // trained parameters it reads, in TrainingGraph order
  std::vector<std::string> user_outputs;  // model outputs it computes
  std::vector<std::string> saved;         // forward outputs backward reads
  size_t forward_nodes = 0;               // nodes of the training graph's forward part it holds
  double flops_estimate = 0;              // forward flops with symbolic dims taken as 1 (balancing)
};

// Cuts `t`'s forward nodes into `stages` consecutive stages at float32 values that alone separate
// the forward graph (SingleValueSeparators), choosing the cuts whose prefix flops are closest to
// even shares. Errors (kInvalidArgument): fewer separators than cuts needed (the message names the
// candidates), a loss that is not float32. A parameter may be read by several stages (tied
// weights, a shared scale): each lists it, and the trainer sums their gradients.
std::vector<PipelineStage> CutIntoStages(const TrainingGraph& t, int stages);

// A trained parameter and the stages that read it (empty: none; it lives on stage 0).
struct PipelineParam {
  std::string name;
  Shape shape;
  std::vector<int> stages;
};
// Every parameter of `t` in TrainingGraph order, with the stages reading it.
std::vector<PipelineParam> StageParams(const TrainingGraph& t, const std::vector<PipelineStage>& stages);

}  // namespace oneflow::train
