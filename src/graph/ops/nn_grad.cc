// Op family: nn gradients (domain ai.oneflow): the backward ops that the gradient rules of Conv,
// ConvTranspose, the pools, Softmax/LogSoftmax and the normalizations emit. Each carries its
// forward op's attributes so geometry (pads, auto_pad, ceil_mode, axis) is resolved by the same
// helpers as the forward. Where the backward needs only an input's shape it takes that shape as a
// 1-D int64 tensor (the output of Shape, folded when static) instead of the tensor itself, so the
// activation is not kept alive for the backward pass just for its shape.
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"

namespace oneflow {

namespace {

// The type described by a shape input: dims from its value when known, else only the rank (from
// the shape tensor's own static length) or nothing.
TensorType TypeFromShapeInput(const InferContext& ctx, size_t i, DType dtype) {
  const TensorType& st = ctx.input_type(i);
  if (st.dtype != DType::kInt64) ctx.Error("input ", i, " must be an int64 shape, got ", DTypeName(st.dtype));
  if (st.has_rank && st.rank() != 1) ctx.Error("input ", i, " must be a 1-D shape, got ", st.ToString());
  if (const Tensor* v = ctx.input_value(i)) {
    Shape s(v->data<int64_t>(), v->data<int64_t>() + v->numel());
    for (int64_t d : s)
      if (d < 0) ctx.Error("input ", i, " holds a negative dim ", d);
    return TensorType::Of(dtype, s);
  }
  if (st.has_rank && st.dims[0].known())
    return TensorType::Of(dtype, std::vector<Dim>(static_cast<size_t>(st.dims[0].value), Dim::Unknown()));
  return TensorType::UnknownShape(dtype);
}

void RequireFloatGrad(const InferContext& ctx) {
  const DType t = ctx.input_dtype(0);
  if (!IsFloatDType(t)) ctx.Error("expects a floating-point gradient, got ", DTypeName(t));
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && IsFloatDType(ctx.input_dtype(i)) && ctx.input_dtype(i) != t)
      ctx.Error("input ", i, " must have the gradient's dtype ", DTypeName(t), ", got ", DTypeName(ctx.input_dtype(i)));
}

// dX of a spatial op from its shape input (input `shape_index`), checked to have rank >= 3.
void InferFromShapeInput(InferContext& ctx, size_t shape_index, size_t out = 0) {
  RequireFloatGrad(ctx);
  TensorType t = TypeFromShapeInput(ctx, shape_index, ctx.input_dtype(0));
  if (t.has_rank && t.rank() < 3) ctx.Error("the forward input must have rank >= 3 (N, C, spatial...), got ", t.rank());
  ctx.set_output(out, t);
}

// ConvGradData(dY, W, X_shape) / ConvTransposeGradData: dX has X's shape.
void InferConvGradData(InferContext& ctx) { InferFromShapeInput(ctx, 2); }

// ConvGradFilter(X, dY, W_shape) / ConvTransposeGradFilter: dW has W's shape.
void InferConvGradFilter(InferContext& ctx) {
  RequireFloatGrad(ctx);
  ctx.set_output(0, TypeFromShapeInput(ctx, 2, ctx.input_dtype(0)));
}

// ConvGradBias(dY): one value per channel (axis 1).
void InferConvGradBias(InferContext& ctx) {
  RequireFloatGrad(ctx);
  const TensorType& dy = ctx.input_type(0);
  if (dy.has_rank && dy.rank() < 2) ctx.Error("dY must have rank >= 2, got ", dy.rank());
  ctx.set_output(0, TensorType::Of(dy.dtype, std::vector<Dim>{dy.has_rank ? dy.dims[1] : Dim::Unknown()}));
}

// dX takes the type of input `like` (a forward input passed whole).
void InferLikeInput(InferContext& ctx, size_t like) {
  RequireFloatGrad(ctx);
  const TensorType& x = ctx.input_type(like);
  ctx.set_output(0, TensorType{ctx.input_dtype(0), x.has_rank, x.dims});
}

void InferSoftmaxGrad(InferContext& ctx) {
  RequireFloatGrad(ctx);
  const TensorType& y = ctx.input_type(1);
  if (y.has_rank) NormalizeAxis(ctx.attrs().GetInt("axis"), y.rank());
  ctx.set_output(0, y);
}

// Normalization grads: dX like X (input 1), then dScale/dBias like the scale (input 2).
void InferNormGrad(InferContext& ctx) {
  RequireFloatGrad(ctx);
  const TensorType& x = ctx.input_type(1);
  if (x.has_rank && ctx.attrs().has("axis")) NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  ctx.set_output(0, x);
  const TensorType& s = ctx.input_type(2);
  for (size_t i = 1; i < ctx.num_outputs(); ++i) ctx.set_output(i, TensorType{x.dtype, s.has_rank, s.dims});
}

OpSchema& ConvAttrs(OpSchema& s) {
  return s.Attr("auto_pad", Attribute::String("NOTSET")).Attr("group", Attribute::Int(1))
      .OptionalAttr("dilations", AttrKind::kInts).OptionalAttr("kernel_shape", AttrKind::kInts)
      .OptionalAttr("pads", AttrKind::kInts).OptionalAttr("strides", AttrKind::kInts);
}

OpSchema& ConvTransposeAttrs(OpSchema& s) {
  return ConvAttrs(s).OptionalAttr("output_padding", AttrKind::kInts).OptionalAttr("output_shape", AttrKind::kInts);
}

OpSchema& PoolAttrs(OpSchema& s) {
  return s.Attr("auto_pad", Attribute::String("NOTSET")).Attr("ceil_mode", Attribute::Int(0))
      .OptionalAttr("dilations", AttrKind::kInts).RequiredAttr("kernel_shape", AttrKind::kInts)
      .OptionalAttr("pads", AttrKind::kInts).OptionalAttr("strides", AttrKind::kInts);
}

OpSchema GradOp(const char* name) { return OpSchema(name, kOneflowDomain).Since(1); }

}  // namespace

void RegisterNnGradOps(OpRegistry& r) {
  r.Register(ConvAttrs(GradOp(op::kConvGradData).Input("dY").Input("W").ShapeInput("X_shape").Output("dX")
                           .Doc("dX of Conv(X, W) for the upstream gradient dY"))
                 .Infer(InferConvGradData));
  r.Register(ConvAttrs(GradOp(op::kConvGradFilter).Input("X").Input("dY").ShapeInput("W_shape").Output("dW")
                           .Doc("dW of Conv(X, W) for the upstream gradient dY"))
                 .Infer(InferConvGradFilter));
  r.Register(GradOp(op::kConvGradBias).Input("dY").Output("dB")
                 .Doc("dB of Conv/ConvTranspose: dY summed over every axis but 1").Infer(InferConvGradBias));
  r.Register(ConvTransposeAttrs(GradOp(op::kConvTransposeGradData).Input("dY").Input("W").ShapeInput("X_shape").Output("dX")
                                    .Doc("dX of ConvTranspose(X, W): the Conv of dY by W"))
                 .Infer(InferConvGradData));
  r.Register(ConvTransposeAttrs(GradOp(op::kConvTransposeGradFilter).Input("X").Input("dY").ShapeInput("W_shape")
                                    .Output("dW").Doc("dW of ConvTranspose(X, W)"))
                 .Infer(InferConvGradFilter));
  // Indices (MaxPool's second output, storage_order 0) skips recomputing the argmax from X.
  r.Register(PoolAttrs(GradOp(op::kMaxPoolGrad).Input("dY").Input("X").OptionalInput("Indices").Output("dX")
                           .Attr("storage_order", Attribute::Int(0)))
                 .Infer([](InferContext& ctx) { InferLikeInput(ctx, 1); }));
  r.Register(PoolAttrs(GradOp(op::kAveragePoolGrad).Input("dY").ShapeInput("X_shape").Output("dX")
                           .Attr("count_include_pad", Attribute::Int(0)))
                 .Infer([](InferContext& ctx) { InferFromShapeInput(ctx, 1); }));
  r.Register(GradOp(op::kGlobalAveragePoolGrad).Input("dY").ShapeInput("X_shape").Output("dX")
                 .Infer([](InferContext& ctx) { InferFromShapeInput(ctx, 1); }));
  r.Register(GradOp(op::kGlobalMaxPoolGrad).Input("dY").Input("X").Output("dX")
                 .Infer([](InferContext& ctx) { InferLikeInput(ctx, 1); }));
  // Softmax-family grads from the forward output Y (axis: opset-13 semantics, one axis).
  for (const char* op : {op::kSoftmaxGrad, op::kLogSoftmaxGrad})
    r.Register(GradOp(op).Input("dY").Input("Y").Output("dX").Attr("axis", Attribute::Int(-1))
                   .Infer(InferSoftmaxGrad));
  // Mean/InvStdDev are the forward's optional outputs; when absent the kernel recomputes them.
  r.Register(GradOp(op::kLayerNormalizationGrad).Input("dY").Input("X").Input("Scale").OptionalInput("Mean")
                 .OptionalInput("InvStdDev").Output("dX").OptionalOutput("dScale").OptionalOutput("dB")
                 .Attr("axis", Attribute::Int(-1)).Attr("epsilon", Attribute::Float(1e-5f)).Infer(InferNormGrad));
  // With mean and var given the forward ran in inference mode (fixed statistics); without them
  // in training mode, and the kernel recomputes the batch statistics from X.
  r.Register(GradOp(op::kBatchNormalizationGrad).Input("dY").Input("X").Input("scale").OptionalInput("mean")
                 .OptionalInput("var").Output("dX").OptionalOutput("dscale").OptionalOutput("dB")
                 .Attr("epsilon", Attribute::Float(1e-5f)).Infer(InferNormGrad));
  r.Register(GradOp(op::kInstanceNormalizationGrad).Input("dY").Input("X").Input("scale").Output("dX")
                 .OptionalOutput("dscale").OptionalOutput("dB").Attr("epsilon", Attribute::Float(1e-5f))
                 .Infer(InferNormGrad));
}

}  // namespace oneflow
