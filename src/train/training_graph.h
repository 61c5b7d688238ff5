// The training graph of a model: parameters turned into graph inputs, the loss (the model's or an
// appended one) and the backward nodes computing every parameter's gradient. Shared by the
// single-device TrainingSession and the distributed trainers, which compile it differently.
#pragma once

#include <string>
#include <vector>

#include "base/tensor.h"
#include "graph/autodiff.h"
#include "graph/graph.h"
#include "train/training_session.h"

namespace oneflow::train {

struct TrainingGraph {
  Graph graph;                     // forward + loss + backward; parameters are graph inputs
  std::vector<int> data_inputs;    // fed by the caller: the model's inputs, then appended labels
  std::vector<int> params;         // trained parameters (graph inputs), in value order
  std::vector<Tensor> initial;     // per parameter: its initializer (the model's tensor, not a copy)
  std::vector<int> user_outputs;   // the model's outputs
  int loss = kNoValue;             // the scalar loss ("loss" when appended and the name is free)
  std::vector<int> gradients;      // per parameter, same order: its gradient (a graph output)
  GradientInfo info;               // what BuildGradients reported
  int loss_scale = kNoValue;       // f16 loss scaling: the scalar f32 input the loss is multiplied by
                                   // before differentiation (fed at backward, not by the caller)
  size_t low_precision_nodes = 0;  // nodes the mixed-precision pass moved to bf16/f16
  Graph interface;                 // what callers feed and fetch: data inputs; user outputs + loss

  const std::string& name(int v) const { return graph.values[static_cast<size_t>(v)].name; }
};

// `model` must be prepared (graph/prepare.h; loaded models are); only the loss, frozen, loss-shaping and precision fields
// of `options` are read. Errors as TrainingSession's constructor: kInvalidArgument for a missing
// loss or logits output or no trainable parameter, kUnsupported naming the op when the loss does
// not differentiate back to the parameters.
TrainingGraph BuildTrainingGraph(const Graph& model, const TrainingOptions& options);

}  // namespace oneflow::train
