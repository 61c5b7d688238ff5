// Op family: quantization: schemas and shape inference.
//
// QuantizeLinear maps reals to integers, y = saturate(round_half_even(x / y_scale) + y_zero_point),
// and DequantizeLinear maps them back, y = (x - x_zero_point) * x_scale. Both take the scale and
// zero point per tensor (a scalar or a one-element vector), per axis (a vector along `axis`, from
// opset 13) or, from opset 21, per block (x's shape with `axis` divided into ceil(D / block_size)
// blocks). DynamicQuantizeLinear computes a per-tensor uint8 scale and zero point from x's range;
// MatMulInteger multiplies 8-bit matrices, zero points subtracted, into int32. These four are what
// onnxruntime's dynamic and QDQ quantizers write into the models they produce.
#include <climits>
#include <string>

#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/nn_infer.h"

namespace oneflow {
namespace {

// The integer types a quantized tensor may have at `opset` (int32 only on DequantizeLinear's side).
bool IsQuantizedDType(DType t, int opset) {
  switch (t) {
    case DType::kInt8:
    case DType::kUInt8:
      return true;
    case DType::kInt16:
    case DType::kUInt16:
      return opset >= 21;
    default:
      return false;
  }
}

const char* QuantizedTypesAt(int opset) { return opset >= 21 ? "int8, uint8, int16, uint16" : "int8, uint8"; }

bool IsScaleDType(DType t, int opset) {
  return t == DType::kFloat32 || (opset >= 19 && (t == DType::kFloat16 || t == DType::kBFloat16));
}

// The scale (input `scale_index`, named `scale_name`) and optional zero point (the input after it)
// of a (De)QuantizeLinear on `x`: per tensor, per axis or blocked, as the attributes say.
void CheckScaleShape(InferContext& ctx, const TensorType& x, int scale_index, const char* scale_name,
                     const char* zero_point_name) {
  const TensorType& scale = ctx.input_type(static_cast<size_t>(scale_index));
  const int64_t block = ctx.attrs().GetInt("block_size", 0);
  if (block < 0) ctx.Error("block_size must be >= 0, got ", block);
  if (!x.has_rank || !scale.has_rank) return;
  const int64_t r = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.attrs().GetInt("axis", 1);
  const bool per_tensor = scale.rank() == 0 || (scale.rank() == 1 && scale.dims[0].known() && scale.dims[0].value == 1);
  if (!per_tensor) {
    if (ctx.opset() < 13) ctx.Error(scale_name, " must be a scalar before opset 13, got ", scale.ToString());
    if (axis < -r || axis >= r) ctx.Error("axis ", axis, " is out of range for x of rank ", r);
    if (axis < 0) axis += r;
    const Dim& d = x.dims[static_cast<size_t>(axis)];
    if (block == 0) {
      if (scale.rank() != 1)
        ctx.Error(scale_name, " must be a scalar or a vector (per axis) without block_size, got ", scale.ToString());
      if (d.known() && scale.dims[0].known() && scale.dims[0].value != d.value)
        ctx.Error(scale_name, " has ", scale.dims[0].value, " entries for axis ", axis, " of size ", d.value);
    } else {
      if (static_cast<int64_t>(scale.rank()) != r)
        ctx.Error("a blocked ", scale_name, " has x's rank ", r, ", got ", scale.ToString());
      for (int64_t i = 0; i < r; ++i) {
        const Dim& xs = x.dims[static_cast<size_t>(i)];
        const Dim& ss = scale.dims[static_cast<size_t>(i)];
        if (!xs.known() || !ss.known()) continue;
        const int64_t want = i == axis ? (xs.value + block - 1) / block : xs.value;
        if (ss.value != want)
          ctx.Error(scale_name, " ", scale.ToString(), " does not block x ", x.ToString(), " by ", block, " along axis ",
                    axis, ": dim ", i, " should be ", want);
      }
    }
  }
  const size_t zp_index = static_cast<size_t>(scale_index) + 1;
  if (ctx.has_input(zp_index)) {
    const TensorType& zp = ctx.input_type(zp_index);
    if (zp.has_rank && zp.rank() != scale.rank())
      ctx.Error(zero_point_name, " ", zp.ToString(), " must have ", scale_name, "'s shape ", scale.ToString());
  }
}

void InferDequantizeLinear(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& scale = ctx.input_type(1);
  const int opset = ctx.opset();
  if (!IsQuantizedDType(x.dtype, opset) && x.dtype != DType::kInt32)
    ctx.Error("DequantizeLinear-", opset, " takes x of ", QuantizedTypesAt(opset), ", int32, got ", DTypeName(x.dtype));
  if (!IsScaleDType(scale.dtype, opset))
    ctx.Error("DequantizeLinear-", opset, " takes x_scale of float32", opset >= 19 ? ", float16, bfloat16" : "",
              ", got ", DTypeName(scale.dtype));
  if (ctx.has_input(2) && ctx.input_type(2).dtype != x.dtype)
    ctx.Error("x_zero_point must have x's type ", DTypeName(x.dtype), ", got ", DTypeName(ctx.input_type(2).dtype));
  const int64_t output_dtype = ctx.attrs().GetInt("output_dtype", 0);
  if (output_dtype != 0 && output_dtype != static_cast<int64_t>(scale.dtype))
    ctx.Error("output_dtype ", output_dtype, " differs from x_scale's type ", DTypeName(scale.dtype),
              " (only a float8e8m0 scale may differ, and that type is not supported)");
  CheckScaleShape(ctx, x, 1, "x_scale", "x_zero_point");
  ctx.set_output(0, x.has_rank ? TensorType::Of(scale.dtype, x.dims) : TensorType::UnknownShape(scale.dtype));
}

// The output type: the zero point's when given, else output_dtype (opset 21+), else uint8.
DType QuantizeOutputType(InferContext& ctx) {
  const int opset = ctx.opset();
  const int64_t output_dtype = ctx.attrs().GetInt("output_dtype", 0);
  DType y = DType::kUInt8;
  if (output_dtype != 0) {
    y = static_cast<DType>(output_dtype);
    if (!IsQuantizedDType(y, opset))
      ctx.Error("output_dtype ", output_dtype, " is not one of ", QuantizedTypesAt(opset),
                " (int4, uint4 and the float8 types are not supported)");
  }
  if (ctx.has_input(2)) {
    const DType zp = ctx.input_type(2).dtype;
    if (!IsQuantizedDType(zp, opset))
      ctx.Error("QuantizeLinear-", opset, " takes y_zero_point of ", QuantizedTypesAt(opset), ", got ", DTypeName(zp),
                zp == DType::kUndefined ? "" : " (int4, uint4 and the float8 types are not supported)");
    if (output_dtype != 0 && zp != y)
      ctx.Error("output_dtype ", DTypeName(y), " differs from y_zero_point's type ", DTypeName(zp));
    y = zp;
  }
  return y;
}

void InferQuantizeLinear(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& scale = ctx.input_type(1);
  const int opset = ctx.opset();
  const bool x_ok = x.dtype == DType::kFloat32 || x.dtype == DType::kInt32 ||
                    (opset >= 19 && (x.dtype == DType::kFloat16 || x.dtype == DType::kBFloat16));
  if (!x_ok)
    ctx.Error("QuantizeLinear-", opset, " takes x of float32, int32", opset >= 19 ? ", float16, bfloat16" : "",
              ", got ", DTypeName(x.dtype));
  if (!IsScaleDType(scale.dtype, opset))
    ctx.Error("QuantizeLinear-", opset, " takes y_scale of float32", opset >= 19 ? ", float16, bfloat16" : "",
              ", got ", DTypeName(scale.dtype));
  if (opset >= 19 && opset < 21 && x.dtype != DType::kInt32 && scale.dtype != x.dtype)
    ctx.Error("QuantizeLinear-", opset, " takes y_scale of x's type ", DTypeName(x.dtype), ", got ",
              DTypeName(scale.dtype));
  const int64_t precision = ctx.attrs().GetInt("precision", 0);
  if (precision != 0 && !IsScaleDType(static_cast<DType>(precision), opset))
    ctx.Error("precision ", precision, " is not float32, float16 or bfloat16");
  const DType y = QuantizeOutputType(ctx);
  CheckScaleShape(ctx, x, 1, "y_scale", "y_zero_point");
  ctx.set_output(0, x.has_rank ? TensorType::Of(y, x.dims) : TensorType::UnknownShape(y));
}

void InferDynamicQuantizeLinear(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (x.dtype != DType::kFloat32) ctx.Error("DynamicQuantizeLinear takes x of float32, got ", DTypeName(x.dtype));
  ctx.set_output(0, x.has_rank ? TensorType::Of(DType::kUInt8, x.dims) : TensorType::UnknownShape(DType::kUInt8));
  ctx.set_output(1, TensorType::Of(DType::kFloat32, std::vector<Dim>{}));
  ctx.set_output(2, TensorType::Of(DType::kUInt8, std::vector<Dim>{}));
}

void InferMatMulInteger(InferContext& ctx) {
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(1);
  auto is_8bit = [](DType t) { return t == DType::kInt8 || t == DType::kUInt8; };
  if (!is_8bit(a.dtype)) ctx.Error("A must be int8 or uint8, got ", DTypeName(a.dtype));
  if (!is_8bit(b.dtype)) ctx.Error("B must be int8 or uint8, got ", DTypeName(b.dtype));
  for (size_t i : {size_t{2}, size_t{3}}) {
    if (!ctx.has_input(i)) continue;
    const TensorType& zp = ctx.input_type(i);
    const TensorType& of = i == 2 ? a : b;
    const char* name = i == 2 ? "a_zero_point" : "b_zero_point";
    if (zp.dtype != of.dtype)
      ctx.Error(name, " must have ", i == 2 ? "A" : "B", "'s type ", DTypeName(of.dtype), ", got ", DTypeName(zp.dtype));
    if (zp.has_rank && zp.rank() > 1)
      ctx.Error(name, " must be a scalar or a vector (per ", i == 2 ? "row of A" : "column of B", "), got ",
                zp.ToString());
  }
  if (!a.has_rank || !b.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(DType::kInt32));
    return;
  }
  ctx.set_output(0, TensorType::Of(DType::kInt32, MatMulDims(ctx, a, b)));
}

// QLinearMatMul: a, b 8-bit with their scales and zero points; y quantized by y_scale/y_zero_point.
// Scales are per tensor, or a_scale per row of a and b_scale per column of b (1-D); opset 21 lets
// the scales be float16/bfloat16 too.
void InferQLinearMatMul(InferContext& ctx) {
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(3);
  auto is_8bit = [](DType t) { return t == DType::kInt8 || t == DType::kUInt8; };
  const char* names[] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"};
  for (size_t i : {size_t{0}, size_t{3}, size_t{7}})
    if (!is_8bit(ctx.input_dtype(i)))
      ctx.Error(names[i], " must be int8 or uint8, got ", DTypeName(ctx.input_dtype(i)),
                IsFloatDType(ctx.input_dtype(i)) ? "" : " (the float8 types are not supported)");
  for (size_t i : {size_t{2}, size_t{5}})
    if (ctx.input_dtype(i) != ctx.input_dtype(i - 2))
      ctx.Error(names[i], " must have ", names[i - 2], "'s type ", DTypeName(ctx.input_dtype(i - 2)), ", got ",
                DTypeName(ctx.input_dtype(i)));
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}}) {
    if (!IsScaleDType(ctx.input_dtype(i), ctx.opset()))
      ctx.Error(names[i], " must be float32", ctx.opset() >= 21 ? ", float16 or bfloat16" : "", ", got ",
                DTypeName(ctx.input_dtype(i)));
    const TensorType& t = ctx.input_type(i);
    if (t.has_rank && t.rank() > 1) ctx.Error(names[i], " must be a scalar or a 1-D vector, got ", t.ToString());
  }
  const DType y = ctx.input_dtype(7);
  if (!a.has_rank || !b.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(y));
    return;
  }
  ctx.set_output(0, TensorType::Of(y, MatMulDims(ctx, a, b)));
}

OpSchema DequantizeLinear(int since) {
  return std::move(OpSchema(op::kDequantizeLinear)
                       .Since(since)
                       .Input("x")
                       .Input("x_scale")
                       .OptionalInput("x_zero_point")
                       .Output("y")
                       .Attr("axis", Attribute::Int(1))
                       .Infer(InferDequantizeLinear));
}

OpSchema QuantizeLinear(int since) {
  return std::move(OpSchema(op::kQuantizeLinear)
                       .Since(since)
                       .Input("x")
                       .Input("y_scale")
                       .OptionalInput("y_zero_point")
                       .Output("y")
                       .Attr("axis", Attribute::Int(1))
                       .Infer(InferQuantizeLinear));
}

}  // namespace

void RegisterQuantizationOps(OpRegistry& r) {
  r.Register(DequantizeLinear(10).Until(20));
  r.Register(DequantizeLinear(21).Until(22).Attr("block_size", Attribute::Int(0)));
  r.Register(DequantizeLinear(23).Attr("block_size", Attribute::Int(0)).Attr("output_dtype", Attribute::Int(0)));
  // saturate matters only for the float8 outputs (not supported): integer outputs always saturate.
  r.Register(QuantizeLinear(10).Until(18));
  r.Register(QuantizeLinear(19).Until(20).Attr("saturate", Attribute::Int(1)));
  r.Register(QuantizeLinear(21).Until(22).Attr("saturate", Attribute::Int(1)).Attr("block_size", Attribute::Int(0))
                 .Attr("output_dtype", Attribute::Int(0)));
  r.Register(QuantizeLinear(23).Attr("saturate", Attribute::Int(1)).Attr("block_size", Attribute::Int(0))
                 .Attr("output_dtype", Attribute::Int(0)).Attr("precision", Attribute::Int(0)));
  r.Register(OpSchema(op::kDynamicQuantizeLinear).Since(11).Input("x").Output("y").Output("y_scale")
                 .Output("y_zero_point").Infer(InferDynamicQuantizeLinear));
  for (int since : {10, 21})
    r.Register(OpSchema(op::kQLinearMatMul).Since(since).Until(since == 10 ? 20 : INT_MAX).Input("a")
                   .Input("a_scale").Input("a_zero_point").Input("b").Input("b_scale").Input("b_zero_point")
                   .Input("y_scale").Input("y_zero_point").Output("y").Infer(InferQLinearMatMul));
  r.Register(OpSchema(op::kMatMulInteger).Since(10).Input("A").Input("B").OptionalInput("a_zero_point")
                 .OptionalInput("b_zero_point").Output("Y").Infer(InferMatMulInteger));
}

}  // namespace oneflow
