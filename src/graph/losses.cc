// AppendLoss: builds cross-entropy, MSE and L1 losses from ops onto a model graph.
#include "graph/losses.h"

#include "graph/op_schema.h"
#include "graph/ops/binary_ops.h"
#include "graph/prepare.h"

namespace oneflow {
namespace {

AttrMap KeepDims0() {
  AttrMap a;
  a.set("keepdims", Attribute::Int(0));
  return a;
}

}  // namespace

LossKind ParseLossKind(const std::string& name) {
  if (name == "softmax_cross_entropy") return LossKind::kSoftmaxCrossEntropy;
  if (name == "mse") return LossKind::kMeanSquaredError;
  if (name == "l1") return LossKind::kL1;
  Fail(ErrorCode::kInvalidArgument, "unknown loss '", name, "' (expected softmax_cross_entropy, mse or l1)");
}

LossReduction ParseLossReduction(const std::string& name) {
  if (name == "mean") return LossReduction::kMean;
  if (name == "sum") return LossReduction::kSum;
  Fail(ErrorCode::kInvalidArgument, "unknown loss reduction '", name, "' (expected mean or sum)");
}

std::string AppendLoss(Graph& graph, LossKind kind, const std::string& prediction, const std::string& labels,
                       LossReduction reduction) {
  Graph g = graph;  // untouched on failure
  const int pred = g.FindValue(prediction);
  OF_REQUIRE(pred != kNoValue, "the loss prediction '", prediction, "' is not a value of the graph");
  const TensorType pt = g.values[static_cast<size_t>(pred)].type;
  OF_REQUIRE(pt.dtype == DType::kFloat32 || pt.dtype == DType::kFloat64, "the loss prediction '", prediction,
             "' must be float32 or float64, it is ", pt.ToString());
  OF_REQUIRE(g.FindValue(labels) == kNoValue, "the labels name '", labels, "' is already used in the model");
  const std::string red = reduction == LossReduction::kMean ? "mean" : "sum";
  const std::string loss = g.UniqueName(prediction + "_" + (kind == LossKind::kSoftmaxCrossEntropy ? "sce" : kind == LossKind::kL1 ? "l1" : "mse") + "_loss");

  int out;
  if (kind == LossKind::kSoftmaxCrossEntropy) {
    OF_REQUIRE(pt.has_rank && pt.rank() >= 2, "softmax cross-entropy needs logits of shape (N, C, ...), '",
               prediction, "' is ", pt.ToString());
    std::vector<Dim> dims = pt.dims;
    dims.erase(dims.begin() + 1);
    const int lab = g.AddValue(labels, TensorType::Of(DType::kInt64, dims));
    g.inputs.push_back(lab);
    AttrMap a;
    a.set("reduction", Attribute::String(red));
    out = AppendTypedNode(g, op::kSoftmaxCrossEntropyLoss, {pred, lab}, loss, a);
  } else {
    const int lab = g.AddValue(labels, pt);
    g.inputs.push_back(lab);
    const int diff = AppendTypedNode(g, binary::Sub::kName, {pred, lab}, g.UniqueName(loss + "/diff"));
    const int elem = kind == LossKind::kL1 ? AppendTypedNode(g, op::kAbs, {diff}, g.UniqueName(loss + "/abs"))
                                           : AppendTypedNode(g, binary::Mul::kName, {diff, diff}, g.UniqueName(loss + "/square"));
    out = AppendTypedNode(g, reduction == LossReduction::kMean ? op::kReduceMean : op::kReduceSum, {elem}, loss, KeepDims0());
  }
  g.outputs.push_back(out);
  graph = std::move(g);
  return loss;
}

}  // namespace oneflow
