// CPU kernels: the channels-last pools of the layout pass (ai.oneflow NhwcMaxPool, NhwcAveragePool,
// NhwcGlobalAveragePool) on [N, H, W, C] f32/f64. Every window tap is a contiguous run of C
// values, so the inner loops vectorize over channels with no gathers and no padded copies.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "graph/op_schema.h"
#include "graph/ops/spatial_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/avx512_max.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

constexpr int64_t kBlock = 64;  // channels per accumulator block (four AVX-512 registers of f32)

struct NhwcPoolShape {
  int64_t n, h, w, c, oh, ow;
  PoolGeometry g;
};

NhwcPoolShape ShapeOf(const KernelContext& ctx, const Tensor& x, bool global) {
  OF_REQUIRE(x.rank() == 4, ctx.node_desc(), ": NHWC pooling needs a 4-D X, got ", ShapeToString(x.shape()));
  NhwcPoolShape s;
  s.n = x.dim(0), s.h = x.dim(1), s.w = x.dim(2), s.c = x.dim(3);
  s.g = ComputePoolGeometry(ctx.attrs(), {s.h, s.w}, ctx.node_desc(), global);
  s.oh = s.g.out[0], s.ow = s.g.out[1];
  return s;
}

// Taps [lo, hi) of output position o along one dim whose input positions o*s - pad + i*d fall in [0, n).
void ValidTaps(int64_t o, int64_t k, int64_t s, int64_t d, int64_t pad, int64_t n, int64_t& lo, int64_t& hi) {
  const int64_t start = o * s - pad;
  lo = start >= 0 ? 0 : (-start + d - 1) / d;
  hi = start >= n ? 0 : std::min(k, (n - start + d - 1) / d);
  if (hi < lo) hi = lo;
}

// Window positions counted for count_include_pad: the taps inside the input or its end padding.
int64_t PaddedTaps(int64_t o, int64_t k, int64_t s, int64_t d, int64_t pad, int64_t n, int64_t pad_end) {
  int64_t t = 0;
  for (int64_t i = 0; i < k; ++i) t += o * s - pad + i * d < n + pad_end;
  return t;
}

#if ONEFLOW_ISA_AVX512
// One window over NV * 16 channels with the accumulators in registers: `nh` x `nw` taps from
// `first`, `row_step` / `col_step` floats apart (KH, KW > 0: those counts, known at compile time
// so the tap loops unroll). The result is scaled by `fin` (average: 1/count; max: 1, or 0 for a
// window that misses the input).
template <int NV, bool kMax, int KH, int KW>
inline void VectorWindow(const float* first, float* out, float init, float fin, int64_t nh, int64_t nw,
                         int64_t row_step, int64_t col_step) {
  __m512 acc[NV];
  for (int v = 0; v < NV; ++v) acc[v] = _mm512_set1_ps(init);
  const int64_t h_taps = KH > 0 ? KH : nh, w_taps = KW > 0 ? KW : nw;
  for (int64_t i = 0; i < h_taps; ++i) {
    for (int64_t j = 0; j < w_taps; ++j) {
      const float* src = first + i * row_step + j * col_step;
      for (int v = 0; v < NV; ++v) {
        const __m512 x = _mm512_loadu_ps(src + 16 * v);
        acc[v] = kMax ? MaxPs(x, acc[v]) : _mm512_add_ps(acc[v], x);
      }
    }
  }
  const __m512 f = _mm512_set1_ps(fin);
  for (int v = 0; v < NV; ++v) _mm512_storeu_ps(out + 16 * v, _mm512_mul_ps(acc[v], f));
}

// Dispatches on the channel block width and, for whole 2x2 and 3x3 windows, the tap counts.
template <bool kMax>
inline void VectorWindowAny(int nv, int64_t kh, int64_t kw, const float* first, float* out, float init, float fin,
                            int64_t nh, int64_t nw, int64_t row_step, int64_t col_step) {
  const int fixed = nh == kh && nw == kw ? (kh == 2 && kw == 2 ? 2 : kh == 3 && kw == 3 ? 3 : 0) : 0;
#define OF_WINDOW(NV)                                                                                       \
  if (fixed == 2) VectorWindow<NV, kMax, 2, 2>(first, out, init, fin, nh, nw, row_step, col_step);          \
  else if (fixed == 3) VectorWindow<NV, kMax, 3, 3>(first, out, init, fin, nh, nw, row_step, col_step);     \
  else VectorWindow<NV, kMax, 0, 0>(first, out, init, fin, nh, nw, row_step, col_step);
  switch (nv) {
    case 4: OF_WINDOW(4) break;
    case 3: OF_WINDOW(3) break;
    case 2: OF_WINDOW(2) break;
    default: OF_WINDOW(1) break;
  }
#undef OF_WINDOW
}
#endif

#if ONEFLOW_ISA_AVX512
// Max over windows that all lie inside the input (no padding, dilation 1, no partial last window)
// and C a multiple of 16: no per-window bounds, tap counts or divisors, which otherwise cost more
// than the maxima on small maps (cnn bench: 16x16x32 outputs of 2x2 windows). KH = KW = 0: the
// counts at run time. Same operations in the same order as VectorWindow, so the same results.
template <int KH, int KW>
void MaxPoolInteriorRow(const float* x, float* y, int64_t ow, int64_t w, int64_t c, int64_t sw, int64_t kh,
                        int64_t kw) {
  const int64_t h_taps = KH > 0 ? KH : kh, w_taps = KW > 0 ? KW : kw;
  for (int64_t q = 0; q < ow; ++q) {
    const float* first = x + q * sw * c;
    for (int64_t c0 = 0; c0 < c; c0 += 16) {
      __m512 acc = _mm512_set1_ps(std::numeric_limits<float>::lowest());
      for (int64_t i = 0; i < h_taps; ++i)
        for (int64_t j = 0; j < w_taps; ++j) acc = MaxPs(_mm512_loadu_ps(first + (i * w + j) * c + c0), acc);
      _mm512_storeu_ps(y + q * c + c0, acc);
    }
  }
}

// Whether MaxPoolInteriorRow takes this pool.
bool InteriorMaxPool(const NhwcPoolShape& s) {
  const PoolGeometry& g = s.g;
  for (size_t d = 0; d < 2; ++d)
    if (g.pad_begin[d] != 0 || g.pad_end[d] != 0 || g.dilation[d] != 1) return false;
  return s.c % 16 == 0 && s.oh > 0 && s.ow > 0 && (s.oh - 1) * g.stride[0] + g.kernel[0] <= s.h &&
         (s.ow - 1) * g.stride[1] + g.kernel[1] <= s.w;
}
#endif

template <typename T, bool kMax>
void PoolWindows(KernelContext& ctx, const Tensor& x, Tensor& y, bool include_pad) {
  const NhwcPoolShape s = ShapeOf(ctx, x, false);
  const PoolGeometry& g = s.g;
  const T* px = x.data<T>();
  T* py = y.data<T>();
#if ONEFLOW_ISA_AVX512
  if constexpr (kMax && std::is_same_v<T, float>) {
    if (InteriorMaxPool(s)) {
      const int64_t kh = g.kernel[0], kw = g.kernel[1];
      const double row_taps = static_cast<double>(s.ow * s.c * kh * kw);
      const double row_cost = row_taps * static_cast<double>(s.n * s.oh) < 4e5 ? 1.0 : row_taps;  // as below
      ctx.pool().ParallelFor(s.n * s.oh, row_cost, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const float* xr = px + ((r / s.oh) * s.h + (r % s.oh) * g.stride[0]) * s.w * s.c;
          float* yr = py + r * s.ow * s.c;
          if (kh == 2 && kw == 2) MaxPoolInteriorRow<2, 2>(xr, yr, s.ow, s.w, s.c, g.stride[1], kh, kw);
          else if (kh == 3 && kw == 3) MaxPoolInteriorRow<3, 3>(xr, yr, s.ow, s.w, s.c, g.stride[1], kh, kw);
          else MaxPoolInteriorRow<0, 0>(xr, yr, s.ow, s.w, s.c, g.stride[1], kh, kw);
        }
      });
      return;
    }
  }
#endif
  // Tap ranges and divisors per output row and column, computed once (integer divisions would
  // otherwise dominate small windows).
  std::vector<int64_t> hlo(s.oh), hhi(s.oh), wlo(s.ow), whi(s.ow), hcnt(s.oh), wcnt(s.ow);
  for (int64_t o = 0; o < s.oh; ++o) {
    ValidTaps(o, g.kernel[0], g.stride[0], g.dilation[0], g.pad_begin[0], s.h, hlo[o], hhi[o]);
    hcnt[o] = include_pad ? PaddedTaps(o, g.kernel[0], g.stride[0], g.dilation[0], g.pad_begin[0], s.h, g.pad_end[0])
                          : hhi[o] - hlo[o];
  }
  for (int64_t o = 0; o < s.ow; ++o) {
    ValidTaps(o, g.kernel[1], g.stride[1], g.dilation[1], g.pad_begin[1], s.w, wlo[o], whi[o]);
    wcnt[o] = include_pad ? PaddedTaps(o, g.kernel[1], g.stride[1], g.dilation[1], g.pad_begin[1], s.w, g.pad_end[1])
                          : whi[o] - wlo[o];
  }
  const int64_t rows = s.n * s.oh;
  // Cost per output row in cycles, for the pool's split; under ~100k cycles in all (a few us:
  // batch-1 pools of small nets) one thread is faster than handing work and data to another.
  const double taps = static_cast<double>(s.ow * s.c * g.kernel[0] * g.kernel[1]);
  const double cost = taps * static_cast<double>(rows) < 4e5 ? 1.0 : taps;
  ctx.pool().ParallelFor(rows, cost, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / s.oh, oh = r % s.oh;
      const int64_t h0 = hlo[oh], h1 = hhi[oh];
      const T* xn = px + n * s.h * s.w * s.c;
      for (int64_t ow = 0; ow < s.ow; ++ow) {
        const int64_t w0 = wlo[ow], w1 = whi[ow];
        T* dst = py + (r * s.ow + ow) * s.c;
        const int64_t valid = (h1 - h0) * (w1 - w0);
        T scale = T(1);
        if (!kMax) {
          const int64_t count = hcnt[oh] * wcnt[ow];
          scale = count > 0 ? T(1) / static_cast<T>(count) : T(0);
        }
#if ONEFLOW_ISA_AVX512
        if constexpr (std::is_same_v<T, float>) {
          if (s.c % 16 == 0) {
            const float init = kMax ? std::numeric_limits<float>::lowest() : 0.0f;
            const float fin = kMax ? (valid > 0 ? 1.0f : 0.0f) : scale;
            const int64_t ih0 = oh * g.stride[0] - g.pad_begin[0] + h0 * g.dilation[0];
            const int64_t iw0 = ow * g.stride[1] - g.pad_begin[1] + w0 * g.dilation[1];
            const float* first = valid > 0 ? xn + (ih0 * s.w + iw0) * s.c : xn;  // no taps: never read
            for (int64_t c0 = 0; c0 < s.c; c0 += kBlock) {
              const int nv = static_cast<int>(std::min(kBlock, s.c - c0) / 16);
              VectorWindowAny<kMax>(nv, g.kernel[0], g.kernel[1], first + c0, dst + c0, init, fin, h1 - h0, w1 - w0,
                                    g.dilation[0] * s.w * s.c, g.dilation[1] * s.c);
            }
            continue;
          }
        }
#endif
        // Channels in blocks; the compiler vectorizes the channel loops.
        for (int64_t c0 = 0; c0 < s.c; c0 += kBlock) {
          const int64_t cn = std::min(kBlock, s.c - c0);
          T acc[kBlock];
          for (int64_t c = 0; c < kBlock; ++c) acc[c] = kMax ? std::numeric_limits<T>::lowest() : T(0);
          for (int64_t i = h0; i < h1; ++i) {
            const int64_t ih = oh * g.stride[0] - g.pad_begin[0] + i * g.dilation[0];
            for (int64_t j = w0; j < w1; ++j) {
              const int64_t iw = ow * g.stride[1] - g.pad_begin[1] + j * g.dilation[1];
              const T* src = xn + (ih * s.w + iw) * s.c + c0;
              if (cn == kBlock) {
                for (int64_t c = 0; c < kBlock; ++c) acc[c] = kMax ? (src[c] > acc[c] ? src[c] : acc[c]) : acc[c] + src[c];
              } else {
                for (int64_t c = 0; c < cn; ++c) acc[c] = kMax ? (src[c] > acc[c] ? src[c] : acc[c]) : acc[c] + src[c];
              }
            }
          }
          if (kMax) {
            for (int64_t c = 0; c < cn; ++c) dst[c0 + c] = valid > 0 ? acc[c] : T(0);
          } else {
            for (int64_t c = 0; c < cn; ++c) dst[c0 + c] = acc[c] * scale;
          }
        }
      }
    }
  });
}

template <bool kMax>
void NhwcPoolKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const bool include_pad = !kMax && ctx.attrs().GetInt("count_include_pad", 0) != 0;
  if (x.dtype() == DType::kFloat32) return PoolWindows<float, kMax>(ctx, x, y, include_pad);
  if (x.dtype() == DType::kFloat64) return PoolWindows<double, kMax>(ctx, x, y, include_pad);
  Fail(ErrorCode::kInvalidArgument, ctx.node_desc(), ": NHWC pooling supports float32 and float64, got ",
       DTypeName(x.dtype()));
}
ONEFLOW_KERNEL(NhwcMaxPool, NhwcPoolKernel<true>);
ONEFLOW_KERNEL(NhwcAveragePool, NhwcPoolKernel<false>);

template <typename T>
void GlobalAverage(KernelContext& ctx, const Tensor& x, Tensor& y) {
  const int64_t n = x.dim(0), hw = x.dim(1) * x.dim(2), c = x.dim(3);
  const T* px = x.data<T>();
  T* py = y.data<T>();
  // Split channels into blocks too, so batch 1 still spreads over the threads.
  const int64_t blocks = (c + kBlock - 1) / kBlock;
  const T scale = hw > 0 ? T(1) / static_cast<T>(hw) : T(0);
  ctx.pool().ParallelFor(n * blocks, static_cast<double>(hw * kBlock), [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t b = item / blocks, c0 = (item % blocks) * kBlock, c1 = std::min(c, c0 + kBlock);
      T acc[kBlock] = {};
      const T* src = px + b * hw * c;
      for (int64_t p = 0; p < hw; ++p)
        for (int64_t k = c0; k < c1; ++k) acc[k - c0] += src[p * c + k];
      for (int64_t k = c0; k < c1; ++k) py[b * c + k] = acc[k - c0] * scale;
    }
  });
}

void NhwcGlobalAveragePoolKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(x.rank() == 4, ctx.node_desc(), ": NHWC pooling needs a 4-D X, got ", ShapeToString(x.shape()));
  if (y.numel() == 0) return;
  if (x.dtype() == DType::kFloat32) return GlobalAverage<float>(ctx, x, y);
  if (x.dtype() == DType::kFloat64) return GlobalAverage<double>(ctx, x, y);
  Fail(ErrorCode::kInvalidArgument, ctx.node_desc(), ": NHWC pooling supports float32 and float64, got ",
       DTypeName(x.dtype()));
}
ONEFLOW_KERNEL(NhwcGlobalAveragePool, NhwcGlobalAveragePoolKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
