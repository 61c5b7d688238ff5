// Direct NHWC convolution for few input channels (see conv_direct.h).
#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/avx512_max.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

// Up to here the taps of a pixel are few enough that broadcasting each input value beats
// oneDNN's vectorizing over input channels (16 per vector: at 8 half the lanes would idle).
constexpr int64_t kMaxInputChannels = 8;

#if ONEFLOW_ISA_AVX512

// What a register tile needs. The input is a planar band of padded rows ([row][channel][column],
// `cols` floats per run), pixel p of the tile reads column p + j for kernel column j.
struct TileArgs {
  const float* x;      // the band at the tile's first pixel
  int64_t cols;        // floats per (band row, channel) run
  int64_t row0, dh;    // kernel row i reads band row row0 + i * dh
  int64_t i_lo, i_hi;  // kernel rows inside the image
  int64_t c;           // input channels
  const float* w;      // packed weights [kh][3][c][m] at this block of output channels
  int64_t m;           // output channels: stride of packed weights, y and z
  const float* bias;   // at this block, or null
  const float* z;      // residual at pixel 0 and this block, or null
  float* y;            // output at pixel 0 and this block
  bool relu;
};

// P consecutive output pixels, NV*16 output channels, accumulated in registers. Pixel p's tap j
// reads input column p + j, so each input value is broadcast once and feeds up to three pixels
// (P + 2 broadcasts per kernel row and channel instead of 3P: a broadcast per tap and pixel
// would bound the loop). Then bias, residual, Relu (max(NaN, 0) = 0 like ApplyActivation), store.
template <int NV, int P>
void SlideTile3(const TileArgs& a) {
  __m512 acc[P][NV];
  for (int p = 0; p < P; ++p)
    for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_setzero_ps();
  for (int64_t i = a.i_lo; i < a.i_hi; ++i) {
    for (int64_t ci = 0; ci < a.c; ++ci) {
      const float* xs = a.x + ((a.row0 + i * a.dh) * a.c + ci) * a.cols;
      const float* wt = a.w + (i * 3 * a.c + ci) * a.m;  // kernel column j at wt + j * c * m
      __m512 wv[3][NV];
      for (int j = 0; j < 3; ++j)
        for (int v = 0; v < NV; ++v) wv[j][v] = _mm512_loadu_ps(wt + j * a.c * a.m + 16 * v);
      for (int q = 0; q < P + 2; ++q) {
        const __m512 xb = _mm512_set1_ps(xs[q]);
        for (int j = 0; j < 3; ++j) {
          const int p = q - j;
          if (p < 0 || p >= P) continue;
          for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_fmadd_ps(xb, wv[j][v], acc[p][v]);
        }
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < NV; ++v) {
      __m512 r = acc[p][v];
      if (a.bias) r = _mm512_add_ps(r, _mm512_loadu_ps(a.bias + 16 * v));
      if (a.z) r = _mm512_add_ps(r, _mm512_loadu_ps(a.z + p * a.m + 16 * v));
      if (a.relu) r = MaxPs(r, _mm512_setzero_ps());
      _mm512_storeu_ps(a.y + p * a.m + 16 * v, r);
    }
  }
}

// The largest tile: P * NV accumulators plus 3 * NV weight vectors in 32 registers.
template <int NV>
constexpr int MaxTile() { return NV == 1 ? 20 : 10; }

template <int NV, int P = MaxTile<NV>()>
void TileOf(int pixels, const TileArgs& a) {
  if constexpr (P > 1) {
    if (pixels < P) return TileOf<NV, P - 1>(pixels, a);
  }
  SlideTile3<NV, P>(a);
}

// One output row's pixels, channels [m0, m0 + 16 * NV): tiles of near-equal size (32 pixels in
// four tiles of 8 rather than 10, 10, 10, 2: a small tile reloads the weights for few FMAs).
template <int NV>
void RowBlock(TileArgs a, int64_t ow) {
  const int64_t tiles = (ow + MaxTile<NV>() - 1) / MaxTile<NV>();
  int64_t done = 0;
  for (int64_t k = 1; k <= tiles; ++k) {
    const int64_t end = ow * k / tiles, pixels = end - done;
    TileOf<NV>(static_cast<int>(pixels), a);
    a.x += pixels;
    a.y += pixels * a.m;
    if (a.z) a.z += pixels * a.m;
    done = end;
  }
}

#endif  // ONEFLOW_ISA_AVX512

}  // namespace

bool DirectConvNhwc::Applies(int64_t c, int64_t m, int64_t kw, int64_t sw, int64_t dw) {
#if ONEFLOW_ISA_AVX512
  return c >= 1 && c <= kMaxInputChannels && m > 0 && m % 16 == 0 && kw == 3 && sw == 1 && dw == 1;
#else
  (void)c, (void)m, (void)kw, (void)sw, (void)dw;
  return false;
#endif
}

DirectConvNhwc::DirectConvNhwc(int64_t m, int64_t c, int64_t kh, int64_t kw, const float* weights,
                               const ActivationParams& act)
    : m_(m), c_(c), kh_(kh), kw_(kw), packed_(static_cast<size_t>(m * c * kh * kw)), act_(act) {
  OF_CHECK(Applies(c, m, kw, 1, 1), kInternal, "direct NHWC conv built for ", c, " input and ", m,
           " output channels, kernel width ", kw);
  for (int64_t o = 0; o < m; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j)
          packed_[static_cast<size_t>(((i * kw + j) * c + ci) * m + o)] = weights[((o * c + ci) * kh + i) * kw + j];
}

void DirectConvNhwc::Run(const DirectConvGeometry& g, const float* x, const float* bias, const float* z, float* y,
                         ThreadPool& pool) const {
  OF_CHECK(g.m == m_ && g.c == c_ && g.kh == kh_ && g.kw == kw_ && g.sw == 1 && g.dw == 1 && g.pt >= 0 && g.pl >= 0,
           kInternal, "direct NHWC conv: geometry mismatch");
#if ONEFLOW_ISA_AVX512
  // Band columns: the `cols` input columns the output row reads, from -pl; [left, left + valid)
  // hold the image, the others are the zero padding.
  const int64_t cols = g.ow + 2;
  const int64_t left = std::min(cols, g.pl), valid = std::min(cols, g.pl + g.w) - left;
  const bool relu = act_.kind == Activation::kRelu;
  const bool after = !relu && act_.kind != Activation::kNone;  // other activations: on each finished row
  // Cycles per output row: one FMA per 16 channels per tap, two FMAs a cycle.
  const double row_cost = static_cast<double>(g.ow * g.m * g.kh * g.kw * g.c) / 32.0;
  pool.ParallelFor(g.n * g.oh, row_cost, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> band;
    int64_t band_n = -1, band_lo = 0;  // the image and first input row in `band`
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / g.oh, oh = r % g.oh;
      const int64_t ih0 = oh * g.sh - g.pt;
      // Kernel rows inside the image: i_lo <= i < i_hi (the others are skipped, not read).
      const int64_t i_lo = ih0 >= 0 ? 0 : (-ih0 + g.dh - 1) / g.dh;
      const int64_t i_hi = std::max(i_lo, ih0 >= g.h ? 0 : std::min(g.kh, (g.h - ih0 + g.dh - 1) / g.dh));
      if (n != band_n) {
        // A planar, padded copy of the input rows that this thread's rows of image n read.
        const int64_t last = std::min(end - 1, (n + 1) * g.oh - 1) % g.oh;
        band_n = n;
        band_lo = std::max<int64_t>(0, ih0);
        const int64_t band_hi = std::max(band_lo, std::min(g.h, last * g.sh - g.pt + (g.kh - 1) * g.dh + 1));
        const size_t need = static_cast<size_t>((band_hi - band_lo) * g.c * cols);
        if (band.size() < need) band.resize(need);
        for (int64_t ih = band_lo; ih < band_hi; ++ih) {
          const float* src = x + ((n * g.h + ih) * g.w) * g.c;
          for (int64_t ci = 0; ci < g.c; ++ci) {
            float* dst = band.data() + ((ih - band_lo) * g.c + ci) * cols;
            std::fill(dst, dst + left, 0.0f);
            for (int64_t q = 0; q < valid; ++q) dst[left + q] = src[q * g.c + ci];
            std::fill(dst + left + valid, dst + cols, 0.0f);
          }
        }
      }
      float* yr = y + r * g.ow * g.m;
      const float* zr = z ? z + r * g.ow * g.m : nullptr;
      for (int64_t m0 = 0; m0 < g.m; m0 += 32) {
        const TileArgs a{band.data(), cols, ih0 - band_lo, g.dh, i_lo, i_hi, g.c, packed_.data() + m0, g.m,
                         bias ? bias + m0 : nullptr, zr ? zr + m0 : nullptr, yr + m0, relu};
        if (g.m - m0 >= 32) RowBlock<2>(a, g.ow);
        else RowBlock<1>(a, g.ow);
      }
      if (after) ApplyActivation(act_, yr, g.ow * g.m);
    }
  });
#else
  (void)x, (void)bias, (void)z, (void)y, (void)pool;
  Fail(ErrorCode::kInternal, "direct NHWC conv needs AVX-512");
#endif
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
