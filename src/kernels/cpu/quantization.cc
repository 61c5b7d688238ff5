// CPU kernels: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (graph/ops/quantization.cc).
// The integer matmuls and convs are in matmul_integer.cc and quantized_conv.cc.
//
// Where an element finds its scale and zero point: with x viewed as [outer, D, inner] around
// `axis`, element (o, a, i) reads entry
//   o * outer_stride + (a / block) * axis_stride + i * inner_stride,
// which covers the three granularities: per tensor all strides are 0; per axis (a [D] scale) only
// axis_stride is 1; blocked (a scale of shape [outer, ceil(D / block), inner]) they are the
// scale's own strides.
//
// Dequantize: x - zero_point is exact (64-bit), then float: onnxruntime's arithmetic without its
// int32 wrap-around (onnx.reference rounds x and the zero point to float first, which differs only
// for int32 values past 2^24). The product is rounded once into the output type.
//
// Quantize: x / y_scale (in the type QuotientType says), rounded half to even, plus the zero point,
// saturated to the output type: what onnxruntime computes. A NaN quotient gives
// the type's minimum, as both do on x86 (their float-to-int conversion yields INT_MIN there).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/narrow_types.h"
#include "kernels/cpu/matmul_shape.h"
#include "kernels/cpu/quantize_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

struct ScaleMap {
  int64_t outer = 1, d = 1, inner = 1, block = 1;
  int64_t outer_stride = 0, axis_stride = 0, inner_stride = 0;
};

// The map for x of shape `s` and its scale; checks what inference could not (symbolic dims).
ScaleMap MapScale(KernelContext& ctx, const Shape& s, const Tensor& scale, const Tensor* zero_point,
                  const char* scale_name) {
  // A scalar and a [1] zero point both mean per tensor (the node suite pairs them).
  OF_REQUIRE(!zero_point || zero_point->shape() == scale.shape() || (zero_point->numel() == 1 && scale.numel() == 1),
             ctx.node_desc(), ": the zero point ",
             ShapeToString(zero_point ? zero_point->shape() : Shape{}), " must have ", scale_name, "'s shape ",
             ShapeToString(scale.shape()));
  ScaleMap m;
  const int64_t r = static_cast<int64_t>(s.size());
  if (scale.numel() == 1) {
    m.d = NumElements(s);  // per tensor: x as [1, numel, 1]; every stride stays 0
    return m;
  }
  const int64_t block = ctx.attrs().GetInt("block_size", 0);
  int64_t axis = ctx.attrs().GetInt("axis", 1);
  OF_REQUIRE(axis >= -r && axis < r, ctx.node_desc(), ": axis ", axis, " is out of range for x of rank ", r);
  if (axis < 0) axis += r;
  for (int64_t k = 0; k < axis; ++k) m.outer *= s[static_cast<size_t>(k)];
  m.d = s[static_cast<size_t>(axis)];
  for (int64_t k = axis + 1; k < r; ++k) m.inner *= s[static_cast<size_t>(k)];
  if (block == 0) {
    OF_REQUIRE(scale.shape().size() == 1 && scale.shape()[0] == m.d, ctx.node_desc(), ": ", scale_name, " ",
               ShapeToString(scale.shape()), " does not match axis ", axis, " of x ", ShapeToString(s));
    m.axis_stride = 1;
    return m;
  }
  const int64_t entries = m.d / block + (m.d % block != 0 ? 1 : 0);  // ceil; m.d + block - 1 could overflow
  Shape want = s;
  want[static_cast<size_t>(axis)] = entries;
  OF_REQUIRE(scale.shape() == want, ctx.node_desc(), ": ", scale_name, " ", ShapeToString(scale.shape()),
             " does not block x ", ShapeToString(s), " by ", block, " (want ", ShapeToString(want), ")");
  m.block = block;
  m.outer_stride = entries * m.inner;
  m.axis_stride = m.inner;
  m.inner_stride = 1;
  return m;
}

// f(element, scale entry) for every element of x, rows split across the pool.
template <typename F>
void ForEachScaled(ThreadPool& pool, const ScaleMap& m, F f) {
  if (m.outer_stride == 0 && m.axis_stride == 0 && m.inner_stride == 0) {  // per tensor: one flat loop
    pool.ParallelFor(m.outer * m.d * m.inner, 2.0, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) f(e, int64_t{0});
    });
    return;
  }
  pool.ParallelFor(m.outer * m.d, static_cast<double>(m.inner) * 2.0, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {  // row = o * d + a
      const int64_t o = row / m.d, a = row % m.d;
      const int64_t first = o * m.outer_stride + (a / m.block) * m.axis_stride;
      for (int64_t i = 0; i < m.inner; ++i) f(row * m.inner + i, first + i * m.inner_stride);
    }
  });
}

// Calls fn(scale_at) where scale_at(q) is scale entry q as S, the output type: the scale's own type,
// or for a float8e8m0 scale (DequantizeLinear-23's microscaling form) output_dtype's.
template <typename Fn>
void WithScale(const Tensor& scale, DType output, Fn&& fn) {
  DispatchFloating(output, [&](auto otag) {
    using S = typename decltype(otag)::type;
    if (scale.dtype() == DType::kFloat8E8M0) {
      const uint8_t* codes = static_cast<const uint8_t*>(scale.raw());
      fn(otag, [codes](int64_t q) { return static_cast<float>(NarrowToDouble(DType::kFloat8E8M0, codes[q])); });
    } else {
      const S* ss = scale.data<S>();
      fn(otag, [ss](int64_t q) { return static_cast<float>(CastToDouble(ss[q])); });
    }
  });
}

void DequantizeLinearKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  const ScaleMap m = MapScale(ctx, x.shape(), scale, zero_point, "x_scale");
  WithScale(scale, y.dtype(), [&](auto otag, auto scale_at) {
    using S = typename decltype(otag)::type;
    S* out = y.data<S>();
    if (IsNarrowDType(x.dtype())) {
      // float8, float4e2m1 and 4/2-bit integers: (x - zero_point) in float, their values being exact there.
      const DType t = x.dtype();
      const uint8_t* xs = static_cast<const uint8_t*>(x.raw());
      const uint8_t* zs = zero_point ? static_cast<const uint8_t*>(zero_point->raw()) : nullptr;
      ForEachScaled(ctx.pool(), m, [&](int64_t e, int64_t q) {
        const float diff = static_cast<float>(NarrowToDouble(t, xs[e])) - (zs ? static_cast<float>(NarrowToDouble(t, zs[q])) : 0.0f);
        out[e] = CastFromDouble<S>(diff * scale_at(q));
      });
      return;
    }
    DispatchInteger(x.dtype(), [&](auto xtag) {
      using X = typename decltype(xtag)::type;
      const X* xs = x.data<X>();
      const X* zs = zero_point ? zero_point->data<X>() : nullptr;
      ForEachScaled(ctx.pool(), m, [&](int64_t e, int64_t q) {
        const int64_t diff = static_cast<int64_t>(xs[e]) - (zs ? static_cast<int64_t>(zs[q]) : 0);
        out[e] = CastFromDouble<S>(static_cast<float>(diff) * scale_at(q));
      });
    });
  });
}
ONEFLOW_KERNEL(DequantizeLinear, DequantizeLinearKernel);

// QuantizeLinear's x types.
template <typename Fn>
void DispatchQuantizeInput(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(TypeTag<float>{});
    case DType::kFloat16: return fn(TypeTag<Float16>{});
    case DType::kBFloat16: return fn(TypeTag<BFloat16>{});
    case DType::kInt32: return fn(TypeTag<int32_t>{});
    default: Fail(ErrorCode::kUnsupported, "QuantizeLinear of ", DTypeName(t));
  }
}

// The integer types a quantized tensor has.
template <typename Fn>
void DispatchQuantized(DType t, Fn&& fn) {
  switch (t) {
    case DType::kInt8: return fn(TypeTag<int8_t>{});
    case DType::kUInt8: return fn(TypeTag<uint8_t>{});
    case DType::kInt16: return fn(TypeTag<int16_t>{});
    case DType::kUInt16: return fn(TypeTag<uint16_t>{});
    default: Fail(ErrorCode::kUnsupported, "quantizing to ", DTypeName(t));
  }
}

// The type x / y_scale is computed in. Opset 23 says: `precision`, by default y_scale's type.
// Before it the spec is silent; onnxruntime divides in float32 (double for an int32 x, as
// onnx.reference does), and models of those opsets are checked against it, so we do the same.
// (onnx.reference divides two float16 operands in float16, which can differ by one step.)
DType QuotientType(int opset, DType x, DType scale, int64_t precision) {
  if (precision != 0) return static_cast<DType>(precision);
  if (opset >= 23) return scale;
  return x == DType::kInt32 ? DType::kFloat64 : DType::kFloat32;
}

// x / y_scale in the `quotient` type (QuotientType).
template <typename X, typename S>
double Quotient(X x, S scale, DType quotient) {
  if (quotient == DType::kFloat64) return CastToDouble(x) / CastToDouble(scale);
  const float f = static_cast<float>(CastToDouble(x)) / static_cast<float>(CastToDouble(scale));
  // A float16/bfloat16 quotient: the float one rounded once into it (float carries more than twice
  // their bits, so this is the correctly rounded narrow division).
  if (quotient == DType::kFloat16) return CastToDouble(CastFromDouble<Float16>(f));
  if (quotient == DType::kBFloat16) return CastToDouble(CastFromDouble<BFloat16>(f));
  return f;
}

void QuantizeLinearKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  const ScaleMap m = MapScale(ctx, x.shape(), scale, zero_point, "y_scale");
  const DType quotient = QuotientType(ctx.opset(), x.dtype(), scale.dtype(), ctx.attrs().GetInt("precision", 0));
  OF_CHECK(quotient == DType::kFloat32 || quotient == DType::kFloat64 || quotient == DType::kFloat16 ||
               quotient == DType::kBFloat16,
           kUnsupported, ctx.node_desc(), ": cannot divide in ", DTypeName(quotient));
  DispatchQuantizeInput(x.dtype(), [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    DispatchFloating(scale.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      const X* xs = x.data<X>();
      const S* ss = scale.data<S>();
      const DType t = y.dtype();
      if (IsNarrowIntegerDType(t)) {  // 4/2-bit integers: saturate to the type's range
        const int32_t lo = NarrowIntegerMin(t), hi = NarrowIntegerMax(t);
        const uint8_t* zs = zero_point ? static_cast<const uint8_t*>(zero_point->raw()) : nullptr;
        uint8_t* out = static_cast<uint8_t*>(y.raw());
        ForEachScaled(ctx.pool(), m, [&](int64_t e, int64_t q) {
          const int32_t zp = zs ? static_cast<int32_t>(NarrowToDouble(t, zs[q])) : 0;
          out[e] = NarrowFromInt64(t, QuantizeToRange(Quotient(xs[e], ss[q], quotient), zp, lo, hi));
        });
        return;
      }
      if (IsNarrowFloatDType(t)) {  // float8/float4: x / scale + zero_point rounded once into the type
        NarrowCastOptions o;
        o.saturate = ctx.attrs().GetInt("saturate", 1) != 0;
        const uint8_t* zs = zero_point ? static_cast<const uint8_t*>(zero_point->raw()) : nullptr;
        uint8_t* out = static_cast<uint8_t*>(y.raw());
        ForEachScaled(ctx.pool(), m, [&](int64_t e, int64_t q) {
          const double zp = zs ? NarrowToDouble(t, zs[q]) : 0.0;
          out[e] = NarrowFromDouble(t, Quotient(xs[e], ss[q], quotient) + zp, o);
        });
        return;
      }
      DispatchQuantized(t, [&](auto ytag) {
        using Y = typename decltype(ytag)::type;
        const Y* zs = zero_point ? zero_point->data<Y>() : nullptr;
        Y* out = y.data<Y>();
        ForEachScaled(ctx.pool(), m, [&](int64_t e, int64_t q) {
          const int32_t zp = zs ? static_cast<int32_t>(zs[q]) : 0;
          out[e] = QuantizeValue<Y>(Quotient(xs[e], ss[q], quotient), zp);
        });
      });
    });
  });
}
ONEFLOW_KERNEL(QuantizeLinear, QuantizeLinearKernel);

// uint8 with a scale and zero point from x's range (quantize_util.h).
void DynamicQuantizeLinearKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float* xs = x.data<float>();
  const DynamicQuantization q = DynamicQuantizationOf(xs, x.numel());
  uint8_t* out = ctx.output(0).data<uint8_t>();
  ctx.pool().ParallelFor(x.numel(), 4.0, [xs, out, q](int64_t begin, int64_t end) {
    QuantizeUInt8(xs, out, begin, end, q.scale, q.zero_point);
  });
  ctx.output(1).data<float>()[0] = q.scale;
  ctx.output(2).data<uint8_t>()[0] = q.zero_point;
}
ONEFLOW_KERNEL(DynamicQuantizeLinear, DynamicQuantizeLinearKernel);


}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
