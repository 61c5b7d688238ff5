// CPU kernels: ONNX Runtime's quantized elementwise contrib ops (graph/ops/contrib_quantization.cc),
// with onnxruntime's arithmetic so that results agree with it to the bit:
//   QLinearAdd   c = round((a - za) * (sa / sc) + (b - zb) * (sb / sc)) + zc
//   QLinearMul   c = round((a - za) * (b - zb) * (sa * sb / sc)) + zc
//   QLinearSigmoid, QLinearLeakyRelu: a 256-entry table, each entry the op on sx * (x - zx),
//                divided by sy, rounded, plus zy
//   QLinearGlobalAveragePool: round((sum x - zx * count) * (sx / (sy * count))) + zy
//   QLinearConcat: inputs with the output's scale and zero point copied, others requantized
//                through a table (round(sx * (x - zx) / sy) + zy)
// all in float, rounded half to even and saturated to the output type (quantize_util.h).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/quantize_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// Per-tensor quantization parameters of one operand.
struct Quant {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

Quant ReadQuant(KernelContext& ctx, size_t scale_slot, size_t zero_point_slot, const char* what) {
  const std::string& node = ctx.node_desc();
  const Tensor& s = ctx.input(scale_slot);
  OF_REQUIRE(s.dtype() == DType::kFloat32 && s.numel() == 1, node, ": ", what, "'s scale must be a float32 scalar, got ",
             DTypeName(s.dtype()), ShapeToString(s.shape()));
  Quant q;
  q.scale = s.data<float>()[0];
  OF_REQUIRE(q.scale > 0.0f && std::isfinite(q.scale), node, ": ", what, "'s scale must be positive and finite, got ", q.scale);
  if (zero_point_slot < ctx.num_inputs() && ctx.has_input(zero_point_slot)) {
    const Tensor& z = ctx.input(zero_point_slot);
    OF_REQUIRE(z.numel() == 1, node, ": ", what, "'s zero point must be a scalar, got ", ShapeToString(z.shape()));
    q.zero_point = static_cast<int32_t>(z.GetAsInt64(0));
  }
  return q;
}

int32_t Lowest(DType t) { return t == DType::kInt8 ? -128 : 0; }
int32_t Highest(DType t) { return t == DType::kInt8 ? 127 : 255; }

// Calls fn(TypeTag<T>) for int8 or uint8.
template <typename Fn>
void DispatchByte(const KernelContext& ctx, DType t, Fn&& fn) {
  if (t == DType::kInt8) return fn(TypeTag<int8_t>{});
  if (t == DType::kUInt8) return fn(TypeTag<uint8_t>{});
  Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": int8 or uint8 only, got ", DTypeName(t));
}

template <bool kMul>
void QLinearBinaryKernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  Tensor& c = ctx.output(0);
  const Quant qa = ReadQuant(ctx, 1, 2, "A"), qb = ReadQuant(ctx, 4, 5, "B"), qc = ReadQuant(ctx, 6, 7, "C");
  const int32_t lo = Lowest(c.dtype()), hi = Highest(c.dtype());
  DispatchByte(ctx, a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const float za = static_cast<float>(qa.zero_point), zb = static_cast<float>(qb.zero_point);
    const int32_t zc = qc.zero_point;
    if (a.shape() == b.shape()) {  // the common case (residual adds): one flat loop that vectorizes
      const T* __restrict pa = a.data<T>();
      const T* __restrict pb = b.data<T>();
      T* __restrict pc = c.data<T>();
      const float m = qa.scale * qb.scale / qc.scale, ra = qa.scale / qc.scale, rb = qb.scale / qc.scale;
      ctx.pool().ParallelFor(c.numel(), 2.0, [=](int64_t begin, int64_t end) {
        // Locals, not the closure's members: a byte store may alias those, which would force a
        // reload per element and keep the loop scalar.
        const T* __restrict in_a = pa;
        const T* __restrict in_b = pb;
        T* __restrict out = pc;
        const float fza = za, fzb = zb, fm = m, fra = ra, frb = rb;
        const int32_t z = zc, low = lo, high = hi;
        for (int64_t i = begin; i < end; ++i) {
          const float x = static_cast<float>(in_a[i]) - fza, y = static_cast<float>(in_b[i]) - fzb;
          out[i] = static_cast<T>(QuantizeToRange(kMul ? x * y * fm : x * fra + y * frb, z, low, high));
        }
      });
      return;
    }
    if constexpr (kMul) {
      const float m = qa.scale * qb.scale / qc.scale;
      BroadcastBinary(ctx.pool(), a.data<T>(), a.shape(), b.data<T>(), b.shape(), c.data<T>(), c.shape(),
                      [=](T x, T y) { return static_cast<T>(QuantizeToRange((x - za) * (y - zb) * m, zc, lo, hi)); },
                      kCheapCost);
    } else {
      const float ra = qa.scale / qc.scale, rb = qb.scale / qc.scale;
      BroadcastBinary(ctx.pool(), a.data<T>(), a.shape(), b.data<T>(), b.shape(), c.data<T>(), c.shape(),
                      [=](T x, T y) { return static_cast<T>(QuantizeToRange((x - za) * ra + (y - zb) * rb, zc, lo, hi)); },
                      kCheapCost);
    }
  });
}
ONEFLOW_KERNEL(MsQLinearAdd, QLinearBinaryKernel<false>);
ONEFLOW_KERNEL(MsQLinearMul, QLinearBinaryKernel<true>);

// The 256-entry table of y = quantize(f(dequantize(x))) for byte type T, indexed by the byte.
template <typename T, typename F>
std::vector<uint8_t> BuildTable(const Quant& in, const Quant& out, int32_t lo, int32_t hi, F f) {
  std::vector<uint8_t> table(256);
  for (int v = 0; v < 256; ++v) {
    const T x = static_cast<T>(static_cast<uint8_t>(v));
    const float real = in.scale * static_cast<float>(static_cast<int32_t>(x) - in.zero_point);
    table[static_cast<size_t>(v)] = static_cast<uint8_t>(QuantizeToRange(f(real) / out.scale, out.zero_point, lo, hi));
  }
  return table;
}

void ApplyTable(ThreadPool& pool, const std::vector<uint8_t>& table, const uint8_t* in, uint8_t* out, int64_t n) {
  pool.ParallelFor(n, 1.0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = table[in[i]];
  });
}

template <typename F>
void QLinearLookupKernel(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Quant qx = ReadQuant(ctx, 1, 2, "X"), qy = ReadQuant(ctx, 3, 4, "Y");
  DispatchByte(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::vector<uint8_t> table = BuildTable<T>(qx, qy, Lowest(y.dtype()), Highest(y.dtype()), f);
    ApplyTable(ctx.pool(), table, static_cast<const uint8_t*>(x.raw()), static_cast<uint8_t*>(y.raw()), x.numel());
  });
}

void QLinearSigmoidKernel(KernelContext& ctx) {
  QLinearLookupKernel(ctx, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}
ONEFLOW_KERNEL(MsQLinearSigmoid, QLinearSigmoidKernel);

void QLinearLeakyReluKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha", 0.01f);
  QLinearLookupKernel(ctx, [alpha](float v) { return v >= 0.0f ? v : v * alpha; });
}
ONEFLOW_KERNEL(MsQLinearLeakyRelu, QLinearLeakyReluKernel);

void QLinearGlobalAveragePoolKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Quant qx = ReadQuant(ctx, 1, 2, "x"), qy = ReadQuant(ctx, 3, 4, "y");
  OF_REQUIRE(x.rank() >= 3, ctx.node_desc(), ": X must have rank >= 3, got ", ShapeToString(x.shape()));
  const bool channels_last = ctx.attrs().GetInt("channels_last", 0) != 0;
  const int64_t n = x.dim(0), c = channels_last ? x.dim(x.rank() - 1) : x.dim(1);
  const int64_t count = x.numel() / std::max<int64_t>(n * c, 1);
  const float multiplier = qx.scale / (qy.scale * static_cast<float>(count));
  const int32_t lo = Lowest(y.dtype()), hi = Highest(y.dtype());
  DispatchByte(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    ctx.pool().ParallelFor(n * c, static_cast<double>(count), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {  // i = image * c + channel
        const int64_t image = i / c, channel = i % c;
        int64_t sum = 0;
        if (channels_last) {
          const T* p = in + image * count * c + channel;
          for (int64_t k = 0; k < count; ++k) sum += p[k * c];
        } else {
          const T* p = in + i * count;
          for (int64_t k = 0; k < count; ++k) sum += p[k];
        }
        const float centered = static_cast<float>(sum - static_cast<int64_t>(qx.zero_point) * count);
        out[i] = static_cast<T>(QuantizeToRange(centered * multiplier, qy.zero_point, lo, hi));
      }
    });
  });
}
ONEFLOW_KERNEL(MsQLinearGlobalAveragePool, QLinearGlobalAveragePoolKernel);

void QLinearConcatKernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const Quant qy = ReadQuant(ctx, 0, 1, "Y");
  const int64_t rank = y.rank();
  int64_t axis = ctx.attrs().GetInt("axis");
  if (axis < 0) axis += rank;
  OF_REQUIRE(axis >= 0 && axis < rank, ctx.node_desc(), ": axis is out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y.dim(d);
  for (int64_t d = axis + 1; d < rank; ++d) inner *= y.dim(d);
  const int64_t y_row = y.dim(axis) * inner;
  const int32_t lo = Lowest(y.dtype()), hi = Highest(y.dtype());
  uint8_t* out = static_cast<uint8_t*>(y.raw());
  int64_t offset = 0;
  for (size_t i = 2; i + 2 < ctx.num_inputs(); i += 3) {  // (X_i, X_i_scale, X_i_zero_point) triples
    const Tensor& x = ctx.input(i);
    OF_REQUIRE(x.dtype() == y.dtype() && x.rank() == rank, ctx.node_desc(), ": input ", i, " ",
               DTypeName(x.dtype()), ShapeToString(x.shape()), " does not concatenate into ", DTypeName(y.dtype()),
               ShapeToString(y.shape()));
    const Quant qx = ReadQuant(ctx, i + 1, i + 2, "an input");
    const int64_t x_row = x.dim(axis) * inner;
    const uint8_t* in = static_cast<const uint8_t*>(x.raw());
    std::vector<uint8_t> table;
    const bool copy = qx.scale == qy.scale && qx.zero_point == qy.zero_point;
    if (!copy) {
      DispatchByte(ctx, x.dtype(), [&](auto tag) {
        table = BuildTable<typename decltype(tag)::type>(qx, qy, lo, hi, [](float v) { return v; });
      });
    }
    ctx.pool().ParallelFor(outer, static_cast<double>(x_row), [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const uint8_t* src = in + o * x_row;
        uint8_t* dst = out + o * y_row + offset;
        if (copy) std::memcpy(dst, src, static_cast<size_t>(x_row));
        else for (int64_t k = 0; k < x_row; ++k) dst[k] = table[src[k]];
      }
    });
    offset += x_row;
  }
}
ONEFLOW_KERNEL(MsQLinearConcat, QLinearConcatKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
