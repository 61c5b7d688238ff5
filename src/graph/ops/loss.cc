// Op family: losses. SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (ONNX, opset 13
// semantics) with their gradient rules, and the ai.oneflow ops those rules emit.
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/grad_rules.h"

namespace oneflow {
namespace {

// Scores/input (N, C, D1..Dk), labels (N, D1..Dk) int32/int64, optional weights (C).
void CheckLossInputs(InferContext& ctx, size_t weights_at) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& t = ctx.input_type(1);
  if (t.dtype != DType::kInt32 && t.dtype != DType::kInt64)
    ctx.Error("labels must be int32 or int64, got ", DTypeName(t.dtype));
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64)
    ctx.Error("the input must be float32 or float64, got ", DTypeName(x.dtype));
  if (x.has_rank && x.rank() < 2) ctx.Error("the input must have shape (N, C, ...), got ", x.ToString());
  if (x.has_rank && t.has_rank) {
    if (t.rank() != x.rank() - 1)
      ctx.Error("labels ", t.ToString(), " must have the input's shape ", x.ToString(), " without its class dim");
    for (int64_t d = 0; d < t.rank(); ++d) {
      const Dim& a = t.dims[static_cast<size_t>(d)];
      const Dim& b = x.dims[static_cast<size_t>(d == 0 ? 0 : d + 1)];
      if (a.known() && b.known() && a.value != b.value)
        ctx.Error("labels ", t.ToString(), " do not match the input ", x.ToString());
    }
  }
  if (ctx.has_input(weights_at)) {
    const TensorType& w = ctx.input_type(weights_at);
    if (w.dtype != x.dtype) ctx.Error("weights must have the input's dtype");
    if (w.has_rank && w.rank() != 1) ctx.Error("weights must be 1-D (C), got ", w.ToString());
  }
  const std::string& red = ctx.attrs().GetString("reduction");
  if (red != "none" && red != "sum" && red != "mean")
    ctx.Error("reduction must be 'none', 'sum' or 'mean', got '", red, "'");
}

TensorType LossOutputType(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (ctx.attrs().GetString("reduction") != "none") return TensorType::Of(dt, Shape{});
  TensorType t = ctx.input_type(1);
  t.dtype = dt;
  return t;
}

void InferSce(InferContext& ctx) {
  CheckLossInputs(ctx, 2);
  ctx.set_output(0, LossOutputType(ctx));
  ctx.set_output(1, ctx.input_type(0));
}

void InferNll(InferContext& ctx) {
  CheckLossInputs(ctx, 2);
  ctx.set_output(0, LossOutputType(ctx));
}

// SoftmaxCrossEntropyLossGrad(dloss, scores, labels, weights?) -> dscores: scores' type.
void InferSceGrad(InferContext& ctx) { ctx.set_output(0, ctx.input_type(1)); }

// NegativeLogLikelihoodLossGrad(dloss, labels, shape, weights?) -> dinput of `shape`.
void InferNllGrad(InferContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  if (const Tensor* s = ctx.input_value(2)) ctx.set_output(0, TensorType::Of(dt, s->ToInt64Vector()));
  else ctx.set_output(0, TensorType::UnknownShape(dt));
}

AttrMap LossAttrs(const GradContext& c) {
  AttrMap a;
  a.set("reduction", Attribute::String(c.attrs().GetString("reduction")));
  if (c.attrs().has("ignore_index")) a.set("ignore_index", Attribute::Int(c.attrs().GetInt("ignore_index")));
  return a;
}

void NoGradientForLabelsAndWeights(GradContext& c) {
  if (c.needs_input_grad(2)) c.NoGradient(2, "class weights are not differentiable");
}

// d scores = g w (softmax - onehot(label)) from the loss output, plus, when the log_prob output
// is used too, its LogSoftmax gradient dlp - softmax * sum_c dlp.
void GradSce(GradContext& c) {
  NoGradientForLabelsAndWeights(c);
  std::string total;
  if (c.has_output_grad(0)) {
    std::vector<std::string> in{c.output_grad(0), c.input(0), c.input(1)};
    if (c.has_input(2)) in.push_back(c.input(2));
    total = c.EmitOneflow(op::kSoftmaxCrossEntropyLossGrad, in, LossAttrs(c));
  }
  if (c.has_output_grad(1)) {
    const std::string& dlp = c.output_grad(1);
    const std::string sum = c.Emit1(op::kReduceSum, {dlp, c.Ints({1})}, MakeAttrs({{"keepdims", Attribute::Int(1)}}));
    const std::string part = c.Sub(dlp, c.Mul(c.Emit1(op::kExp, {c.output(1)}), sum));
    total = total.empty() ? part : c.Add(total, part);
  }
  c.SetInputGrad(0, total);
}

void GradNll(GradContext& c) {
  NoGradientForLabelsAndWeights(c);
  std::vector<std::string> in{c.output_grad(0), c.input(1), c.ShapeOf(c.input(0))};
  if (c.has_input(2)) in.push_back(c.input(2));
  c.SetInputGrad(0, c.EmitOneflow(op::kNegativeLogLikelihoodLossGrad, in, LossAttrs(c)));
}

}  // namespace

void RegisterLossOps(OpRegistry& r) {
  r.Register(OpSchema(op::kSoftmaxCrossEntropyLoss).Since(13).Input("scores").Input("labels").OptionalInput("weights")
                 .Output("output").OptionalOutput("log_prob")
                 .OptionalAttr("ignore_index", AttrKind::kInt).Attr("reduction", Attribute::String("mean"))
                 .Infer(InferSce).Grad(GradSce));
  r.Register(OpSchema(op::kNegativeLogLikelihoodLoss).Since(13).Input("input").Input("target").OptionalInput("weight")
                 .Output("loss")
                 .OptionalAttr("ignore_index", AttrKind::kInt).Attr("reduction", Attribute::String("mean"))
                 .Infer(InferNll).Grad(GradNll));

  r.Register(OpSchema(op::kSoftmaxCrossEntropyLossGrad, kOneflowDomain).Since(1)
                 .Doc("d scores of SoftmaxCrossEntropyLoss(scores, labels, weights) given d loss (same attributes).")
                 .Input("dloss").Input("scores").Input("labels").OptionalInput("weights").Output("dscores")
                 .OptionalAttr("ignore_index", AttrKind::kInt).Attr("reduction", Attribute::String("mean"))
                 .Infer(InferSceGrad));
  r.Register(OpSchema(op::kNegativeLogLikelihoodLossGrad, kOneflowDomain).Since(1)
                 .Doc("d input of NegativeLogLikelihoodLoss(input of `shape`, target, weight) given d loss.")
                 .Input("dloss").Input("target").Input("shape").OptionalInput("weight").Output("dinput")
                 .OptionalAttr("ignore_index", AttrKind::kInt).Attr("reduction", Attribute::String("mean"))
                 .Infer(InferNllGrad));
}

}  // namespace oneflow
