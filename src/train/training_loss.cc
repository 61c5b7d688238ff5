// Losses appended to a model for training, composed of ONNX ops that have gradient rules:
//   MSE  mean((logits - labels)^2)         L1  mean(|logits - labels|)       (over all elements)
//   softmax cross entropy  -mean_n sum_c onehot(labels)_nc * logsoftmax(logits)_nc   (over samples)
// With loss_sum the means become sums. Labels: int64 class ids [N, d...] for cross entropy
// (logits [N, C, d...]), a tensor shaped like the logits for MSE/L1.
#include "graph/grad_context.h"
#include "graph/passes/passes.h"
#include "train/training_impl.h"

namespace oneflow::train {

namespace {

class LossBuilder {
 public:
  explicit LossBuilder(Graph& g) : g_(g) {
    auto it = g.opset_imports.find("");
    opset_ = it != g.opset_imports.end() ? it->second : 17;
    OF_CHECK(opset_ >= 13, kUnsupported, "appending a loss needs a model of opset >= 13 (this one is ", opset_, ")");
  }

  int Emit(const std::string& op, const std::vector<int>& inputs, AttrMap attrs = {}, const std::string& out = "") {
    Node n;
    n.op_type = op;
    n.opset = opset_;
    n.name = g_.UniqueName("loss/" + op);
    n.inputs = inputs;
    n.outputs.push_back(g_.AddValue(out.empty() ? g_.UniqueName("loss/" + op) : out));
    n.attrs = std::move(attrs);
    ResolveNodeSchema(n);
    InferNodeTypes(g_, n);
    g_.nodes.push_back(std::move(n));
    return g_.nodes.back().outputs[0];
  }

  int Ints(const std::vector<int64_t>& v) {
    Tensor t(DType::kInt64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
    return g_.AddConstant(g_.UniqueName("loss/const"), t);
  }

  int Floats(const std::vector<float>& v, DType dtype) {
    OF_CHECK(dtype == DType::kFloat32, kUnsupported, "appended losses need float32 logits, got ", DTypeName(dtype));
    Tensor t(DType::kFloat32, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
    return g_.AddConstant(g_.UniqueName("loss/const"), t);
  }

 private:
  Graph& g_;
  int opset_;
};

}  // namespace

int AppendTrainingLoss(Graph& g, const TrainingOptions& o) {
  const int logits = g.FindValue(o.logits_output);
  const TensorType lt = g.values[static_cast<size_t>(logits)].type;
  OF_REQUIRE(lt.dtype == DType::kFloat32, "logits output '", o.logits_output, "' is ", DTypeName(lt.dtype),
             "; appended losses need float32");
  LossBuilder b(g);
  const std::string loss_name = g.FindValue("loss") == kNoValue ? "loss" : g.UniqueName("loss");
  const char* reduce = o.loss_sum ? "ReduceSum" : "ReduceMean";
  int loss = kNoValue;
  if (o.appended_loss == AppendedLoss::kSoftmaxCrossEntropy) {
    OF_REQUIRE(lt.has_rank && lt.rank() >= 2, "softmax cross entropy needs logits of rank >= 2 ([N, C, ...]); '",
               o.logits_output, "' is ", lt.ToString());
    OF_REQUIRE(lt.dims[1].known(), "softmax cross entropy needs a static class count (dim 1 of '", o.logits_output,
               "' is ", lt.ToString(), ")");
    TensorType labels_type;
    labels_type.dtype = DType::kInt64;
    labels_type.has_rank = true;
    for (size_t i = 0; i < lt.dims.size(); ++i)
      if (i != 1) labels_type.dims.push_back(lt.dims[i]);
    const int labels = g.AddValue(o.labels_input, labels_type);
    g.inputs.push_back(labels);
    const int logp = b.Emit("LogSoftmax", {logits}, MakeAttrs({{"axis", Attribute::Int(1)}}));
    const int onehot = b.Emit("OneHot", {labels, b.Ints({lt.dims[1].value}), b.Floats({0.0f, 1.0f}, lt.dtype)},
                              MakeAttrs({{"axis", Attribute::Int(1)}}));
    const int picked = b.Emit("Mul", {logp, onehot});
    const int per_sample = b.Emit("ReduceSum", {picked, b.Ints({1})}, MakeAttrs({{"keepdims", Attribute::Int(0)}}));
    const int total = b.Emit(reduce, {per_sample}, MakeAttrs({{"keepdims", Attribute::Int(0)}}));
    loss = b.Emit("Neg", {total}, {}, loss_name);
  } else {
    const int labels = g.AddValue(o.labels_input, lt);
    g.inputs.push_back(labels);
    const int diff = b.Emit("Sub", {logits, labels});
    const int per_element = o.appended_loss == AppendedLoss::kMse ? b.Emit("Mul", {diff, diff}) : b.Emit("Abs", {diff});
    loss = b.Emit(reduce, {per_element}, MakeAttrs({{"keepdims", Attribute::Int(0)}}), loss_name);
  }
  g.outputs.push_back(loss);
  return loss;
}

}  // namespace oneflow::train
