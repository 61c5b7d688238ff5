// Losses appended to a model graph (training "a loss appended through session options"): a labels
// graph input plus the nodes computing a scalar loss from one of the model's outputs.
#pragma once

#include <string>

#include "graph/graph.h"

namespace oneflow {

enum class LossKind {
  kSoftmaxCrossEntropy,  // prediction = logits (N, C, D...), labels int64 (N, D...): SoftmaxCrossEntropyLoss
  kMeanSquaredError,     // prediction and labels of one shape and dtype: reduce((p - y)^2)
  kL1,                   // reduce(|p - y|)
};
enum class LossReduction { kMean, kSum };

// "softmax_cross_entropy" / "mse" / "l1" and "mean" / "sum"; kInvalidArgument listing the choices.
LossKind ParseLossKind(const std::string& name);
LossReduction ParseLossReduction(const std::string& name);

// Appends to a prepared graph a new graph input `labels` (typed from `prediction`'s static type:
// the class dim removed and int64 for cross-entropy, the same type otherwise) and the nodes
// computing the scalar loss, which becomes a graph output. Returns the loss value's name.
// Fails with kInvalidArgument when `prediction` is not a float value of the graph (rank >= 2 for
// cross-entropy) or `labels` names an existing value; `g` is unchanged then.
std::string AppendLoss(Graph& g, LossKind kind, const std::string& prediction, const std::string& labels,
                       LossReduction reduction = LossReduction::kMean);

}  // namespace oneflow
