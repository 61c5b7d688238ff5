// BuildTrainingGraph: parameters become inputs, the loss is found or appended, gradients are built.
#include "train/training_graph.h"

#include "engine/session.h"
#include "graph/losses.h"
#include "graph/ops/binary_ops.h"
#include "train/mixed_precision.h"
#include "train/param_select.h"

namespace oneflow::train {

namespace {

int FindOutput(const Graph& g, const std::string& name, const char* what) {
  for (int v : g.outputs)
    if (g.values[static_cast<size_t>(v)].name == name) return v;
  std::string names;
  for (int v : g.outputs) names += (names.empty() ? "" : ", ") + g.values[static_cast<size_t>(v)].name;
  Fail(ErrorCode::kInvalidArgument, what, " '", name, "' is not an output of the model (outputs: ", names, ")");
}

}  // namespace

TrainingGraph BuildTrainingGraph(const Graph& model, const TrainingOptions& options) {
  TrainingGraph t;
  Graph& g = t.graph;
  g = model;

  // Trained parameters become graph inputs: live tensors the optimizer updates in place, never
  // constants that passes could fold or kernels pre-pack.
  t.params = SelectParameters(g, options.frozen);
  OF_REQUIRE(!t.params.empty(), "the model has no trainable parameter (no float initializer, or all are frozen)");
  t.data_inputs = g.inputs;
  std::vector<std::string> wrt;
  for (int v : t.params) {
    Value& val = g.values[static_cast<size_t>(v)];
    t.initial.push_back(val.constant);
    val.constant = Tensor();
    g.inputs.push_back(v);
    wrt.push_back(val.name);
  }
  t.user_outputs = g.outputs;
  // Before the loss is appended, so the loss itself stays f32.
  if (options.precision != Precision::kFloat32)
    t.low_precision_nodes =
        ApplyMixedPrecision(g, options.precision == Precision::kBFloat16 ? DType::kBFloat16 : DType::kFloat16);

  if (options.appended_loss == AppendedLoss::kNone) {
    t.loss = FindOutput(g, options.loss_output, "loss_output");
  } else {
    FindOutput(g, options.logits_output, "logits_output");
    const LossKind kind = options.appended_loss == AppendedLoss::kMse  ? LossKind::kMeanSquaredError
                          : options.appended_loss == AppendedLoss::kL1 ? LossKind::kL1
                                                                       : LossKind::kSoftmaxCrossEntropy;
    t.loss = g.FindValue(AppendLoss(g, kind, options.logits_output, options.labels_input,
                                    options.loss_sum ? LossReduction::kSum : LossReduction::kMean));
    t.data_inputs.push_back(g.FindValue(options.labels_input));
    // A predictable name for callers: "loss" unless the model already uses it.
    if (g.FindValue("loss") == kNoValue) {
      g.values[static_cast<size_t>(t.loss)].name = "loss";
      g.Reindex();
    }
  }

  std::string seed = t.name(t.loss);
  if (options.precision == Precision::kFloat16 && options.loss_scale.enabled) {
    // Backward starts from loss * scale, so small f16 gradients do not flush to zero.
    t.loss_scale = g.AddValue(g.UniqueName("loss_scale"), TensorType::Of(DType::kFloat32, Shape{}));
    g.inputs.push_back(t.loss_scale);
    Node mul;
    mul.name = g.UniqueName("scaled_loss");
    mul.op_type = binary::Mul::kName;
    mul.opset = g.opset_imports.count("") ? g.opset_imports.at("") : 17;
    const int scaled = g.AddValue(mul.name, TensorType::Of(DType::kFloat32, Shape{}));
    mul.inputs = {t.loss, t.loss_scale};
    mul.outputs = {scaled};
    g.nodes.push_back(std::move(mul));
    PrepareGraph(g);
    seed = t.name(scaled);
  }
  t.info = BuildGradients(g, seed, wrt);
  for (const std::string& w : wrt) t.gradients.push_back(g.FindValue(t.info.gradients.at(w)));

  for (int v : t.data_inputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    t.interface.inputs.push_back(t.interface.AddValue(val.name, val.type));
  }
  for (int v : t.user_outputs) {
    const Value& val = g.values[static_cast<size_t>(v)];
    t.interface.outputs.push_back(t.interface.AddValue(val.name, val.type));
  }
  if (t.interface.FindValue(t.name(t.loss)) == kNoValue)
    t.interface.outputs.push_back(t.interface.AddValue(t.name(t.loss), g.values[static_cast<size_t>(t.loss)].type));
  return t;
}

}  // namespace oneflow::train
