// Op family: normalization (schemas, attribute defaults, opset ranges, shape inference).
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/nn_grad_rules.h"

namespace oneflow {

namespace {

void RequireFloat(const InferContext& ctx, DType t) {
  if (!IsFloatDType(t)) ctx.Error("expects a floating-point input, got ", DTypeName(t));
}

// Softmax, LogSoftmax, Hardmax (opset 13: one axis, default -1).
void InferSoftmaxLike(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloat(ctx, x.dtype);
  if (x.has_rank) NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  ctx.set_output(0, x);
}

void InferBatchNorm(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloat(ctx, x.dtype);
  if (x.has_rank && x.rank() < 2) ctx.Error("X must have rank >= 2, got ", x.rank());
  for (size_t i = 1; i < 5; ++i) {
    const TensorType& p = ctx.input_type(i);
    if (p.has_rank && p.rank() != 1) ctx.Error("parameter input ", i, " must be 1-D");
    if (p.has_rank && x.has_rank && p.dims[0].known() && x.dims[1].known() && p.dims[0].value != x.dims[1].value)
      ctx.Error("parameter input ", i, " has ", p.dims[0].value, " elements, expected C = ", x.dims[1].value);
  }
  ctx.set_output(0, x);
  // Training mode (opset 14+) updates the running statistics from the batch's; in inference mode
  // a model that wires them anyway gets the given statistics through.
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input_type(i + 2));
}

// LayerNormalization / RMSNormalization: Mean and InvStdDev have X's shape with the normalized
// axes set to 1, in the stash type.
void InferLayerNormLike(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloat(ctx, x.dtype);
  const DType stash = ctx.attrs().GetInt("stash_type") == 1 ? DType::kFloat32 : x.dtype;
  ctx.set_output(0, x);
  if (ctx.num_outputs() < 2) return;
  TensorType stats = TensorType::UnknownShape(stash);
  if (x.has_rank) {
    const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
    stats = TensorType::Of(stash, x.dims);
    for (int64_t i = axis; i < x.rank(); ++i) stats.dims[i] = Dim::Known(1);
  }
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, stats);
}

// InstanceNormalization / GroupNormalization: X is [N, C, ...].
void InferChannelNorm(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloat(ctx, x.dtype);
  if (x.has_rank && x.rank() < 2) ctx.Error("X must have rank >= 2, got ", x.rank());
  if (ctx.attrs().has("num_groups")) {
    const int64_t g = ctx.attrs().GetInt("num_groups");
    if (g <= 0) ctx.Error("num_groups must be positive, got ", g);
    if (x.has_rank && x.dims[1].known() && x.dims[1].value % g != 0)
      ctx.Error("channels ", x.dims[1].value, " are not divisible by num_groups ", g);
  }
  ctx.set_output(0, x);
}

void InferLpNorm(InferContext& ctx) {
  const int64_t p = ctx.attrs().GetInt("p");
  if (p != 1 && p != 2) ctx.Error("p must be 1 or 2, got ", p);
  InferSoftmaxLike(ctx);
}

void InferMvn(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloat(ctx, x.dtype);
  if (x.has_rank)
    for (int64_t a : ctx.attrs().GetInts("axes")) NormalizeAxis(a, x.rank(), "axes entry");
  ctx.set_output(0, x);
}

}  // namespace

void RegisterNormalizationOps(OpRegistry& r) {
  for (const char* op : {op::kSoftmax, op::kLogSoftmax, op::kHardmax}) {
    const std::string name = op;
    // Hardmax is piecewise constant: no gradient rule (autodiff names it if a path needs one).
    const GradFn grad = name == op::kSoftmax ? GradFn(GradSoftmax) : name == op::kLogSoftmax ? GradFn(GradLogSoftmax) : GradFn();
    r.Register(OpSchema(op).Since(13).Input("input").Output("output").Attr("axis", Attribute::Int(-1))
                   .Infer(InferSoftmaxLike).Grad(grad));
  }
  // Opset 13 still uses BatchNormalization-9, whose inference semantics are the same as 14/15
  // (training_mode only exists from 14; it defaults to 0).
  r.Register(OpSchema(op::kBatchNormalization).Since(13).Input("X").Input("scale").Input("B").Input("input_mean")
                 .Input("input_var").Output("Y").OptionalOutput("running_mean").OptionalOutput("running_var")
                 .Attr("epsilon", Attribute::Float(1e-5f)).Attr("momentum", Attribute::Float(0.9f))
                 .Attr("training_mode", Attribute::Int(0)).Infer(InferBatchNorm).Grad(GradBatchNormalization));
  r.Register(OpSchema(op::kLayerNormalization).Since(17).Input("X").Input("Scale").OptionalInput("B").Output("Y")
                 .OptionalOutput("Mean").OptionalOutput("InvStdDev").Attr("axis", Attribute::Int(-1))
                 .Attr("epsilon", Attribute::Float(1e-5f)).Attr("stash_type", Attribute::Int(1))
                 .Infer(InferLayerNormLike).Grad(GradLayerNormalization));
  r.Register(OpSchema(op::kRMSNormalization).Since(23).Input("X").Input("scale").Output("Y")
                 .Attr("axis", Attribute::Int(-1)).Attr("epsilon", Attribute::Float(1e-5f))
                 .Attr("stash_type", Attribute::Int(1)).Infer(InferLayerNormLike));
  r.Register(OpSchema(op::kInstanceNormalization).Since(13).Input("input").Input("scale").Input("B").Output("output")
                 .Attr("epsilon", Attribute::Float(1e-5f)).Infer(InferChannelNorm)
                 .Grad(GradInstanceNormalization));
  // Opset 18 takes scale/bias per group, opset 21 per channel; the kernel branches on the opset.
  r.Register(OpSchema(op::kGroupNormalization).Since(18).Input("X").Input("scale").Input("bias").Output("Y")
                 .RequiredAttr("num_groups", AttrKind::kInt).Attr("epsilon", Attribute::Float(1e-5f))
                 .Attr("stash_type", Attribute::Int(1)).Infer(InferChannelNorm));
  r.Register(OpSchema(op::kLpNormalization).Since(13).Input("input").Output("output")
                 .Attr("axis", Attribute::Int(-1)).Attr("p", Attribute::Int(2)).Infer(InferLpNorm));
  r.Register(OpSchema(op::kMeanVarianceNormalization).Since(13).Input("X").Output("Y")
                 .Attr("axes", Attribute::Ints({0, 2, 3})).Infer(InferMvn));
}

}  // namespace oneflow
