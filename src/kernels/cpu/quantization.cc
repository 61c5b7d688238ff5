// CPU kernels: QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (graph/ops/quantization.cc).
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
#include "kernels/cpu/matmul_shape.h"
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
  OF_REQUIRE(!zero_point || zero_point->shape() == scale.shape(), ctx.node_desc(), ": the zero point ",
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
  const int64_t entries = (m.d + block - 1) / block;
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
  pool.ParallelFor(m.outer * m.d, static_cast<double>(m.inner) * 2.0, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {  // row = o * d + a
      const int64_t o = row / m.d, a = row % m.d;
      const int64_t first = o * m.outer_stride + (a / m.block) * m.axis_stride;
      for (int64_t i = 0; i < m.inner; ++i) f(row * m.inner + i, first + i * m.inner_stride);
    }
  });
}

void DequantizeLinearKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const ScaleMap m = MapScale(ctx, x.shape(), scale, zero_point, "x_scale");
  DispatchInteger(x.dtype(), [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    DispatchFloating(scale.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      const X* xs = x.data<X>();
      const X* zs = zero_point ? zero_point->data<X>() : nullptr;
      const S* ss = scale.data<S>();
      S* out = ctx.output(0).data<S>();
      ForEachScaled(ctx.pool(), m, [&](int64_t e, int64_t q) {
        const int64_t diff = static_cast<int64_t>(xs[e]) - (zs ? static_cast<int64_t>(zs[q]) : 0);
        out[e] = CastFromDouble<S>(static_cast<float>(diff) * static_cast<float>(CastToDouble(ss[q])));
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

// round_half_even(v) + zero_point saturated to Y; NaN gives Y's minimum. Clamping to the
// integers [lo - zp, hi - zp] first and rounding after gives the same result (integers are fixed
// points of rounding, which is monotonic), and keeps |v| < 2^22, where adding and subtracting
// 1.5 * 2^23 (2^52 for double) rounds half to even in the default rounding mode: selects and
// arithmetic only, so loops of it vectorize.
template <typename Y, typename F>
Y QuantizeValue(F v, int32_t zero_point) {
  const F lo = static_cast<F>(static_cast<int32_t>(std::numeric_limits<Y>::lowest()) - zero_point);
  const F hi = static_cast<F>(static_cast<int32_t>(std::numeric_limits<Y>::max()) - zero_point);
  v = v >= lo ? v : lo;  // NaN compares false: lo
  v = v <= hi ? v : hi;
  const F kRound = sizeof(F) == 4 ? static_cast<F>(12582912.0) : static_cast<F>(6755399441055744.0);  // 1.5 * 2^23 or 2^52
  return static_cast<Y>(static_cast<int32_t>((v + kRound) - kRound) + zero_point);
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
      DispatchQuantized(y.dtype(), [&](auto ytag) {
        using Y = typename decltype(ytag)::type;
        const X* xs = x.data<X>();
        const S* ss = scale.data<S>();
        const Y* zs = zero_point ? zero_point->data<Y>() : nullptr;
        Y* out = y.data<Y>();
        ForEachScaled(ctx.pool(), m, [&](int64_t e, int64_t q) {
          const int32_t zp = zs ? static_cast<int32_t>(zs[q]) : 0;
          double v;
          if (quotient == DType::kFloat64) {
            v = CastToDouble(xs[e]) / CastToDouble(ss[q]);
          } else {
            const float f = static_cast<float>(CastToDouble(xs[e])) / static_cast<float>(CastToDouble(ss[q]));
            // A float16/bfloat16 quotient: the float one rounded once into it (float carries more
            // than twice their bits, so this is the correctly rounded narrow division).
            if (quotient == DType::kFloat16) v = CastToDouble(CastFromDouble<Float16>(f));
            else if (quotient == DType::kBFloat16) v = CastToDouble(CastFromDouble<BFloat16>(f));
            else v = f;
          }
          out[e] = QuantizeValue<Y>(v, zp);
        });
      });
    });
  });
}
ONEFLOW_KERNEL(QuantizeLinear, QuantizeLinearKernel);

// uint8 with a scale and zero point from x's range widened to include 0, as onnxruntime computes
// them; an all-zero x (an empty range) gets scale 1, where the ONNX formula would divide by zero.
// NaNs do not widen the range.
void DynamicQuantizeLinearKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float* xs = x.data<float>();
  const int64_t n = x.numel();
  // The range in 16 lanes, so that the loop vectorizes (a float min/max reduction does not
  // without -ffast-math); selects keep NaNs out.
  constexpr int kLanes = 16;
  float lows[kLanes] = {}, highs[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float v = xs[i + j];
      lows[j] = v < lows[j] ? v : lows[j];
      highs[j] = v > highs[j] ? v : highs[j];
    }
  for (; i < n; ++i) {
    lows[0] = xs[i] < lows[0] ? xs[i] : lows[0];
    highs[0] = xs[i] > highs[0] ? xs[i] : highs[0];
  }
  float lo = 0.0f, hi = 0.0f;
  for (int j = 0; j < kLanes; ++j) {
    lo = std::min(lo, lows[j]);
    hi = std::max(hi, highs[j]);
  }
  const float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zp_real = std::clamp(0.0f - lo / scale, 0.0f, 255.0f);
  const uint8_t zp = static_cast<uint8_t>(std::nearbyint(zp_real));
  uint8_t* out = ctx.output(0).data<uint8_t>();
  ctx.pool().ParallelFor(n, 4.0, [xs, out, scale, zp](int64_t begin, int64_t end) {
    // By value: a uint8_t store may alias anything, so captured references would be reloaded
    // after every store and the loop would not vectorize.
    const float* __restrict in = xs;
    uint8_t* __restrict o = out;
    for (int64_t k = begin; k < end; ++k) o[k] = QuantizeValue<uint8_t>(in[k] / scale, zp);
  });
  ctx.output(1).data<float>()[0] = scale;
  ctx.output(2).data<uint8_t>()[0] = zp;
}
ONEFLOW_KERNEL(DynamicQuantizeLinear, DynamicQuantizeLinearKernel);

// QLinearMatMul: Y = saturate(round_half_even((A - za)(B - zb) * a_scale * b_scale / y_scale) + zy),
// the product summed in int32 (exact: |a - za| |b - zb| <= 255^2, so K < 2^15 cannot overflow),
// numpy batching; a_scale / a_zero_point per tensor or per row of A, b's per tensor or per column.
void QLinearMatMulKernel(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const MatMulShape m = AnalyzeMatMul(a.shape(), b.shape());
  OF_REQUIRE(m.K < (int64_t{1} << 15), node, ": K = ", m.K, " could overflow the int32 sums");
  auto per = [&](size_t i, int64_t n, const char* what) {
    const Tensor& t = ctx.input(i);
    OF_REQUIRE(t.numel() == 1 || (t.rank() == 1 && t.numel() == n), node, ": ", what, " ", ShapeToString(t.shape()),
               " must be a scalar or have ", n, " entries");
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) v[static_cast<size_t>(j)] = t.GetAsDouble(t.numel() == 1 ? 0 : j);
    return v;
  };
  const std::vector<double> sa = per(1, m.M, "a_scale"), za = per(2, m.M, "a_zero_point");
  const std::vector<double> sb = per(4, m.N, "b_scale"), zb = per(5, m.N, "b_zero_point");
  const std::vector<double> sy = per(6, 1, "y_scale"), zy = per(7, 1, "y_zero_point");
  for (const std::vector<double>* s : {&sa, &sb, &sy})
    for (double v : *s) OF_REQUIRE(v > 0.0 && std::isfinite(v), node, ": scales must be positive and finite, got ", v);
  // a_scale * b_scale / y_scale, each step rounded to the scales' type as the reference computes it.
  const DType scale_type = ctx.input(1).dtype();
  auto in_scale_type = [&](double v) {
    switch (scale_type) {
      case DType::kFloat16: return CastToDouble(CastFromDouble<Float16>(v));
      case DType::kBFloat16: return CastToDouble(CastFromDouble<BFloat16>(v));
      default: return static_cast<double>(static_cast<float>(v));
    }
  };
  auto ScaleProduct = [&](double a_s, double b_s, double y_s) { return in_scale_type(in_scale_type(a_s * b_s) / y_s); };
  Tensor& y = ctx.output(0);
  const bool y_signed = y.dtype() == DType::kInt8;
  const double lo = y_signed ? -128.0 : 0.0, hi = y_signed ? 127.0 : 255.0;
  std::vector<int32_t> av(static_cast<size_t>(a.numel())), bv(static_cast<size_t>(b.numel()));
  for (int64_t i = 0; i < a.numel(); ++i) av[static_cast<size_t>(i)] = static_cast<int32_t>(a.GetAsInt64(i));
  for (int64_t i = 0; i < b.numel(); ++i) bv[static_cast<size_t>(i)] = static_cast<int32_t>(b.GetAsInt64(i));
  ctx.pool().ParallelFor(m.BatchCount() * m.M, static_cast<double>(m.N * m.K), [&](int64_t begin, int64_t end) {
    std::vector<int32_t> acc(static_cast<size_t>(m.N));
    for (int64_t row = begin; row < end; ++row) {
      const int64_t batch = row / m.M, i = row % m.M;
      int64_t ao = 0, bo = 0;
      BatchOffsets(m, batch, ao, bo);
      std::fill(acc.begin(), acc.end(), 0);
      const int32_t za_i = static_cast<int32_t>(za[static_cast<size_t>(i)]);
      for (int64_t k = 0; k < m.K; ++k) {
        const int32_t x = av[static_cast<size_t>(ao + i * m.K + k)] - za_i;
        if (x == 0) continue;
        const int32_t* brow = bv.data() + bo + k * m.N;
        for (int64_t j = 0; j < m.N; ++j) acc[static_cast<size_t>(j)] += x * (brow[j] - static_cast<int32_t>(zb[static_cast<size_t>(j)]));
      }
      for (int64_t j = 0; j < m.N; ++j) {
        const double mult = ScaleProduct(sa[static_cast<size_t>(i)], sb[static_cast<size_t>(j)], sy[0]);
        const double v = std::nearbyint(static_cast<double>(acc[static_cast<size_t>(j)]) * mult) + zy[0];
        const double q = std::min(std::max(v, lo), hi);
        const int64_t out = row * m.N + j;
        if (y_signed) y.data<int8_t>()[out] = static_cast<int8_t>(q);
        else y.data<uint8_t>()[out] = static_cast<uint8_t>(q);
      }
    }
  });
}
ONEFLOW_KERNEL(QLinearMatMul, QLinearMatMulKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
