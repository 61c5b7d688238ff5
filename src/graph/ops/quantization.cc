// Op family: quantization (DequantizeLinear): schemas and shape inference.
//
// DequantizeLinear maps integers back to reals, y = (x - x_zero_point) * x_scale, with the scale
// and zero point given per tensor (a scalar or a one-element vector), per axis (a vector along
// `axis`) or, from opset 21, per block (x's shape with `axis` divided into ceil(D / block_size)
// blocks). The output takes the scale's type (f32 before opset 19; f32, f16 or bf16 after).
#include <string>

#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

bool IsQuantizedDType(DType t, int opset) {
  switch (t) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt32:
      return true;
    case DType::kInt16:
    case DType::kUInt16:
      return opset >= 21;
    default:
      return false;
  }
}

void InferDequantizeLinear(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& scale = ctx.input_type(1);
  const int opset = ctx.opset();
  if (!IsQuantizedDType(x.dtype, opset))
    ctx.Error("DequantizeLinear-", opset, " takes x of int8, uint8, int32", opset >= 21 ? ", int16, uint16" : "",
              ", got ", DTypeName(x.dtype));
  const bool scale_ok = scale.dtype == DType::kFloat32 ||
                        (opset >= 19 && (scale.dtype == DType::kFloat16 || scale.dtype == DType::kBFloat16));
  if (!scale_ok)
    ctx.Error("DequantizeLinear-", opset, " takes x_scale of float32", opset >= 19 ? ", float16, bfloat16" : "",
              ", got ", DTypeName(scale.dtype));
  if (ctx.has_input(2) && ctx.input_type(2).dtype != x.dtype)
    ctx.Error("x_zero_point must have x's type ", DTypeName(x.dtype), ", got ", DTypeName(ctx.input_type(2).dtype));
  const int64_t output_dtype = ctx.attrs().GetInt("output_dtype", 0);
  if (output_dtype != 0 && output_dtype != static_cast<int64_t>(scale.dtype))
    ctx.Error("output_dtype ", output_dtype, " differs from x_scale's type ", DTypeName(scale.dtype),
              " (only a float8e8m0 scale may differ, and that type is not supported)");
  const int64_t block = ctx.attrs().GetInt("block_size", 0);
  if (block < 0) ctx.Error("block_size must be >= 0, got ", block);

  if (x.has_rank && scale.has_rank) {
    const int64_t r = static_cast<int64_t>(x.rank());
    int64_t axis = ctx.attrs().GetInt("axis", 1);
    const bool per_tensor = scale.rank() == 0 || (scale.rank() == 1 && scale.dims[0].known() && scale.dims[0].value == 1);
    if (!per_tensor) {
      if (axis < -r || axis >= r) ctx.Error("axis ", axis, " is out of range for x of rank ", r);
      if (axis < 0) axis += r;
      const Dim& d = x.dims[static_cast<size_t>(axis)];
      if (block == 0) {
        if (scale.rank() != 1)
          ctx.Error("x_scale must be a scalar or a vector (per axis) without block_size, got ", scale.ToString());
        if (d.known() && scale.dims[0].known() && scale.dims[0].value != d.value)
          ctx.Error("x_scale has ", scale.dims[0].value, " entries for axis ", axis, " of size ", d.value);
      } else {
        if (static_cast<int64_t>(scale.rank()) != r)
          ctx.Error("a blocked x_scale has x's rank ", r, ", got ", scale.ToString());
        for (int64_t i = 0; i < r; ++i) {
          const Dim& xs = x.dims[static_cast<size_t>(i)];
          const Dim& ss = scale.dims[static_cast<size_t>(i)];
          if (!xs.known() || !ss.known()) continue;
          const int64_t want = i == axis ? (xs.value + block - 1) / block : xs.value;
          if (ss.value != want)
            ctx.Error("x_scale ", scale.ToString(), " does not block x ", x.ToString(), " by ", block, " along axis ",
                      axis, ": dim ", i, " should be ", want);
        }
      }
    }
    if (ctx.has_input(2)) {
      const TensorType& zp = ctx.input_type(2);
      if (zp.has_rank && zp.rank() != scale.rank())
        ctx.Error("x_zero_point ", zp.ToString(), " must have x_scale's shape ", scale.ToString());
    }
  }
  ctx.set_output(0, x.has_rank ? TensorType::Of(scale.dtype, x.dims) : TensorType::UnknownShape(scale.dtype));
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

}  // namespace

void RegisterQuantizationOps(OpRegistry& r) {
  r.Register(DequantizeLinear(13).Until(20));
  r.Register(DequantizeLinear(21).Until(22).Attr("block_size", Attribute::Int(0)));
  r.Register(DequantizeLinear(23).Attr("block_size", Attribute::Int(0)).Attr("output_dtype", Attribute::Int(0)));
}

}  // namespace oneflow
