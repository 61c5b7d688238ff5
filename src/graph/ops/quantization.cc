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

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/conv_shape.h"
#include "graph/ops/nn_infer.h"

namespace oneflow {
namespace {

// The types a quantized tensor may have at `opset` (int32 only on DequantizeLinear's side): 8-bit
// integers from 10, the float8 types from 19, 16- and 4-bit integers from 21, float4e2m1 from 23,
// 2-bit integers from 25.
bool IsQuantizedDType(DType t, int opset) {
  switch (t) {
    case DType::kInt8:
    case DType::kUInt8:
      return true;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
      return opset >= 19;
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt4:
    case DType::kUInt4:
      return opset >= 21;
    case DType::kFloat4E2M1:
      return opset >= 23;
    case DType::kInt2:
    case DType::kUInt2:
      return opset >= 25;
    default:
      return false;
  }
}

std::string QuantizedTypesAt(int opset) {
  std::string s = "int8, uint8";
  if (opset >= 19) s += ", float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz";
  if (opset >= 21) s += ", int16, uint16, int4, uint4";
  if (opset >= 23) s += ", float4e2m1";
  if (opset >= 25) s += ", int2, uint2";
  return s;
}

bool IsScaleDType(DType t, int opset) {
  return t == DType::kFloat32 || (opset >= 19 && (t == DType::kFloat16 || t == DType::kBFloat16));
}

// The scale (input `scale_index`, named `scale_name`) and optional zero point (the input after it)
// of a (De)QuantizeLinear on `x`: per tensor, per axis or blocked, as the attributes say.
void CheckScaleShape(InferContext& ctx, const TensorType& x, int scale_index, const char* scale_name,
                     const char* zero_point_name) {
  const TensorType& scale = ctx.input_type(static_cast<size_t>(scale_index));
  const int64_t block = ctx.attrs().GetInt("block_size", 0);
  // Bounded like the other window attributes: the kernels size their blocks from it.
  if (block < 0 || block > kMaxWindowAttr) ctx.Error("block_size must be in [0, 2^31], got ", block);
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
        // ceil(xs / block); xs + block - 1 could overflow a declared dim near INT64_MAX.
        const int64_t want = i == axis ? xs.value / block + (xs.value % block != 0 ? 1 : 0) : xs.value;
        if (ss.value != want)
          ctx.Error(scale_name, " ", scale.ToString(), " does not block x ", x.ToString(), " by ", block, " along axis ",
                    axis, ": dim ", i, " should be ", want);
      }
    }
  }
  const size_t zp_index = static_cast<size_t>(scale_index) + 1;
  if (ctx.has_input(zp_index)) {
    const TensorType& zp = ctx.input_type(zp_index);
    auto single = [](const TensorType& t) {  // a scalar or [1]: both mean per tensor
      return t.has_rank && (t.rank() == 0 || (t.rank() == 1 && t.dims[0].known() && t.dims[0].value == 1));
    };
    if (zp.has_rank && zp.rank() != scale.rank() && !(single(zp) && single(scale)))
      ctx.Error(zero_point_name, " ", zp.ToString(), " must have ", scale_name, "'s shape ", scale.ToString());
  }
}

void InferDequantizeLinear(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& scale = ctx.input_type(1);
  const int opset = ctx.opset();
  if (!IsQuantizedDType(x.dtype, opset) && x.dtype != DType::kInt32)
    ctx.Error("DequantizeLinear-", opset, " takes x of ", QuantizedTypesAt(opset), ", int32, got ", DTypeName(x.dtype));
  if (!IsScaleDType(scale.dtype, opset) && !(opset >= 23 && scale.dtype == DType::kFloat8E8M0))
    ctx.Error("DequantizeLinear-", opset, " takes x_scale of float32", opset >= 19 ? ", float16, bfloat16" : "",
              opset >= 23 ? ", float8e8m0" : "", ", got ", DTypeName(scale.dtype));
  if (ctx.has_input(2) && ctx.input_type(2).dtype != x.dtype)
    ctx.Error("x_zero_point must have x's type ", DTypeName(x.dtype), ", got ", DTypeName(ctx.input_type(2).dtype));
  // A float8e8m0 scale (microscaling, opset 23+) needs output_dtype to name the float output;
  // any other scale's type is the output's.
  const int64_t output_dtype = ctx.attrs().GetInt("output_dtype", 0);
  DType y = scale.dtype;
  if (scale.dtype == DType::kFloat8E8M0) {
    y = static_cast<DType>(output_dtype);
    if (!IsScaleDType(y, opset))
      ctx.Error("a float8e8m0 x_scale needs output_dtype float32, float16 or bfloat16, got ", output_dtype);
  } else if (output_dtype != 0 && output_dtype != static_cast<int64_t>(scale.dtype)) {
    ctx.Error("output_dtype ", output_dtype, " differs from x_scale's type ", DTypeName(scale.dtype),
              " (only a float8e8m0 scale may differ)");
  }
  CheckScaleShape(ctx, x, 1, "x_scale", "x_zero_point");
  ctx.set_output(0, x.has_rank ? TensorType::Of(y, x.dims) : TensorType::UnknownShape(y));
}

// The output type: the zero point's when given, else output_dtype (opset 21+), else uint8.
DType QuantizeOutputType(InferContext& ctx) {
  const int opset = ctx.opset();
  const int64_t output_dtype = ctx.attrs().GetInt("output_dtype", 0);
  DType y = DType::kUInt8;
  if (output_dtype != 0) {
    y = static_cast<DType>(output_dtype);
    if (!IsQuantizedDType(y, opset))
      ctx.Error("output_dtype ", output_dtype, " is not one of ", QuantizedTypesAt(opset), " at opset ", opset);
  }
  if (ctx.has_input(2)) {
    const DType zp = ctx.input_type(2).dtype;
    if (!IsQuantizedDType(zp, opset))
      ctx.Error("QuantizeLinear-", opset, " takes y_zero_point of ", QuantizedTypesAt(opset), ", got ", DTypeName(zp));
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

int64_t DimValue(const Dim& d) { return d.known() ? d.value : -1; }

// ConvInteger (X at 0, W at 1) and QLinearConv (X at 0, W at 3): Conv's geometry on 8-bit X and
// W, the output int32 (ConvInteger) or y_zero_point's type (QLinearConv).
void InferQuantizedConv(InferContext& ctx, size_t w_index, DType y) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& w = ctx.input_type(w_index);
  auto is_8bit = [](DType t) { return t == DType::kInt8 || t == DType::kUInt8; };
  if (!is_8bit(x.dtype)) ctx.Error("x must be int8 or uint8, got ", DTypeName(x.dtype));
  if (!is_8bit(w.dtype)) ctx.Error("w must be int8 or uint8, got ", DTypeName(w.dtype));
  if (!x.has_rank || !w.has_rank) return ctx.set_output(0, TensorType::UnknownShape(y));
  if (x.rank() < 3 || x.rank() > 5 || x.rank() != w.rank())
    ctx.Error("x ", x.ToString(), " and w ", w.ToString(), " must be [N, C, spatial...] and [M, C/group, kernel...] ",
              "with 1 to 3 spatial dims");
  std::vector<int64_t> in, wk;
  for (size_t i = 2; i < x.dims.size(); ++i) {
    in.push_back(DimValue(x.dims[i]));
    wk.push_back(DimValue(w.dims[i]));
  }
  const ConvGeometry g = ResolveConvGeometry(ctx.attrs(), in, wk, ctx.node());
  const int64_t c = DimValue(x.dims[1]), m = DimValue(w.dims[0]), wc = DimValue(w.dims[1]);
  if (c >= 0 && wc >= 0 && c != CheckedMul(wc, g.group, ctx.node(), "w's channels times group"))
    ctx.Error("x has ", c, " channels but w ", w.ToString(), " with group ", g.group, " expects ", wc * g.group);
  if (m >= 0 && m % g.group != 0) ctx.Error("output channels ", m, " are not divisible by group ", g.group);
  std::vector<Dim> out = {x.dims[0], w.dims[0]};
  for (int64_t o : g.out) out.push_back(o >= 0 ? Dim::Known(o) : Dim::Unknown());
  ctx.set_output(0, TensorType::Of(y, out));
}

void InferConvInteger(InferContext& ctx) {
  for (size_t i : {size_t{2}, size_t{3}})
    if (ctx.has_input(i) && ctx.input_dtype(i) != ctx.input_dtype(i - 2))
      ctx.Error(i == 2 ? "x_zero_point" : "w_zero_point", " must have ", i == 2 ? "x" : "w", "'s type");
  InferQuantizedConv(ctx, 1, DType::kInt32);
}

// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?):
// scales float32 (w_scale per tensor or per output channel), B int32 per output channel.
void InferQLinearConv(InferContext& ctx) {
  for (size_t i : {size_t{1}, size_t{4}, size_t{6}})
    if (ctx.input_dtype(i) != DType::kFloat32) ctx.Error("input ", i, " (a scale) must be float32, got ", DTypeName(ctx.input_dtype(i)));
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.Error("x_zero_point must have x's type");
  if (ctx.input_dtype(5) != ctx.input_dtype(3)) ctx.Error("w_zero_point must have w's type");
  const DType y = ctx.input_dtype(7);
  if (y != DType::kInt8 && y != DType::kUInt8) ctx.Error("y_zero_point must be int8 or uint8, got ", DTypeName(y));
  if (ctx.has_input(8) && ctx.input_dtype(8) != DType::kInt32) ctx.Error("B must be int32, got ", DTypeName(ctx.input_dtype(8)));
  InferQuantizedConv(ctx, 3, y);
}

OpSchema QuantizedConv(OpId op, InferFn infer) {
  return std::move(OpSchema(op).Since(10).Attr("auto_pad", Attribute::String("NOTSET")).OptionalAttr("dilations", AttrKind::kInts)
                       .Attr("group", Attribute::Int(1)).OptionalAttr("kernel_shape", AttrKind::kInts)
                       .OptionalAttr("pads", AttrKind::kInts).OptionalAttr("strides", AttrKind::kInts).Infer(std::move(infer)));
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
  // saturate matters only for the float8 outputs: integer outputs always saturate.
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
  r.Register(QuantizedConv(OpId::kConvInteger, InferConvInteger).Input("x").Input("w").OptionalInput("x_zero_point")
                 .OptionalInput("w_zero_point").Output("y"));
  r.Register(QuantizedConv(OpId::kQLinearConv, InferQLinearConv).Input("x").Input("x_scale").Input("x_zero_point")
                 .Input("w").Input("w_scale").Input("w_zero_point").Input("y_scale").Input("y_zero_point")
                 .OptionalInput("B").Output("y"));
  r.Register(OpSchema(op::kMatMulInteger).Since(10).Input("A").Input("B").OptionalInput("a_zero_point")
                 .OptionalInput("b_zero_point").Output("Y").Infer(InferMatMulInteger));
}

}  // namespace oneflow
