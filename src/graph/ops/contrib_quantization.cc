// Op family: the com.microsoft quantized ops that ONNX Runtime's quantizers write
// (quantize_dynamic, quantize_static in its QOperator format), with the semantics of ONNX
// Runtime's contrib operator documentation. Kernels: kernels/cpu/matmul_integer.cc (the matmuls,
// on the shared 8-bit GEMM) and kernels/cpu/contrib_quantization.cc (the rest). Scales are
// float32 and per tensor unless said; zero points have the quantized tensor's type (int8 or uint8)
// and default to 0.
//   DynamicQuantizeMatMul(A, B, b_scale, b_zero_point?, bias?) -> Y      A float32, quantized
//       per tensor to uint8 as DynamicQuantizeLinear does; b per tensor or per column
//   MatMulIntegerToFloat(A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?) -> Y float32
//   QLinearAdd / QLinearMul(A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale,
//       C_zero_point?) -> C                                               numpy broadcasting
//   QLinearSigmoid / QLinearLeakyRelu(X, X_scale, X_zero_point?, Y_scale, Y_zero_point?) -> Y
//   QLinearGlobalAveragePool(X, x_scale, x_zero_point?, y_scale, y_zero_point?) -> Y
//       channels_last picks [N, spatial..., C] over [N, C, spatial...]
//   QLinearConcat(Y_scale, Y_zero_point, (X_i, X_i_scale, X_i_zero_point)...) -> Y   along axis
#include <string>
#include <vector>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/nn_infer.h"

namespace oneflow {
namespace {

bool Is8Bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

void RequireQuantized(InferContext& ctx, size_t i, const char* name) {
  if (!Is8Bit(ctx.input_dtype(i))) ctx.Error(name, " must be int8 or uint8, got ", DTypeName(ctx.input_dtype(i)));
}

// A float32 scale, a scalar unless `per_axis_ok` (then also a vector).
void RequireScale(InferContext& ctx, size_t i, const char* name, bool per_axis_ok = false) {
  const TensorType& t = ctx.input_type(i);
  if (t.dtype != DType::kFloat32) ctx.Error(name, " must be float32, got ", DTypeName(t.dtype));
  const bool scalar = !t.has_rank || t.rank() == 0 || (t.rank() == 1 && t.dims[0].known() && t.dims[0].value == 1);
  if (!scalar && !(per_axis_ok && t.rank() == 1))
    ctx.Error(name, " must be a scalar", per_axis_ok ? " or a vector" : "", ", got ", t.ToString());
}

// An optional zero point of `of`'s type.
void RequireZeroPoint(InferContext& ctx, size_t i, DType of, const char* name) {
  if (!ctx.has_input(i)) return;
  if (ctx.input_dtype(i) != of) ctx.Error(name, " must have type ", DTypeName(of), ", got ", DTypeName(ctx.input_dtype(i)));
  const TensorType& t = ctx.input_type(i);
  if (t.has_rank && t.rank() > 1) ctx.Error(name, " must be a scalar or a vector, got ", t.ToString());
}

// Y = A x B in float32 (numpy batching of inputs 0 and 1), with the optional float32 bias at
// input `bias`.
void SetFloatMatMulOutput(InferContext& ctx, size_t bias) {
  if (ctx.has_input(bias) && ctx.input_dtype(bias) != DType::kFloat32) ctx.Error("bias must be float32");
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(1);
  ctx.set_output(0, a.has_rank && b.has_rank ? TensorType::Of(DType::kFloat32, MatMulDims(ctx, a, b))
                                             : TensorType::UnknownShape(DType::kFloat32));
}

void InferDynamicQuantizeMatMul(InferContext& ctx) {
  if (ctx.input_dtype(0) != DType::kFloat32) ctx.Error("A must be float32, got ", DTypeName(ctx.input_dtype(0)));
  RequireQuantized(ctx, 1, "B");
  RequireScale(ctx, 2, "b_scale", true);
  RequireZeroPoint(ctx, 3, ctx.input_dtype(1), "b_zero_point");
  SetFloatMatMulOutput(ctx, 4);
}

void InferMatMulIntegerToFloat(InferContext& ctx) {
  RequireQuantized(ctx, 0, "A");
  RequireQuantized(ctx, 1, "B");
  RequireScale(ctx, 2, "a_scale");
  RequireScale(ctx, 3, "b_scale", true);
  RequireZeroPoint(ctx, 4, ctx.input_dtype(0), "a_zero_point");
  RequireZeroPoint(ctx, 5, ctx.input_dtype(1), "b_zero_point");
  SetFloatMatMulOutput(ctx, 6);
}

void InferQLinearBinary(InferContext& ctx) {
  RequireQuantized(ctx, 0, "A");
  const DType t = ctx.input_dtype(0);
  if (ctx.input_dtype(3) != t) ctx.Error("B must have A's type ", DTypeName(t), ", got ", DTypeName(ctx.input_dtype(3)));
  RequireScale(ctx, 1, "A_scale");
  RequireScale(ctx, 4, "B_scale");
  RequireScale(ctx, 6, "C_scale");
  RequireZeroPoint(ctx, 2, t, "A_zero_point");
  RequireZeroPoint(ctx, 5, t, "B_zero_point");
  RequireZeroPoint(ctx, 7, t, "C_zero_point");
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(3);
  ctx.set_output(0, a.has_rank && b.has_rank ? TensorType::Of(t, BroadcastDims(a.dims, b.dims, ctx))
                                             : TensorType::UnknownShape(t));
}

void InferQLinearUnary(InferContext& ctx) {
  RequireQuantized(ctx, 0, "X");
  RequireScale(ctx, 1, "X_scale");
  RequireZeroPoint(ctx, 2, ctx.input_dtype(0), "X_zero_point");
  RequireScale(ctx, 3, "Y_scale");
  RequireZeroPoint(ctx, 4, ctx.input_dtype(0), "Y_zero_point");
  ctx.set_output(0, ctx.input_type(0));
}

void InferQLinearGlobalAveragePool(InferContext& ctx) {
  InferQLinearUnary(ctx);
  const TensorType& x = ctx.input_type(0);
  if (!x.has_rank) return;
  if (x.rank() < 3) ctx.Error("X must be [N, C, spatial...] (or channels last), got ", x.ToString());
  const bool channels_last = ctx.attrs().GetInt("channels_last", 0) != 0;
  TensorType y = x;
  for (size_t i = 1; i < x.dims.size(); ++i)
    if (channels_last ? i + 1 < x.dims.size() : i >= 2) y.dims[i] = Dim::Known(1);
  ctx.set_output(0, y);
}

void InferQLinearConcat(InferContext& ctx) {
  RequireScale(ctx, 0, "Y_scale");
  RequireQuantized(ctx, 1, "Y_zero_point");
  const DType t = ctx.input_dtype(1);
  const size_t n = ctx.num_inputs();
  if (n < 5 || (n - 2) % 3 != 0)
    ctx.Error("takes Y_scale, Y_zero_point and then (tensor, scale, zero point) triples, got ", n, " inputs");
  std::vector<const TensorType*> parts;
  for (size_t i = 2; i < n; i += 3) {
    if (ctx.input_dtype(i) != t)
      ctx.Error("input ", i, " has type ", DTypeName(ctx.input_dtype(i)), "; Y_zero_point has ", DTypeName(t));
    RequireScale(ctx, i + 1, "an input's scale");
    if (ctx.input_dtype(i + 2) != t) ctx.Error("input ", i + 2, " (a zero point) must have type ", DTypeName(t));
    parts.push_back(&ctx.input_type(i));
  }
  for (const TensorType* p : parts)
    if (!p->has_rank) return ctx.set_output(0, TensorType::UnknownShape(t));
  const int64_t rank = static_cast<int64_t>(parts[0]->rank());
  int64_t axis = ctx.attrs().GetInt("axis");
  if (axis < -rank || axis >= rank) ctx.Error("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  std::vector<Dim> dims = parts[0]->dims;
  int64_t total = 0;
  bool total_known = true;
  for (const TensorType* p : parts) {
    if (static_cast<int64_t>(p->rank()) != rank) ctx.Error("inputs have different ranks");
    const Dim& d = p->dims[static_cast<size_t>(axis)];
    if (d.known()) total = CheckedAdd(total, d.value, ctx.node(), "the concatenated size");
    else total_known = false;
  }
  dims[static_cast<size_t>(axis)] = total_known ? Dim::Known(total) : Dim::Unknown();
  ctx.set_output(0, TensorType::Of(t, dims));
}

}  // namespace

void RegisterContribQuantizationOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kMsDynamicQuantizeMatMul).Since(1).Input("A").Input("B").Input("b_scale")
                 .OptionalInput("b_zero_point").OptionalInput("bias").Output("Y").Infer(InferDynamicQuantizeMatMul));
  r.Register(OpSchema(OpId::kMsMatMulIntegerToFloat).Since(1).Input("A").Input("B").Input("a_scale").Input("b_scale")
                 .OptionalInput("a_zero_point").OptionalInput("b_zero_point").OptionalInput("bias").Output("Y")
                 .Infer(InferMatMulIntegerToFloat));
  for (OpId op : {OpId::kMsQLinearAdd, OpId::kMsQLinearMul})
    r.Register(OpSchema(op).Since(1).Input("A").Input("A_scale").OptionalInput("A_zero_point").Input("B")
                   .Input("B_scale").OptionalInput("B_zero_point").Input("C_scale").OptionalInput("C_zero_point")
                   .Output("C").Infer(InferQLinearBinary));
  r.Register(OpSchema(OpId::kMsQLinearSigmoid).Since(1).Input("X").Input("X_scale").OptionalInput("X_zero_point")
                 .Input("Y_scale").OptionalInput("Y_zero_point").Output("Y").Infer(InferQLinearUnary));
  r.Register(OpSchema(OpId::kMsQLinearLeakyRelu).Since(1).Input("X").Input("X_scale").OptionalInput("X_zero_point")
                 .Input("Y_scale").OptionalInput("Y_zero_point").Output("Y").Attr("alpha", Attribute::Float(0.01f))
                 .Infer(InferQLinearUnary));
  r.Register(OpSchema(OpId::kMsQLinearGlobalAveragePool).Since(1).Input("X").Input("x_scale")
                 .OptionalInput("x_zero_point").Input("y_scale").OptionalInput("y_zero_point").Output("Y")
                 .Attr("channels_last", Attribute::Int(0)).Infer(InferQLinearGlobalAveragePool));
  r.Register(OpSchema(OpId::kMsQLinearConcat).Since(1).Input("Y_scale").Input("Y_zero_point").VariadicInput("inputs")
                 .Output("Y").RequiredAttr("axis", AttrKind::kInt).Infer(InferQLinearConcat));
}

}  // namespace oneflow
