// Direct NHWC convolution for few input channels (see conv_direct.h).
#include "kernels/cpu/conv_direct.h"

#include <algorithm>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "base/error.h"

namespace oneflow {

namespace {

// Up to here the taps of a pixel are few enough that broadcasting each input value beats
// oneDNN's vectorizing over input channels (16 per vector: at 8 half the lanes would idle).
constexpr int64_t kMaxInputChannels = 8;

#if defined(__AVX512F__)

// What a register tile needs: pixel p of the tile reads tap t at x[off[t] + p * pix_step].
struct TileArgs {
  const float* x;      // the padded input strip at the tile's first pixel
  int64_t pix_step;    // sw * c
  const int64_t* off;  // per tap (kernel row, kernel col, input channel): offset in the strip
  int64_t t0, t1;      // the taps whose kernel rows fall inside the image
  const float* w;      // packed weights at this block of output channels: tap t at w + t * m
  int64_t m;           // output channels: stride of packed weights, y and z
  const float* bias;   // at this block, or null
  const float* z;      // residual at pixel 0 and this block, or null
  float* y;            // output at pixel 0 and this block
  bool relu;
};

// GCC 12 warns that _mm512_max_ps reads an uninitialized value: its header builds the result from
// _mm512_undefined_ps() under an all-ones mask, so nothing undefined is ever read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// P consecutive output pixels, NV*16 output channels, accumulated in registers; then bias,
// residual and Relu (max(NaN, 0) = 0 like ApplyActivation) before one store.
template <int NV, int P>
void Tile(const TileArgs& a) {
  __m512 acc[P][NV];
  for (int p = 0; p < P; ++p)
    for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_setzero_ps();
  for (int64_t t = a.t0; t < a.t1; ++t) {
    const float* xs = a.x + a.off[t];
    const float* wt = a.w + t * a.m;
    __m512 wv[NV];
    for (int v = 0; v < NV; ++v) wv[v] = _mm512_loadu_ps(wt + 16 * v);
    for (int p = 0; p < P; ++p) {
      const __m512 xb = _mm512_set1_ps(xs[p * a.pix_step]);
      for (int v = 0; v < NV; ++v) acc[p][v] = _mm512_fmadd_ps(xb, wv[v], acc[p][v]);
    }
  }
  for (int p = 0; p < P; ++p) {
    for (int v = 0; v < NV; ++v) {
      __m512 r = acc[p][v];
      if (a.bias) r = _mm512_add_ps(r, _mm512_loadu_ps(a.bias + 16 * v));
      if (a.z) r = _mm512_add_ps(r, _mm512_loadu_ps(a.z + p * a.m + 16 * v));
      if (a.relu) r = _mm512_max_ps(r, _mm512_setzero_ps());
      _mm512_storeu_ps(a.y + p * a.m + 16 * v, r);
    }
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// The largest tile with room for the weight vectors: 24 accumulators (12 for one vector, where
// each broadcast feeds only one FMA).
template <int NV>
constexpr int MaxTile() { return NV == 1 ? 12 : 24 / NV; }

template <int NV, int P = MaxTile<NV>()>
void TileOf(int pixels, const TileArgs& a) {
  if constexpr (P > 1) {
    if (pixels < P) return TileOf<NV, P - 1>(pixels, a);
  }
  Tile<NV, P>(a);
}

// One output row's pixels, channels [m0, m0 + 16 * NV): tiles of near-equal size (32 pixels in
// tiles of 11, 11 and 10 rather than 12, 12, 4, 2, 2: small tiles reload weights per FMA).
template <int NV>
void RowBlock(TileArgs a, int64_t ow) {
  const int64_t tiles = (ow + MaxTile<NV>() - 1) / MaxTile<NV>();
  int64_t done = 0;
  for (int64_t k = 1; k <= tiles; ++k) {
    const int64_t end = ow * k / tiles, pixels = end - done;
    TileOf<NV>(static_cast<int>(pixels), a);
    a.x += pixels * a.pix_step;
    a.y += pixels * a.m;
    if (a.z) a.z += pixels * a.m;
    done = end;
  }
}

#endif  // __AVX512F__

}  // namespace

bool DirectConvNhwc::Applies(int64_t c, int64_t m) {
#if defined(__AVX512F__)
  return c >= 1 && c <= kMaxInputChannels && m > 0 && m % 16 == 0;
#else
  (void)c;
  (void)m;
  return false;
#endif
}

DirectConvNhwc::DirectConvNhwc(int64_t m, int64_t c, int64_t kh, int64_t kw, const float* weights,
                               const ActivationParams& act)
    : m_(m), c_(c), kh_(kh), kw_(kw), packed_(static_cast<size_t>(m * c * kh * kw)), act_(act) {
  OF_CHECK(Applies(c, m), kInternal, "direct NHWC conv built for ", c, " input and ", m, " output channels");
  for (int64_t o = 0; o < m; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j)
          packed_[static_cast<size_t>(((i * kw + j) * c + ci) * m + o)] = weights[((o * c + ci) * kh + i) * kw + j];
}

void DirectConvNhwc::Run(const DirectConvGeometry& g, const float* x, const float* bias, const float* z, float* y,
                         ThreadPool& pool) const {
  OF_CHECK(g.m == m_ && g.c == c_ && g.kh == kh_ && g.kw == kw_, kInternal, "direct NHWC conv: geometry mismatch");
#if defined(__AVX512F__)
  // Each output row reads kh input rows through a strip with the left/right padding as zeros, so
  // every pixel takes the same register-tiled path. Strip row i: `cols` columns from -pl.
  const int64_t cols = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  const int64_t strip_row = cols * g.c;
  std::vector<int64_t> off(static_cast<size_t>(g.kh * g.kw * g.c));  // kernel-row major
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j)
      for (int64_t ci = 0; ci < g.c; ++ci)
        off[static_cast<size_t>((i * g.kw + j) * g.c + ci)] = i * strip_row + j * g.dw * g.c + ci;
  const bool relu = act_.kind == Activation::kRelu;
  const bool after = !relu && act_.kind != Activation::kNone;  // other activations: on each finished row
  // Strip columns [left, left + valid) hold input columns [0, valid); the others are padding.
  OF_CHECK(g.pt >= 0 && g.pl >= 0, kInternal, "direct NHWC conv: negative pads");
  const int64_t left = std::min(cols, g.pl), valid = std::min(cols, g.pl + g.w) - left;
  // Cycles per output row: one FMA per 16 channels per tap, two FMAs a cycle.
  const double row_cost = static_cast<double>(g.ow * g.m * g.kh * g.kw * g.c) / 32.0;
  pool.ParallelFor(g.n * g.oh, row_cost, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> strip_buf;
    if (strip_buf.size() < static_cast<size_t>(g.kh * strip_row)) strip_buf.resize(static_cast<size_t>(g.kh * strip_row));
    float* strip = strip_buf.data();
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / g.oh, oh = r % g.oh;
      const int64_t ih0 = oh * g.sh - g.pt;
      // Kernel rows inside the image: i_lo <= i < i_hi (the others are skipped, not read).
      const int64_t i_lo = ih0 >= 0 ? 0 : (-ih0 + g.dh - 1) / g.dh;
      const int64_t i_hi = std::max(i_lo, ih0 >= g.h ? 0 : std::min(g.kh, (g.h - ih0 + g.dh - 1) / g.dh));
      for (int64_t i = i_lo; i < i_hi; ++i) {
        const float* src = x + ((n * g.h + ih0 + i * g.dh) * g.w) * g.c;
        float* dst = strip + i * strip_row;
        std::fill(dst, dst + left * g.c, 0.0f);
        std::copy(src, src + valid * g.c, dst + left * g.c);
        std::fill(dst + (left + valid) * g.c, dst + strip_row, 0.0f);
      }
      float* yr = y + r * g.ow * g.m;
      const float* zr = z ? z + r * g.ow * g.m : nullptr;
      for (int64_t m0 = 0; m0 < g.m; m0 += 64) {
        const TileArgs a{strip, g.sw * g.c, off.data(), i_lo * g.kw * g.c, i_hi * g.kw * g.c, packed_.data() + m0,
                         g.m, bias ? bias + m0 : nullptr, zr ? zr + m0 : nullptr, yr + m0, relu};
        switch (std::min<int64_t>(4, (g.m - m0) / 16)) {
          case 4: RowBlock<4>(a, g.ow); break;
          case 3: RowBlock<3>(a, g.ow); break;
          case 2: RowBlock<2>(a, g.ow); break;
          default: RowBlock<1>(a, g.ow); break;
        }
      }
      if (after) ApplyActivation(act_, yr, g.ow * g.m);
    }
  });
#else
  (void)x, (void)bias, (void)z, (void)y, (void)pool;
  Fail(ErrorCode::kInternal, "direct NHWC conv needs AVX-512");
#endif
}

}  // namespace oneflow
