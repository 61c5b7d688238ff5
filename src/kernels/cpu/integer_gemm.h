// The 8-bit integer GEMM under every quantized matmul and conv: Y = (A - za) x (B - zb) in int32,
// with a zero point per row of A and per column of B. Used by MatMulInteger, QLinearMatMul,
// MatMulIntegerToFloat and DynamicQuantizeMatMul (matmul_integer.cc) and by ConvInteger and
// QLinearConv (quantized_conv.cc), which add their own epilogues on the int32 result.
//
// Differences of 8-bit values fit int16, so both operands are widened once with their zero points
// subtracted, which makes every type pair (u8/s8 x u8/s8) and every zero point one code path, and
// multiplied as int16 pairs into int32 (x86's multiply-add-pairs: two products per 32-bit lane).
// B is packed as panels of kPanel columns, K taken two at a time: panel[k / 2][column][k % 2], so a
// broadcast pair of A values times one panel row gives kPanel column sums. Sums cannot overflow
// int32 for K < 2^15 (|a - za| * |b - zb| <= 255 * 255). Where the CPU has AVX-512 VNNI, uint8 x
// int8 (what onnxruntime's quantizers write) takes a byte path instead (below).
//
// Included by kernels/cpu files before their own ISA region opens: it opens one itself, so like
// theirs its code is compiled once per ISA tier.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/tensor.h"
#include "base/thread_pool.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace integer_gemm {

constexpr int64_t kPanel = 64;   // columns of B per packed panel
constexpr int64_t kMaxRows = 4;  // rows of A per micro-tile
constexpr int64_t kMaxK = int64_t{1} << 15;  // int32 sums stay exact below this depth

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

#if ONEFLOW_ISA_AVX512
// The AVX-512 loop both paths share: kRows rows x kPanel columns in 4 x kRows accumulators. A step
// broadcasts 4 bytes of each A row (an int16 pair, or four uint8) against the panel's next 256
// bytes (64 columns of an int16 pair, or of four int8): mac(acc, a, b) adds their products to acc
// in place.
template <int kRows, typename Mac>
inline void Accumulate512(const uint8_t* a, int64_t lda_bytes, const uint8_t* panel, int64_t steps,
                          __m512i (&s)[kRows][4], Mac mac) {
  for (int r = 0; r < kRows; ++r)
    for (int q = 0; q < 4; ++q) s[r][q] = _mm512_setzero_si512();
  for (int64_t step = 0; step < steps; ++step, panel += 256) {
    __m512i b[4];
    for (int q = 0; q < 4; ++q) b[q] = _mm512_loadu_si512(panel + q * 64);
    for (int r = 0; r < kRows; ++r) {
      int32_t group;
      std::memcpy(&group, a + r * lda_bytes + 4 * step, 4);
      const __m512i av = _mm512_set1_epi32(group);
      for (int q = 0; q < 4; ++q) mac(s[r][q], av, b[q]);
    }
  }
}
#endif

// Y[r][0..cols) (row stride ldy) = sum over k of a[r][k] * panel, for kRows rows of widened A
// (row stride lda, zero-padded to an even K).
template <int kRows>
void MicroTile(const int16_t* a, int64_t lda, const int16_t* panel, int64_t k_pairs, int32_t* y, int64_t ldy,
               int64_t cols) {
  alignas(64) int32_t acc[kRows][kPanel];
#if ONEFLOW_ISA_AVX512
  __m512i s[kRows][4];
  Accumulate512<kRows>(reinterpret_cast<const uint8_t*>(a), lda * 2, reinterpret_cast<const uint8_t*>(panel), k_pairs,
                       s, [](__m512i& acc, __m512i x, __m512i y) {
#if ONEFLOW_ISA_AVX512VNNI
                         acc = _mm512_dpwssd_epi32(acc, x, y);  // VNNI fuses the multiply-add-pairs and the add
#else
                         acc = _mm512_add_epi32(acc, _mm512_madd_epi16(x, y));
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
// The VNNI path for uint8 A x int8 B: vpdpbusd multiplies four unsigned bytes of A by four signed
// bytes of B into each int32 lane, twice the products of the int16 path per instruction. Zero
// points come after, from the sums:
//   sum (a - za)(b - zb) = sum ab - zb * sum a - za * sum b + K * za * zb.
// B is packed as panels of [ceil(K / 4)][kPanel][4] int8 with its column sums.
// The full 4-row tile, the hot loop of every quantized model: sixteen named accumulators updated
// in place by inline assembly. Written through the intrinsic on an array (Accumulate512), GCC 12
// copies every accumulator through a second register around each vpdpbusd (and spills one), which
// costs about a third of the kernel's time.
inline void Accumulate4RowsU8S8(const uint8_t* a, int64_t lda, const uint8_t* panel, int64_t steps,
                                __m512i (&s)[4][4]) {
  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
  __m512i c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
#define OF_DPBUSD(c, x, y) asm("vpdpbusd %2, %1, %0" : "+v"(c) : "v"(x), "v"(y))
  for (int64_t step = 0; step < steps; ++step, panel += 256) {
    const __m512i b0 = _mm512_loadu_si512(panel), b1 = _mm512_loadu_si512(panel + 64);
    const __m512i b2 = _mm512_loadu_si512(panel + 128), b3 = _mm512_loadu_si512(panel + 192);
    int32_t g0, g1, g2, g3;
    std::memcpy(&g0, a + 4 * step, 4);
    std::memcpy(&g1, a + lda + 4 * step, 4);
    std::memcpy(&g2, a + 2 * lda + 4 * step, 4);
    std::memcpy(&g3, a + 3 * lda + 4 * step, 4);
    const __m512i a0 = _mm512_set1_epi32(g0), a1 = _mm512_set1_epi32(g1);
    const __m512i a2 = _mm512_set1_epi32(g2), a3 = _mm512_set1_epi32(g3);
    OF_DPBUSD(c00, a0, b0); OF_DPBUSD(c01, a0, b1); OF_DPBUSD(c02, a0, b2); OF_DPBUSD(c03, a0, b3);
    OF_DPBUSD(c10, a1, b0); OF_DPBUSD(c11, a1, b1); OF_DPBUSD(c12, a1, b2); OF_DPBUSD(c13, a1, b3);
    OF_DPBUSD(c20, a2, b0); OF_DPBUSD(c21, a2, b1); OF_DPBUSD(c22, a2, b2); OF_DPBUSD(c23, a2, b3);
    OF_DPBUSD(c30, a3, b0); OF_DPBUSD(c31, a3, b1); OF_DPBUSD(c32, a3, b2); OF_DPBUSD(c33, a3, b3);
  }
#undef OF_DPBUSD
  s[0][0] = c00; s[0][1] = c01; s[0][2] = c02; s[0][3] = c03;
  s[1][0] = c10; s[1][1] = c11; s[1][2] = c12; s[1][3] = c13;
  s[2][0] = c20; s[2][1] = c21; s[2][2] = c22; s[2][3] = c23;
  s[3][0] = c30; s[3][1] = c31; s[3][2] = c32; s[3][3] = c33;
}

template <int kRows>
void MicroTileU8S8(const uint8_t* a, int64_t lda, const int32_t* row_sums, const int32_t* za, const int8_t* panel,
                   int64_t k_quads, int64_t k, const int32_t* column_sums, const int32_t* zb, int32_t* y, int64_t ldy,
                   int64_t cols) {
  __m512i s[kRows][4];
  if constexpr (kRows == 4) {
    Accumulate4RowsU8S8(a, lda, reinterpret_cast<const uint8_t*>(panel), k_quads, s);
  } else {
    Accumulate512<kRows>(a, lda, reinterpret_cast<const uint8_t*>(panel), k_quads, s,
                         [](__m512i& acc, __m512i x, __m512i y) { acc = _mm512_dpbusd_epi32(acc, x, y); });
  }
  // acc - zb * row_sum - za * column_sum + K * za * zb, as acc - za * column_sum + zb * (K * za - row_sum),
  // 16 columns a vector; column_sums and zb are padded to whole panels.
  for (int r = 0; r < kRows; ++r) {
    const __m512i za_r = _mm512_set1_epi32(za[r]);
    const __m512i k_za_minus_sum = _mm512_set1_epi32(static_cast<int32_t>(k) * za[r] - row_sums[r]);
    for (int q = 0; q < 4 && q * 16 < cols; ++q) {
      __m512i v = _mm512_sub_epi32(s[r][q], _mm512_mullo_epi32(za_r, _mm512_loadu_si512(column_sums + q * 16)));
      v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_loadu_si512(zb + q * 16), k_za_minus_sum));
      const int64_t left = cols - q * 16;
      const __mmask16 mask = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
      _mm512_mask_storeu_epi32(y + r * ldy + q * 16, mask, v);
    }
  }
}

using MicroTileU8S8Fn = void (*)(const uint8_t*, int64_t, const int32_t*, const int32_t*, const int8_t*, int64_t,
                                 int64_t, const int32_t*, const int32_t*, int32_t*, int64_t, int64_t);
constexpr MicroTileU8S8Fn kMicroTilesU8S8[kMaxRows + 1] = {nullptr, MicroTileU8S8<1>, MicroTileU8S8<2>,
                                                           MicroTileU8S8<3>, MicroTileU8S8<4>};
#endif  // ONEFLOW_ISA_AVX512VNNI

// One byte of `type` (int8 or uint8) at p[i] as an int.
inline int32_t ByteAt(DType type, const void* p, int64_t i) {
  return type == DType::kInt8 ? static_cast<const int8_t*>(p)[i] : static_cast<const uint8_t*>(p)[i];
}

// dst[k] = src[k] - z for one row of A.
template <typename T>
inline void WidenRow(const T* src, int64_t K, int16_t z, int16_t* dst) {
  for (int64_t k = 0; k < K; ++k) dst[k] = static_cast<int16_t>(static_cast<int16_t>(src[k]) - z);
}

// A zero point tensor (absent: 0) as `count` int16 entries: one repeated, or one per row/column.
inline std::vector<int16_t> ZeroPointEntries(const Tensor* t, const std::string& node, const char* name,
                                             int64_t count) {
  std::vector<int16_t> zp(static_cast<size_t>(count), 0);
  if (!t) return zp;
  OF_REQUIRE(t->dtype() == DType::kInt8 || t->dtype() == DType::kUInt8, node, ": ", name, " must be int8 or uint8, got ",
             DTypeName(t->dtype()));
  OF_REQUIRE(t->rank() <= 1 && (t->numel() == 1 || t->numel() == count), node, ": ", name, " ",
             ShapeToString(t->shape()), " must be a scalar or have ", count, " entries");
  for (int64_t i = 0; i < count; ++i)
    zp[static_cast<size_t>(i)] = static_cast<int16_t>(ByteAt(t->dtype(), t->raw(), t->numel() == 1 ? 0 : i));
  return zp;
}

// B (K x N bytes, int8 or uint8, row stride ldb) less its column zero points, packed for
// Multiply. Weights are packed once, at kernel creation; a B that is an input is packed per run.
class PackedB {
 public:
  // `a_type` is the type A will have: uint8 A with int8 B takes the VNNI byte path where the CPU
  // has it. zb: N entries.
  void Pack(const void* b, DType b_type, int64_t ldb, const int16_t* zb, int64_t K, int64_t N, DType a_type) {
    OF_REQUIRE(b_type == DType::kInt8 || b_type == DType::kUInt8, "integer GEMM of ", DTypeName(b_type),
               " (int8 or uint8 only)");
    k_ = K;
    n_ = N;
    panels_ = (N + kPanel - 1) / kPanel;
    a_type_ = a_type;
#if ONEFLOW_ISA_AVX512VNNI
    bytes_ = a_type == DType::kUInt8 && b_type == DType::kInt8;
    if (bytes_) {
      const int8_t* pb = static_cast<const int8_t*>(b);
      k_groups_ = PackPanels<4>(K, N, bytes_data_, [&](int64_t k, int64_t n) { return pb[k * ldb + n]; });
      column_sums_.assign(static_cast<size_t>(panels_ * kPanel), 0);
      zero_points_.assign(static_cast<size_t>(panels_ * kPanel), 0);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) column_sums_[static_cast<size_t>(n)] += pb[k * ldb + n];
      zb_all_zero_ = true;
      for (int64_t n = 0; n < N; ++n) {
        zero_points_[static_cast<size_t>(n)] = zb[n];
        zb_all_zero_ = zb_all_zero_ && zb[n] == 0;
      }
      return;
    }
#endif
    k_groups_ = PackPanels<2>(K, N, pairs_data_, [&](int64_t k, int64_t n) {
      return static_cast<int16_t>(ByteAt(b_type, b, k * ldb + n) - zb[n]);
    });
  }

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }

  // y[M x N] (row stride ldy) = (A - za) x this, A being M x K bytes of the packed-for type (row
  // stride lda), za M entries. Row blocks times panels split across the pool.
  void Multiply(ThreadPool& pool, const void* a, int64_t M, int64_t lda, const int16_t* za, int32_t* y,
                int64_t ldy) const {
    OF_CHECK(k_ < kMaxK, kUnsupported, "K = ", k_, " could overflow the int32 accumulator (at most ", kMaxK - 1, ")");
    const int64_t row_blocks = (M + kMaxRows - 1) / kMaxRows;
    const int64_t K = k_, N = n_;
#if ONEFLOW_ISA_AVX512VNNI
    if (bytes_) {
      // A as the microkernel reads it: rows of a multiple of 4 bytes (a padded copy only when K is
      // not), with its zero points and, where B has nonzero zero points, its row sums.
      const int64_t k4 = k_groups_ * 4;
      std::vector<uint8_t> padded;
      const uint8_t* rows = static_cast<const uint8_t*>(a);
      int64_t row_stride = lda;
      if (k4 != K) {
        padded.assign(static_cast<size_t>(M * k4), 0);
        for (int64_t m = 0; m < M; ++m) std::memcpy(padded.data() + m * k4, rows + m * lda, static_cast<size_t>(K));
        rows = padded.data();
        row_stride = k4;
      }
      std::vector<int32_t> zas(static_cast<size_t>(row_blocks * kMaxRows), 0), sums(zas.size(), 0);
      for (int64_t m = 0; m < M; ++m) {
        zas[static_cast<size_t>(m)] = za[m];
        if (!zb_all_zero_)  // only B's zero points use the row sums: symmetric weights (all 0) skip them
          for (int64_t k = 0; k < K; ++k) sums[static_cast<size_t>(m)] += rows[m * row_stride + k];
      }
      // Row-block major: a thread's consecutive tiles share their rows of A. (Grouping row blocks
      // to reuse each panel of B across them measured slower on 2 threads.)
      pool.ParallelFor(row_blocks * panels_, static_cast<double>(kMaxRows * kPanel * K), [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t rb = t / panels_, p = t % panels_;
          const int64_t m0 = rb * kMaxRows, mr = std::min(kMaxRows, M - m0), n0 = p * kPanel;
          kMicroTilesU8S8[mr](rows + m0 * row_stride, row_stride, sums.data() + m0, zas.data() + m0,
                              bytes_data_.data() + p * k_groups_ * kPanel * 4, k_groups_, K, column_sums_.data() + n0,
                              zero_points_.data() + n0, y + m0 * ldy + n0, ldy, std::min(kPanel, N - n0));
        }
      });
      return;
    }
#endif
    // A - za widened to int16 once, rows zero-padded to an even K.
    const int64_t k_even = k_groups_ * 2;
    std::vector<int16_t> rows(static_cast<size_t>(M * k_even), 0);
    pool.ParallelFor(M, static_cast<double>(K), [&](int64_t m_begin, int64_t m_end) {
      for (int64_t m = m_begin; m < m_end; ++m) {
        if (a_type_ == DType::kInt8) WidenRow(static_cast<const int8_t*>(a) + m * lda, K, za[m], rows.data() + m * k_even);
        else WidenRow(static_cast<const uint8_t*>(a) + m * lda, K, za[m], rows.data() + m * k_even);
      }
    });
    pool.ParallelFor(row_blocks * panels_, static_cast<double>(kMaxRows * kPanel * K), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t rb = t / panels_, p = t % panels_;
        const int64_t m0 = rb * kMaxRows, mr = std::min(kMaxRows, M - m0), n0 = p * kPanel;
        kMicroTiles[mr](rows.data() + m0 * k_even, k_even, pairs_data_.data() + p * k_groups_ * kPanel * 2, k_groups_,
                        y + m0 * ldy + n0, ldy, std::min(kPanel, N - n0));
      }
    });
  }

 private:
  int64_t k_ = 0, n_ = 0, panels_ = 0, k_groups_ = 0;
  DType a_type_ = DType::kUInt8;
  std::vector<int16_t> pairs_data_;
#if ONEFLOW_ISA_AVX512VNNI
  bool bytes_ = false, zb_all_zero_ = false;
  std::vector<int8_t> bytes_data_;
  std::vector<int32_t> column_sums_, zero_points_;  // padded to whole panels
#endif
};

}  // namespace integer_gemm
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
