// Op family: ai.oneflow gradient ops, emitted by gradient rules where no ONNX op expresses the
// backward computation well (broadcast reduction, activation derivatives, scatter-adds).
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

// Output 0: input `dtype_from`'s dtype with the shape held by the 1-D int64 input `shape_at`
// (known when that input is a constant; otherwise only the rank, from its length).
void InferFromShapeInput(InferContext& ctx, size_t dtype_from, size_t shape_at) {
  const DType dtype = ctx.input_dtype(dtype_from);
  const TensorType& st = ctx.input_type(shape_at);
  if (st.dtype != DType::kInt64 || (st.has_rank && st.rank() != 1))
    ctx.Error("the shape input must be a 1-D int64 tensor, got ", st.ToString());
  if (const Tensor* s = ctx.input_value(shape_at)) {
    Shape shape = s->ToInt64Vector();
    for (int64_t d : shape)
      if (d < 0) ctx.Error("negative dimension in shape ", ShapeToString(shape));
    ctx.set_output(0, TensorType::Of(dtype, shape));
  } else if (st.has_rank && st.dims[0].known()) {
    ctx.set_output(0, TensorType::Of(dtype, std::vector<Dim>(static_cast<size_t>(st.dims[0].value), Dim::Unknown())));
  } else {
    ctx.set_output(0, TensorType::UnknownShape(dtype));
  }
}

void InferReduceSumToShape(InferContext& ctx) { InferFromShapeInput(ctx, 0, 1); }
void InferScatterToShape(InferContext& ctx) { InferFromShapeInput(ctx, 0, 2); }
void InferSliceGrad(InferContext& ctx) { InferFromShapeInput(ctx, 0, 1); }

// dX = dY * f'(input 1): dY and the saved forward value share a shape.
void InferActivationGrad(InferContext& ctx) {
  CheckSameDType(ctx);
  ctx.set_output(0, ctx.input_type(0));
}

OpSchema ActivationGrad(const char* name, const char* saved) {
  return std::move(OpSchema(name, kOneflowDomain).Since(1).Input("dY").Input(saved).Output("dX")
                       .Infer(InferActivationGrad));
}

}  // namespace

void RegisterGradOps(OpRegistry& r) {
  r.Register(OpSchema(op::kReduceSumToShape, kOneflowDomain).Since(1)
                 .Doc("Sums X over the dims broadcasting expanded: Y has `shape`, X is a broadcast of it.")
                 .Input("X").ShapeInput("shape").Output("Y").Infer(InferReduceSumToShape));

  // The derivatives of the unary rows (<Op>Grad) are registered beside their ops (elementwise.cc).
  r.Register(ActivationGrad(op::kShrinkGrad, "X").Attr("bias", Attribute::Float(0.0f)).Attr("lambd", Attribute::Float(0.5f)));

  // Scatter-adds undoing gathers/slices into zeros of `shape`.
  r.Register(OpSchema(op::kGatherGrad, kOneflowDomain).Since(1)
                 .Doc("dX (of `shape`) = zeros with dY's slices added at `indices` along `axis` (Gather's adjoint).")
                 .Input("dY").Input("indices").ShapeInput("shape").Output("dX")
                 .Attr("axis", Attribute::Int(0)).Infer(InferScatterToShape));
  r.Register(OpSchema(op::kSliceGrad, kOneflowDomain).Since(1)
                 .Doc("dX (of `shape`) = zeros with dY written where Slice(starts, ends, axes, steps) read.")
                 .Input("dY").ShapeInput("shape").Input("starts").Input("ends").OptionalInput("axes").OptionalInput("steps")
                 .Output("dX").Infer(InferSliceGrad));
}

}  // namespace oneflow
