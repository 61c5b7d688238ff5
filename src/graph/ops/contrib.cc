// Op family: ONNX Runtime's contrib ops that its transformer optimizer writes into the models it
// produces, with the semantics of ONNX Runtime's contrib operator documentation. Kernels:
// kernels/cpu/contrib.cc (FastGelu, BiasGelu, FusedMatMul) and kernels/cpu/normalization.cc (the
// layer norms, which share LayerNormalization's row kernel). docs/contrib-ops.md lists them.
//   com.microsoft FastGelu(X, bias?)        GELU, tanh form, of X + bias
//   com.microsoft BiasGelu(A, B)            GELU, erf form, of A + B
//   com.microsoft FusedMatMul(A, B)         alpha * op(A) op(B), numpy batching (transA/transB)
//   com.microsoft SkipLayerNormalization(input, skip, gamma, beta?, bias?)
//       -> output, mean?, inv_std_var?, input_skip_bias_sum?: LayerNorm over the last axis of
//          input + skip + bias
//   com.microsoft SkipSimplifiedLayerNormalization(input, skip, gamma, bias?): the RMS form
//   SimplifiedLayerNormalization(X, scale) -> Y, inv_std_var? (ONNX Runtime registers it in the
//       ONNX domain): RMS normalization over [axis, rank)
#include <string>
#include <vector>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/nn_infer.h"

namespace oneflow {
namespace {

void RequireFloatInput(InferContext& ctx, size_t i, const char* name) {
  if (!IsFloatDType(ctx.input_dtype(i))) ctx.Error(name, " must be a float tensor, got ", DTypeName(ctx.input_dtype(i)));
}

// The per-row statistics of a normalization over [axis, rank): X's shape with those axes 1, f32.
TensorType RowStatsType(const TensorType& x, int64_t axis) {
  if (!x.has_rank) return TensorType::UnknownShape(DType::kFloat32);
  TensorType t = TensorType::Of(DType::kFloat32, x.dims);
  if (axis < 0) axis += x.rank();
  for (int64_t i = axis; i < x.rank(); ++i) t.dims[static_cast<size_t>(i)] = Dim::Known(1);
  return t;
}

void InferSkipNorm(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloatInput(ctx, 0, "input");
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != x.dtype)
      ctx.Error("input ", i, " has type ", DTypeName(ctx.input_dtype(i)), "; input 0 has ", DTypeName(x.dtype));
  if (x.has_rank && x.rank() < 2) ctx.Error("input must have rank >= 2 ([batch, ..., hidden]), got ", x.ToString());
  ctx.set_output(0, x);
  if (ctx.num_outputs() > 1) ctx.set_output(1, RowStatsType(x, -1));
  if (ctx.num_outputs() > 2) ctx.set_output(2, RowStatsType(x, -1));
  if (ctx.num_outputs() > 3) ctx.set_output(3, x);
}

void InferSimplifiedLayerNorm(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloatInput(ctx, 0, "X");
  const int64_t axis = ctx.attrs().GetInt("axis");
  if (x.has_rank && (axis < -x.rank() || axis >= x.rank()))
    ctx.Error("axis ", axis, " is out of range for X of rank ", x.rank());
  ctx.set_output(0, x);
  if (ctx.num_outputs() > 1) ctx.set_output(1, RowStatsType(x, axis));
}

void InferBiasedGelu(InferContext& ctx) {
  RequireFloatInput(ctx, 0, "X");
  if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
    if (ctx.input_dtype(1) != ctx.input_dtype(0))
      ctx.Error("the bias must have X's type ", DTypeName(ctx.input_dtype(0)), ", got ", DTypeName(ctx.input_dtype(1)));
    InferBroadcast(ctx);
    return;
  }
  ctx.set_output(0, ctx.input_type(0));
}

// FusedMatMul: MatMul's inference on op(A) and op(B) (the last two dims swapped where transposed).
void InferContribFusedMatMul(InferContext& ctx) {
  if (ctx.attrs().GetInt("transBatchA", 0) != 0 || ctx.attrs().GetInt("transBatchB", 0) != 0)
    Fail(ErrorCode::kUnsupported, ctx.node(), ": transBatchA / transBatchB are not supported");
  TensorType a = ctx.input_type(0), b = ctx.input_type(1);
  RequireFloatInput(ctx, 0, "A");
  if (b.dtype != a.dtype) ctx.Error("B must have A's type ", DTypeName(a.dtype), ", got ", DTypeName(b.dtype));
  auto swap_last = [&](TensorType& t, const char* attr, const char* name) {
    if (ctx.attrs().GetInt(attr, 0) == 0 || !t.has_rank) return;
    if (t.rank() < 2) ctx.Error(attr, " needs ", name, " of rank >= 2, got ", t.ToString());
    std::swap(t.dims[t.rank() - 1], t.dims[t.rank() - 2]);
  };
  swap_last(a, "transA", "A");
  swap_last(b, "transB", "B");
  InferContext inner(ctx.attrs(), ctx.opset(), ctx.node(), 1);
  inner.AddInput(&a, nullptr);
  inner.AddInput(&b, nullptr);
  InferMatMul(inner);
  ctx.set_output(0, inner.output(0));
}

}  // namespace

void RegisterContribOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kMsFastGelu).Since(1).Input("X").OptionalInput("bias").Output("Y")
                 .Infer(InferBiasedGelu));
  r.Register(OpSchema(OpId::kMsBiasGelu).Since(1).Input("A").Input("B").Output("C")
                 .Infer(InferBiasedGelu));
  r.Register(OpSchema(OpId::kMsFusedMatMul).Since(1).Input("A").Input("B").Output("Y")
                 .Attr("alpha", Attribute::Float(1.0f)).Attr("transA", Attribute::Int(0))
                 .Attr("transB", Attribute::Int(0)).Attr("transBatchA", Attribute::Int(0))
                 .Attr("transBatchB", Attribute::Int(0)).Infer(InferContribFusedMatMul));
  r.Register(OpSchema(OpId::kMsSkipLayerNormalization).Since(1).Input("input").Input("skip")
                 .Input("gamma").OptionalInput("beta").OptionalInput("bias").Output("output").OptionalOutput("mean")
                 .OptionalOutput("inv_std_var").OptionalOutput("input_skip_bias_sum")
                 .Attr("epsilon", Attribute::Float(1e-12f)).Infer(InferSkipNorm));
  r.Register(OpSchema(OpId::kMsSkipSimplifiedLayerNormalization).Since(1).Input("input")
                 .Input("skip").Input("gamma").OptionalInput("bias").Output("output").OptionalOutput("mean")
                 .OptionalOutput("inv_std_var").OptionalOutput("input_skip_bias_sum")
                 .Attr("epsilon", Attribute::Float(1e-12f)).Infer(InferSkipNorm));
  r.Register(OpSchema(OpId::kSimplifiedLayerNormalization).Since(1).Input("X").Input("scale").Output("Y")
                 .OptionalOutput("inv_std_var").Attr("axis", Attribute::Int(-1))
                 .Attr("epsilon", Attribute::Float(1e-5f)).Attr("stash_type", Attribute::Int(1))
                 .Infer(InferSimplifiedLayerNorm));
}

}  // namespace oneflow
