// CPU kernel: MatMulInteger (graph/ops/quantization.cc): Y = (A - a_zero_point) x (B - b_zero_point)
// in int32, numpy matmul batching; a_zero_point per tensor or per row of A, b_zero_point per
// tensor or per column of B.
//
// Differences of 8-bit values fit int16, so both operands are widened once with their zero points
// subtracted, which makes every type pair (u8/s8 x u8/s8) and every zero point one code path, and
// multiplied as int16 pairs into int32 (x86's multiply-add-pairs: two products per 32-bit lane).
// B is packed as panels of kPanel columns, K taken two at a time: panel[k / 2][column][k % 2], so a
// broadcast pair of A values times one panel row gives kPanel column sums. A constant B (with a
// constant or absent zero point), the weights of a quantized model, is packed once per node. Sums
// cannot overflow int32 for K < 2^15 (|a - za| * |b - zb| <= 255 * 255). Where the CPU has
// AVX-512 VNNI, uint8 x int8 (what dynamic quantization writes) takes a byte path instead (below).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>


#include "kernels/cpu/matmul_shape.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

constexpr int64_t kPanel = 64;  // columns of B per packed panel
constexpr int64_t kMaxRows = 4;  // rows of A per micro-tile

// B - zero point, widened and packed: ceil(N / kPanel) panels of [ceil(K / 2)][kPanel][2] int16,
// zero-padded past N and K.
struct PackedB {
  int64_t k = 0, n = 0, k_pairs = 0, panels = 0;
  std::vector<int16_t> data;
  const int16_t* Panel(int64_t p) const { return data.data() + p * k_pairs * kPanel * 2; }
};

// Writes value(k, n) for the K x N matrix into zero-padded panels of kPanel columns with kGroup
// consecutive k per column: panel[k / kGroup][column][k % kGroup]. Returns ceil(K / kGroup).
template <int kGroup, typename Out, typename F>
int64_t PackPanels(int64_t K, int64_t N, std::vector<Out>& out, F value) {
  const int64_t groups = (K + kGroup - 1) / kGroup, panels = (N + kPanel - 1) / kPanel;
  out.assign(static_cast<size_t>(panels * groups * kPanel * kGroup), Out(0));
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      out[static_cast<size_t>((((n / kPanel) * groups + k / kGroup) * kPanel + n % kPanel) * kGroup + k % kGroup)] =
          value(k, n);
  return groups;
}

template <typename TB>
void PackB(const TB* b, const std::vector<int16_t>& zb, int64_t K, int64_t N, PackedB& out) {
  out.k = K;
  out.n = N;
  out.panels = (N + kPanel - 1) / kPanel;
  out.k_pairs = PackPanels<2>(K, N, out.data, [&](int64_t k, int64_t n) {
    return static_cast<int16_t>(static_cast<int16_t>(b[k * N + n]) - zb[static_cast<size_t>(n)]);
  });
}

#if ONEFLOW_ISA_AVX512
// The AVX-512 loop both paths share: kRows rows x kPanel columns in 4 x kRows accumulators. A step
// broadcasts 4 bytes of each A row (an int16 pair, or four uint8) against the panel's next 256
// bytes (64 columns of an int16 pair, or of four int8): mac(acc, a, b) adds their products.
template <int kRows, typename Mac>
void Accumulate512(const uint8_t* a, int64_t lda_bytes, const uint8_t* panel, int64_t steps, __m512i (&s)[kRows][4],
                   Mac mac) {
  for (int r = 0; r < kRows; ++r)
    for (int q = 0; q < 4; ++q) s[r][q] = _mm512_setzero_si512();
  for (int64_t step = 0; step < steps; ++step, panel += 256) {
    __m512i b[4];
    for (int q = 0; q < 4; ++q) b[q] = _mm512_loadu_si512(panel + q * 64);
    for (int r = 0; r < kRows; ++r) {
      int32_t group;
      std::memcpy(&group, a + r * lda_bytes + 4 * step, 4);
      const __m512i av = _mm512_set1_epi32(group);
      for (int q = 0; q < 4; ++q) s[r][q] = mac(s[r][q], av, b[q]);
    }
  }
}
#endif

// Y[r][0..cols) (row stride ldy) = sum over k of a[r][k] * panel, for `rows` <= kMaxRows rows of
// widened A (row stride lda, zero-padded to an even K).
template <int kRows>
void MicroTile(const int16_t* a, int64_t lda, const int16_t* panel, int64_t k_pairs, int32_t* y, int64_t ldy,
               int64_t cols) {
  alignas(64) int32_t acc[kRows][kPanel];
#if ONEFLOW_ISA_AVX512
  __m512i s[kRows][4];
  Accumulate512<kRows>(reinterpret_cast<const uint8_t*>(a), lda * 2, reinterpret_cast<const uint8_t*>(panel), k_pairs,
                       s, [](__m512i acc, __m512i x, __m512i y) {
#if ONEFLOW_ISA_AVX512VNNI
                         return _mm512_dpwssd_epi32(acc, x, y);  // VNNI fuses the multiply-add-pairs and the add
#else
                         return _mm512_add_epi32(acc, _mm512_madd_epi16(x, y));
#endif
                       });
  for (int r = 0; r < kRows; ++r)
    for (int q = 0; q < 4; ++q) _mm512_store_si512(acc[r] + q * 16, s[r][q]);
#elif ONEFLOW_ISA_AVX2
  for (int quarter = 0; quarter < 4; ++quarter) {  // 8 accumulators of the 16 registers, four times
    __m256i s[kRows][2];
    for (int r = 0; r < kRows; ++r) s[r][0] = s[r][1] = _mm256_setzero_si256();
    for (int64_t kp = 0; kp < k_pairs; ++kp) {
      const int16_t* bp = panel + kp * kPanel * 2 + quarter * 32;
      const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp));
      const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bp + 16));
      for (int r = 0; r < kRows; ++r) {
        int32_t pair;
        std::memcpy(&pair, a + r * lda + 2 * kp, 4);
        const __m256i av = _mm256_set1_epi32(pair);
        s[r][0] = _mm256_add_epi32(s[r][0], _mm256_madd_epi16(av, b0));
        s[r][1] = _mm256_add_epi32(s[r][1], _mm256_madd_epi16(av, b1));
      }
    }
    for (int r = 0; r < kRows; ++r) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(acc[r] + quarter * 16), s[r][0]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(acc[r] + quarter * 16 + 8), s[r][1]);
    }
  }
#else
  for (int r = 0; r < kRows; ++r) std::fill(acc[r], acc[r] + kPanel, 0);
  for (int64_t kp = 0; kp < k_pairs; ++kp) {
    const int16_t* bp = panel + kp * kPanel * 2;
    for (int r = 0; r < kRows; ++r) {
      const int32_t a0 = a[r * lda + 2 * kp], a1 = a[r * lda + 2 * kp + 1];
      for (int64_t c = 0; c < kPanel; ++c) acc[r][c] += a0 * bp[2 * c] + a1 * bp[2 * c + 1];
    }
  }
#endif
  for (int r = 0; r < kRows; ++r) std::memcpy(y + r * ldy, acc[r], static_cast<size_t>(cols) * sizeof(int32_t));
}

using MicroTileFn = void (*)(const int16_t*, int64_t, const int16_t*, int64_t, int32_t*, int64_t, int64_t);
constexpr MicroTileFn kMicroTiles[kMaxRows + 1] = {nullptr, MicroTile<1>, MicroTile<2>, MicroTile<3>, MicroTile<4>};

#if ONEFLOW_ISA_AVX512VNNI
// The VNNI path for uint8 A x int8 B, the pair onnxruntime's dynamic quantizer writes: vpdpbusd
// multiplies four unsigned bytes of A by four signed bytes of B into each int32 lane, twice the
// products of the int16 path per instruction. Zero points come after, from the sums:
//   sum (a - za)(b - zb) = sum ab - zb * sum a - za * sum b + K * za * zb.
// B is packed as panels of [ceil(K / 4)][kPanel][4] int8 with its column sums.
struct PackedB8 {
  int64_t k = 0, n = 0, k_quads = 0, panels = 0;
  std::vector<int8_t> data;
  std::vector<int32_t> column_sums, zero_points;
  const int8_t* Panel(int64_t p) const { return data.data() + p * k_quads * kPanel * 4; }
};

void PackB8(const int8_t* b, const std::vector<int16_t>& zb, int64_t K, int64_t N, PackedB8& out) {
  out.k = K;
  out.n = N;
  out.panels = (N + kPanel - 1) / kPanel;
  out.k_quads = PackPanels<4>(K, N, out.data, [&](int64_t k, int64_t n) { return b[k * N + n]; });
  out.column_sums.assign(static_cast<size_t>(N), 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) out.column_sums[static_cast<size_t>(n)] += b[k * N + n];
  out.zero_points.assign(zb.begin(), zb.end());
}

// Y[r][c] for `kRows` rows of raw A (row stride lda, zero-padded to a multiple of 4) against one
// panel of columns [n0, n0 + cols), zero points applied.
template <int kRows>
void MicroTileU8S8(const uint8_t* a, int64_t lda, const int32_t* row_sums, const int32_t* za, const PackedB8& b,
                   int64_t panel, int32_t* y, int64_t ldy, int64_t cols) {
  __m512i s[kRows][4];
  Accumulate512<kRows>(a, lda, reinterpret_cast<const uint8_t*>(b.Panel(panel)), b.k_quads, s,
                       [](__m512i acc, __m512i x, __m512i y) { return _mm512_dpbusd_epi32(acc, x, y); });
  alignas(64) int32_t acc[kPanel];
  const int64_t n0 = panel * kPanel;
  for (int r = 0; r < kRows; ++r) {
    for (int q = 0; q < 4; ++q) _mm512_store_si512(acc + q * 16, s[r][q]);
    for (int64_t c = 0; c < cols; ++c) {
      const int32_t zb = b.zero_points[static_cast<size_t>(n0 + c)];
      y[r * ldy + c] = acc[c] - zb * row_sums[r] - za[r] * b.column_sums[static_cast<size_t>(n0 + c)] +
                       static_cast<int32_t>(b.k) * za[r] * zb;
    }
  }
}

using MicroTileU8S8Fn = void (*)(const uint8_t*, int64_t, const int32_t*, const int32_t*, const PackedB8&, int64_t,
                                 int32_t*, int64_t, int64_t);
constexpr MicroTileU8S8Fn kMicroTilesU8S8[kMaxRows + 1] = {nullptr, MicroTileU8S8<1>, MicroTileU8S8<2>,
                                                           MicroTileU8S8<3>, MicroTileU8S8<4>};
#endif  // ONEFLOW_ISA_AVX512VNNI

// The zero point of input `index` as `count` int16 entries: one repeated, or one per row/column.
template <typename T>
std::vector<int16_t> ZeroPoints(const Tensor* t, const std::string& node, const char* name, int64_t count) {
  std::vector<int16_t> zp(static_cast<size_t>(count), 0);
  if (!t) return zp;
  OF_REQUIRE(t->rank() <= 1 && (t->numel() == 1 || t->numel() == count), node, ": ", name, " ",
             ShapeToString(t->shape()), " must be a scalar or have ", count, " entries");
  const T* p = t->data<T>();
  for (int64_t i = 0; i < count; ++i) zp[static_cast<size_t>(i)] = static_cast<int16_t>(p[t->numel() == 1 ? 0 : i]);
  return zp;
}

template <typename Fn>
void DispatchByte(DType t, Fn&& fn) {
  if (t == DType::kInt8) return fn(TypeTag<int8_t>{});
  if (t == DType::kUInt8) return fn(TypeTag<uint8_t>{});
  Fail(ErrorCode::kUnsupported, "MatMulInteger of ", DTypeName(t), " (int8 or uint8 only)");
}

class MatMulIntegerKernel final : public OpKernel {
 public:
  explicit MatMulIntegerKernel(const KernelInitContext& init) {
    const Tensor* b = init.constant_input(1);
    const bool zb_known = !init.has_input(3) || init.constant_input(3) != nullptr;
    if (!b || b->rank() != 2 || !zb_known) return;
#if ONEFLOW_ISA_AVX512VNNI
    if (init.has_input(0) && init.input_type(0).dtype == DType::kUInt8 && b->dtype() == DType::kInt8) {
      const int64_t K = b->dim(0), N = b->dim(1);
      PackB8(b->data<int8_t>(), ZeroPoints<int8_t>(init.constant_input(3), init.node().Describe(), "b_zero_point", N),
             K, N, packed_b8_);
      has_packed_b8_ = true;
      return;
    }
#endif
    DispatchByte(b->dtype(), [&](auto tag) {
      using TB = typename decltype(tag)::type;
      const int64_t K = b->dim(0), N = b->dim(1);
      PackB(b->data<TB>(), ZeroPoints<TB>(init.constant_input(3), init.node().Describe(), "b_zero_point", N), K, N,
            packed_b_);
    });
    has_packed_b_ = true;
  }

  void Compute(KernelContext& ctx) override {
#if ONEFLOW_ISA_AVX512VNNI
    if (has_packed_b8_ && ctx.input(0).dtype() == DType::kUInt8) return RunU8S8(ctx);
#endif
    DispatchByte(ctx.input(0).dtype(), [&](auto ta) {
      DispatchByte(ctx.input(1).dtype(), [&](auto tb) {
        Run<typename decltype(ta)::type, typename decltype(tb)::type>(ctx);
      });
    });
  }

 private:
  template <typename TA, typename TB>
  void Run(KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const MatMulShape s = AnalyzeMatMul(a.shape(), b.shape());
    OF_CHECK(s.K < (int64_t{1} << 15), kUnsupported, ctx.node_desc(), ": K = ", s.K,
             " could overflow the int32 accumulator (at most 32767)");
    const std::vector<int16_t> za =
        ZeroPoints<TA>(ctx.has_input(2) ? &ctx.input(2) : nullptr, ctx.node_desc(), "a_zero_point", s.M);
    const int64_t M = s.M, K = s.K, N = s.N, k_even = (K + 1) / 2 * 2;
    const TA* pa = a.data<TA>();
    const TB* pb = b.data<TB>();
    int32_t* py = ctx.output(0).data<int32_t>();
    PackedB per_run;
    const PackedB* packed = has_packed_b_ ? &packed_b_ : &per_run;
    int64_t packed_offset = has_packed_b_ ? 0 : -1;
    const std::vector<int16_t> zb =
        has_packed_b_ ? std::vector<int16_t>()
                      : ZeroPoints<TB>(ctx.has_input(3) ? &ctx.input(3) : nullptr, ctx.node_desc(), "b_zero_point", N);
    const int64_t row_blocks = (M + kMaxRows - 1) / kMaxRows;
    for (int64_t batch = 0; batch < s.BatchCount(); ++batch) {
      int64_t a_off = 0, b_off = 0;
      BatchOffsets(s, batch, a_off, b_off);
      if (!has_packed_b_ && b_off != packed_offset) {  // a broadcast B is packed once
        PackB(pb + b_off, zb, K, N, per_run);
        packed_offset = b_off;
      }
      int32_t* y = py + batch * M * N;
      // Row blocks times panels, split across the pool; each task widens its own rows of A.
      ctx.pool().ParallelFor(row_blocks * packed->panels, static_cast<double>(kMaxRows * kPanel * K),
                             [&](int64_t begin, int64_t end) {
        std::vector<int16_t> rows(static_cast<size_t>(kMaxRows * k_even), 0);
        int64_t widened_block = -1;
        for (int64_t t = begin; t < end; ++t) {
          const int64_t rb = t / packed->panels, p = t % packed->panels;
          const int64_t m0 = rb * kMaxRows, mr = std::min(kMaxRows, M - m0);
          if (rb != widened_block) {
            for (int64_t r = 0; r < mr; ++r) {
              const TA* src = pa + a_off + (m0 + r) * K;
              const int16_t z = za[static_cast<size_t>(m0 + r)];
              int16_t* dst = rows.data() + r * k_even;
              for (int64_t k = 0; k < K; ++k) dst[k] = static_cast<int16_t>(static_cast<int16_t>(src[k]) - z);
            }
            widened_block = rb;
          }
          const int64_t n0 = p * kPanel;
          kMicroTiles[mr](rows.data(), k_even, packed->Panel(p), packed->k_pairs, y + m0 * N + n0, N,
                          std::min(kPanel, N - n0));
        }
      });
    }
  }

#if ONEFLOW_ISA_AVX512VNNI
  void RunU8S8(KernelContext& ctx) {
    const Tensor& a = ctx.input(0);
    const MatMulShape s = AnalyzeMatMul(a.shape(), ctx.input(1).shape());
    OF_CHECK(s.K < (int64_t{1} << 15), kUnsupported, ctx.node_desc(), ": K = ", s.K,
             " could overflow the int32 accumulator (at most 32767)");
    const std::vector<int16_t> za16 =
        ZeroPoints<uint8_t>(ctx.has_input(2) ? &ctx.input(2) : nullptr, ctx.node_desc(), "a_zero_point", s.M);
    const std::vector<int32_t> za(za16.begin(), za16.end());
    const int64_t M = s.M, K = s.K, N = s.N, k4 = (K + 3) / 4 * 4;
    const uint8_t* pa = a.data<uint8_t>();
    int32_t* py = ctx.output(0).data<int32_t>();
    const PackedB8& b = packed_b8_;
    const int64_t row_blocks = (M + kMaxRows - 1) / kMaxRows;
    for (int64_t batch = 0; batch < s.BatchCount(); ++batch) {
      int64_t a_off = 0, b_off = 0;
      BatchOffsets(s, batch, a_off, b_off);
      int32_t* y = py + batch * M * N;
      ctx.pool().ParallelFor(row_blocks * b.panels, static_cast<double>(kMaxRows * kPanel * K),
                             [&](int64_t begin, int64_t end) {
        std::vector<uint8_t> rows(static_cast<size_t>(kMaxRows * k4), 0);
        int32_t row_sums[kMaxRows] = {};
        int64_t copied_block = -1;
        for (int64_t t = begin; t < end; ++t) {
          const int64_t rb = t / b.panels, p = t % b.panels;
          const int64_t m0 = rb * kMaxRows, mr = std::min(kMaxRows, M - m0);
          if (rb != copied_block) {
            for (int64_t r = 0; r < mr; ++r) {
              const uint8_t* src = pa + a_off + (m0 + r) * K;
              std::memcpy(rows.data() + r * k4, src, static_cast<size_t>(K));
              int32_t sum = 0;
              for (int64_t k = 0; k < K; ++k) sum += src[k];
              row_sums[r] = sum;
            }
            copied_block = rb;
          }
          kMicroTilesU8S8[mr](rows.data(), k4, row_sums, za.data() + m0, b, p, y + m0 * N + p * kPanel, N,
                              std::min(kPanel, N - p * kPanel));
        }
      });
    }
  }

  bool has_packed_b8_ = false;
  PackedB8 packed_b8_;
#endif
  bool has_packed_b_ = false;
  PackedB packed_b_;
};
ONEFLOW_KERNEL_CLASS(MatMulInteger, MatMulIntegerKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
