// SGEMM. Default (oneDNN built in, raw operands): one oneDNN sgemm per output slab, each
// single-threaded on one of our pool threads, so the session's thread count rules and no OpenMP
// team spins (products of >= 2 GFLOP excepted: they use oneDNN's own team, see DnnlSgemm); measured ~90% (1 thread) / ~86% (2 threads) of FMA peak at 2048^3 vs ~85% / ~81% for
// our own kernel (bench/gemm_bench.cc). Otherwise (pre-packed operands, no oneDNN): BLIS-style
// blocking (a KC x NC block of B shared by all threads, MC x KC blocks of A per task) around a
// 14x32 register-tile microkernel (AVX-512 registers; on AVX2, blocks of up to 5x16: Avx2Block). Either
// way the epilogue runs on each finished tile/slab.
#include "kernels/cpu/gemm.h"

#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "base/error.h"

#if defined(ONEFLOW_HAVE_DNNL)
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#endif
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

constexpr int64_t kMR = 14;    // rows of the register tile
constexpr int64_t kNR = 32;    // columns of the register tile (two zmm)
// Blocking, tuned by measurement on Zen 4/5 (L1 48 KiB, L2 1 MiB, L3 32 MiB): the cost that matters
// most is loading/storing the C tile once per KC step (its 14 rows often share L1 sets when ldc is
// a power of two), so KC is large; B panels then stream from L2, which sustains the FMA rate.
constexpr int64_t kKC = 1024;         // depth per pass: a KC x NR panel of B is 128 KiB (L2)
constexpr int64_t kNC = 2048;         // a KC x NC block of B (8 MiB) lives in L3
constexpr int64_t kMCMax = kMR * 4;   // an MC x KC block of A (224 KiB) lives in L2

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grow-only aligned scratch, one per thread, so small GEMMs do not hit malloc.
struct ScratchBuffer {
  float* p = nullptr;
  size_t cap = 0;
  float* Get(size_t n) {
    if (n > cap) {
      std::free(p);
      size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
      p = static_cast<float*>(std::aligned_alloc(64, bytes));
      OF_CHECK(p != nullptr, kOutOfMemory, "GEMM scratch allocation of ", bytes, " bytes failed");
      cap = n;
    }
    return p;
  }
  ~ScratchBuffer() { std::free(p); }
};
thread_local ScratchBuffer tl_a_scratch;
thread_local ScratchBuffer tl_b_scratch;

// Rows [i0, i0+mr) x depth [k0, k0+kc) of op(A) into one panel laid out dst[k * MR + i],
// zero-padded to MR rows so the microkernel never branches on the row count inside its loop.
void PackAPanel(const float* A, int64_t lda, bool trans, int64_t i0, int64_t mr, int64_t k0, int64_t kc, float* dst) {
  if (!trans) {
    for (int64_t i = 0; i < mr; ++i) {
      const float* src = A + (i0 + i) * lda + k0;
      for (int64_t k = 0; k < kc; ++k) dst[k * kMR + i] = src[k];
    }
  } else {
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = A + (k0 + k) * lda + i0;
      for (int64_t i = 0; i < mr; ++i) dst[k * kMR + i] = src[i];
    }
  }
  if (mr < kMR)
    for (int64_t k = 0; k < kc; ++k)
      for (int64_t i = mr; i < kMR; ++i) dst[k * kMR + i] = 0.0f;
}

// Depth [k0, k0+kc) x columns [j0, j0+nr) of op(B) into dst[k * NR + j], zero-padded to NR.
void PackBPanel(const float* B, int64_t ldb, bool trans, int64_t k0, int64_t kc, int64_t j0, int64_t nr, float* dst) {
  if (!trans) {
    for (int64_t k = 0; k < kc; ++k) {
      const float* src = B + (k0 + k) * ldb + j0;
      float* d = dst + k * kNR;
      for (int64_t j = 0; j < nr; ++j) d[j] = src[j];
      for (int64_t j = nr; j < kNR; ++j) d[j] = 0.0f;
    }
  } else {
    for (int64_t j = 0; j < nr; ++j) {
      const float* src = B + (j0 + j) * ldb + k0;
      for (int64_t k = 0; k < kc; ++k) dst[k * kNR + j] = src[k];
    }
    if (nr < kNR)
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t j = nr; j < kNR; ++j) dst[k * kNR + j] = 0.0f;
  }
}

#if ONEFLOW_ISA_AVX2 && !ONEFLOW_ISA_AVX512
// AVX2 has 16 ymm registers: the 14 x 32 tile is computed as blocks of up to 5 rows x 16 columns
// (10 accumulators, 2 B vectors and 1 broadcast A value), each over the whole depth. The packed
// panels keep their AVX-512 layout (A: kMR values per k, B: kNR per k); a block reads its rows and
// its half of each B row from them.
template <int RB>
void Avx2Block(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t nvalid, float alpha,
               float cbeta) {
  __m256 acc0[RB], acc1[RB];
#pragma GCC unroll 5
  for (int r = 0; r < RB; ++r) {
    acc0[r] = _mm256_setzero_ps();
    acc1[r] = _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b);
    const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 5
    for (int r = 0; r < RB; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r);
      acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
    }
    a += kMR;
    b += kNR;
  }
  const __m256 va = _mm256_set1_ps(alpha);
  const __m256 vb = _mm256_set1_ps(cbeta);
  // Unrolled like the loops above: indexed by a run-time r, the accumulators would live in memory,
  // and GCC then stores every one of them on every k (measured 36% of peak).
#pragma GCC unroll 5
  for (int r = 0; r < RB; ++r) {
    float* cr = c + r * ldc;
    __m256 v0 = _mm256_mul_ps(va, acc0[r]);
    __m256 v1 = _mm256_mul_ps(va, acc1[r]);
    if (nvalid >= 16) {
      if (cbeta != 0.0f) {
        v0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr), v0);
        v1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8), v1);
      }
      _mm256_storeu_ps(cr, v0);
      _mm256_storeu_ps(cr + 8, v1);
    } else {  // a right-edge tile: no masked stores on AVX2, so finish through the stack
      alignas(32) float tmp[16];
      _mm256_store_ps(tmp, v0);
      _mm256_store_ps(tmp + 8, v1);
      for (int64_t j = 0; j < nvalid; ++j) cr[j] = tmp[j] + (cbeta != 0.0f ? cbeta * cr[j] : 0.0f);
    }
  }
}

// Rows [R0, R) of the tile in blocks of at most 5, as even as they go (14 = 5 + 5 + 4), each block
// for both 16-column halves that hold valid columns. An FMA has 4 cycles of latency on 2 pipes, so
// a block wants 8 independent accumulators to keep both busy; 6 + 6 + 2 would leave a 2-row block
// with 4 (the split is by that count, not measured apart from the unrolled epilogue above).
template <int R, int R0 = 0>
void Avx2Tile(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t nvalid, float alpha,
              float cbeta) {
  if constexpr (R0 < R) {
    constexpr int kBlocks = (R - R0 + 4) / 5;
    constexpr int RB = (R - R0 + kBlocks - 1) / kBlocks;
    for (int64_t h = 0; h < kNR && h < nvalid; h += 16)
      Avx2Block<RB>(kc, a + R0, b + h, c + R0 * ldc + h, ldc, nvalid - h, alpha, cbeta);
    Avx2Tile<R, R0 + RB>(kc, a, b, c, ldc, nvalid, alpha, cbeta);
  }
}
#endif

// C[R x nvalid] = alpha * (A panel x B panel) + cbeta * C. cbeta == 0 never reads C.
template <int R>
void MicroKernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int64_t nvalid, float alpha,
                 float cbeta) {
#if ONEFLOW_ISA_AVX512
  __m512 acc0[R], acc1[R];
#pragma GCC unroll 14
  for (int r = 0; r < R; ++r) {
    // Start fetching the C tile now: its lines arrive while the k loop runs.
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_T0);
    acc0[r] = _mm512_setzero_ps();
    acc1[r] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b);
    const __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 14
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r]);
      acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
    }
    a += kMR;
    b += kNR;
  }
  const __mmask16 m0 = nvalid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nvalid) - 1);
  const __mmask16 m1 = nvalid >= 32 ? __mmask16(0xFFFF) : nvalid > 16 ? __mmask16((1u << (nvalid - 16)) - 1) : 0;
  const __m512 va = _mm512_set1_ps(alpha);
  const __m512 vb = _mm512_set1_ps(cbeta);
#pragma GCC unroll 14
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    __m512 v0 = _mm512_mul_ps(va, acc0[r]);
    __m512 v1 = _mm512_mul_ps(va, acc1[r]);
    if (cbeta != 0.0f) {
      v0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), v0);
      v1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), v1);
    }
    _mm512_mask_storeu_ps(cr, m0, v0);
    _mm512_mask_storeu_ps(cr + 16, m1, v1);
  }
#elif ONEFLOW_ISA_AVX2
  Avx2Tile<R>(kc, a, b, c, ldc, nvalid, alpha, cbeta);
#else
  float acc[R][kNR] = {};
  for (int64_t k = 0; k < kc; ++k) {
    for (int r = 0; r < R; ++r)
      for (int64_t j = 0; j < kNR; ++j) acc[r][j] += a[r] * b[j];
    a += kMR;
    b += kNR;
  }
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    for (int64_t j = 0; j < nvalid; ++j) cr[j] = alpha * acc[r][j] + (cbeta != 0.0f ? cbeta * cr[j] : 0.0f);
  }
#endif
}

using MicroKernelFn = void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, float, float);

template <size_t... I>
constexpr auto MakeKernelTable(std::index_sequence<I...>) {
  return std::array<MicroKernelFn, sizeof...(I)>{&MicroKernel<static_cast<int>(I) + 1>...};
}
const auto kKernels = MakeKernelTable(std::make_index_sequence<kMR>{});

void ApplyEpilogueTile(const GemmEpilogue& ep, float* C, int64_t ldc, int64_t i0, int64_t rows, int64_t j0,
                       int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* c = C + (i0 + r) * ldc + j0;
    if (ep.row_bias) {
      const float rb = ep.row_bias[i0 + r];
      for (int64_t j = 0; j < cols; ++j) c[j] += rb;
    }
    if (ep.col_bias) {
      const float* cb = ep.col_bias + j0;
      for (int64_t j = 0; j < cols; ++j) c[j] += cb[j];
    }
    if (ep.residual) {
      const float* res = ep.residual + (i0 + r) * ldc + j0;
      for (int64_t j = 0; j < cols; ++j) c[j] += res[j];
    }
    ApplyActivation(ep.act, c, cols);
  }
}

}  // namespace

struct GemmImpl {
  static const float* Data(const PackedMatrix& p) { return p.data_.get(); }
  static PackedMatrix Make(bool is_a, int64_t rows, int64_t cols, size_t n) {
    PackedMatrix p;
    p.is_a_ = is_a;
    p.rows_ = rows;
    p.cols_ = cols;
    size_t bytes = (std::max<size_t>(n, 16) * sizeof(float) + 63) / 64 * 64;
    float* d = static_cast<float*>(std::aligned_alloc(64, bytes));
    OF_CHECK(d != nullptr, kOutOfMemory, "packing a ", rows, "x", cols, " GEMM operand failed");
    p.data_ = std::shared_ptr<float>(d, [](float* q) { std::free(q); });
    return p;
  }
  static float* MutableData(PackedMatrix& p) { return p.data_.get(); }
};

// Packed layouts: depth blocks of KC one after another; inside a block (depth kc), panel q of MR
// rows (A) / NR columns (B) starts at q * MR * kc (q * NR * kc). Block p starts at p*KC*padded.
PackedMatrix PackGemmA(int64_t M, int64_t K, const float* A, int64_t lda, bool trans) {
  const int64_t mpad = CeilDiv(M, kMR) * kMR;
  PackedMatrix p = GemmImpl::Make(true, M, K, static_cast<size_t>(mpad * K));
  float* d = GemmImpl::MutableData(p);
  for (int64_t pc = 0; pc < K; pc += kKC) {
    const int64_t kc = std::min(kKC, K - pc);
    for (int64_t q = 0; q * kMR < M; ++q)
      PackAPanel(A, lda, trans, q * kMR, std::min(kMR, M - q * kMR), pc, kc, d + pc * mpad + q * kMR * kc);
  }
  return p;
}

PackedMatrix PackGemmB(int64_t K, int64_t N, const float* B, int64_t ldb, bool trans) {
  const int64_t npad = CeilDiv(N, kNR) * kNR;
  PackedMatrix p = GemmImpl::Make(false, K, N, static_cast<size_t>(npad * K));
  float* d = GemmImpl::MutableData(p);
  for (int64_t pc = 0; pc < K; pc += kKC) {
    const int64_t kc = std::min(kKC, K - pc);
    for (int64_t q = 0; q * kNR < N; ++q)
      PackBPanel(B, ldb, trans, pc, kc, q * kNR, std::min(kNR, N - q * kNR), d + pc * npad + q * kNR * kc);
  }
  return p;
}

namespace {
// libdnnl is built on OpenMP and already pulled libgomp in; its thread count is per calling thread.
struct OmpFns {
  void (*set)(int) = nullptr;
  int (*get)() = nullptr;
};
const OmpFns& Omp() {
  static const OmpFns fns = [] {
    OmpFns f;
#if defined(ONEFLOW_HAVE_DNNL)
    if (void* lib = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
      f.set = reinterpret_cast<void (*)(int)>(dlsym(lib, "omp_set_num_threads"));
      f.get = reinterpret_cast<int (*)()>(dlsym(lib, "omp_get_max_threads"));
      if (!f.set || !f.get) f = OmpFns();
    }
#endif
    return f;
  }();
  return fns;
}
}  // namespace

bool DnnlSingleThreadScope::Available() { return Omp().set != nullptr; }
DnnlSingleThreadScope::DnnlSingleThreadScope() {
  if (!Available()) return;
  previous_ = Omp().get();
  if (previous_ != 1) Omp().set(1);
}
DnnlSingleThreadScope::~DnnlSingleThreadScope() {
  if (Available() && previous_ != 1 && previous_ > 0) Omp().set(previous_);
}

bool DnnlGemmEnabled() {
#if defined(ONEFLOW_HAVE_DNNL)
  return DnnlSingleThreadScope::Available() && DnnlGemmSwitchOn();
#else
  return false;
#endif
}

// Widest output for which a pre-packed B is multiplied by oneDNN from its raw data (Sgemm).
constexpr int64_t kDnnlMaxPackedN = 192;
bool GemmPrefersRawB(int64_t N) { return N <= kDnnlMaxPackedN && DnnlGemmEnabled(); }

#if defined(ONEFLOW_HAVE_DNNL)
// Splits C into one slab per thread (rows, or columns when M is small) and runs oneDNN's sgemm
// single-threaded on each; the epilogue runs on each slab right after. False if oneDNN refused.
// Products at least this large run on oneDNN's own thread team (see DnnlSgemm).
constexpr double kOmpTeamMinFlops = 2e9;

static bool DnnlSgemm(int64_t M, int64_t N, int64_t K, float alpha, const GemmOperand& A, const GemmOperand& B,
                      float beta, float* C, int64_t ldc, const GemmEpilogue* ep, ThreadPool* pool) {
  int64_t parts = pool ? pool->num_threads() : 1;
  const double flops = 2.0 * static_cast<double>(M) * N * K;
  if (flops < 4e6) parts = 1;
  if (parts > 1 && flops >= kOmpTeamMinFlops) {
    // A very large product: oneDNN's own OpenMP team of `parts` threads shares one packed copy of
    // B, where one call per slab would pack it once per thread (measured at 2048^3 on 2 cores:
    // ~88% of FMA peak vs ~82%). The team's idle spin afterwards is short next to such a GEMM.
    const int previous = Omp().get();
    Omp().set(static_cast<int>(parts));
    const bool good = dnnl_sgemm(A.trans ? 'T' : 'N', B.trans ? 'T' : 'N', M, N, K, alpha, A.data, A.ld, B.data, B.ld,
                                 beta, C, ldc) == dnnl_success;
    Omp().set(previous);
    if (good && ep) {
      pool->ParallelFor(M, static_cast<double>(N) * 4.0, [&](int64_t i0, int64_t i1) {
        ApplyEpilogueTile(*ep, C, ldc, i0, i1 - i0, 0, N);
      });
    }
    return good;
  }
  const bool split_rows = M >= 16 * parts || N < 64 * parts;
  parts = std::max<int64_t>(1, std::min(parts, split_rows ? CeilDiv(M, 8) : CeilDiv(N, 16)));
  std::atomic<bool> ok{true};
  auto run = [&](int64_t begin, int64_t end) {
    DnnlSingleThreadScope single_threaded;
    for (int64_t p = begin; p < end; ++p) {
      int64_t i0 = 0, i1 = M, j0 = 0, j1 = N;
      if (split_rows) {
        i0 = M * p / parts;
        i1 = M * (p + 1) / parts;
      } else {  // column slabs on 16-float boundaries
        j0 = std::min(N, CeilDiv(N * p / parts, 16) * 16);
        j1 = p + 1 == parts ? N : std::min(N, CeilDiv(N * (p + 1) / parts, 16) * 16);
      }
      if (i1 <= i0 || j1 <= j0) continue;
      const float* a = A.trans ? A.data + i0 : A.data + i0 * A.ld;
      const float* b = B.trans ? B.data + j0 * B.ld : B.data + j0;
      float* c = C + i0 * ldc + j0;
      if (dnnl_sgemm(A.trans ? 'T' : 'N', B.trans ? 'T' : 'N', i1 - i0, j1 - j0, K, alpha, a, A.ld, b, B.ld, beta, c,
                     ldc) != dnnl_success) {
        ok = false;
        continue;
      }
      if (ep) ApplyEpilogueTile(*ep, C, ldc, i0, i1 - i0, j0, j1 - j0);
    }
  };
  if (pool && parts > 1) pool->ParallelFor(parts, flops / static_cast<double>(parts), run);
  else run(0, parts);
  return ok;
}
#endif

namespace {

// A few rows of A against a pre-packed B (batch-1 and small-batch inference). B's panels are
// contiguous over k, so each output panel is a streamed sum at memory bandwidth, with no packing
// of A and no row blocking; threads split the column panels. kRows is a template parameter so the
// accumulators stay in registers; even and odd k use separate accumulators to hide FMA latency.
constexpr int64_t kGemvMaxRows = 4;

template <int kRows>
void GemvPanels(int64_t N, int64_t K, float alpha, const GemmOperand& A, const float* bp, int64_t npad, float beta,
                float* C, int64_t ldc, const GemmEpilogue* ep, int64_t q0, int64_t q1) {
  auto a_at = [&](int64_t i, int64_t k) { return A.trans ? A.data[k * A.ld + i] : A.data[i * A.ld + k]; };
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t j = q * kNR, nvalid = std::min(kNR, N - j);
    float acc0[kRows][kNR] = {}, acc1[kRows][kNR] = {};
    for (int64_t pc = 0; pc < K; pc += kKC) {
      const int64_t kc = std::min(kKC, K - pc);
      const float* panel = bp + pc * npad + q * kNR * kc;
      int64_t k = 0;
      for (; k + 1 < kc; k += 2) {
        const float* b0 = panel + k * kNR;
        const float* b1 = b0 + kNR;
        for (int i = 0; i < kRows; ++i) {
          const float a0 = a_at(i, pc + k), a1 = a_at(i, pc + k + 1);
          for (int64_t l = 0; l < kNR; ++l) acc0[i][l] += a0 * b0[l];
          for (int64_t l = 0; l < kNR; ++l) acc1[i][l] += a1 * b1[l];
        }
      }
      for (; k < kc; ++k) {
        const float* b0 = panel + k * kNR;
        for (int i = 0; i < kRows; ++i) {
          const float a0 = a_at(i, pc + k);
          for (int64_t l = 0; l < kNR; ++l) acc0[i][l] += a0 * b0[l];
        }
      }
    }
    for (int i = 0; i < kRows; ++i) {
      float* c = C + i * ldc + j;
      for (int64_t l = 0; l < nvalid; ++l) {
        const float v = alpha * (acc0[i][l] + acc1[i][l]);
        c[l] = beta == 0.0f ? v : v + beta * c[l];
      }
    }
    if (ep) ApplyEpilogueTile(*ep, C, ldc, 0, kRows, j, nvalid);
  }
}

void SgemvPacked(int64_t M, int64_t N, int64_t K, float alpha, const GemmOperand& A, const PackedMatrix& B,
                 float beta, float* C, int64_t ldc, const GemmEpilogue* ep, ThreadPool* pool) {
  const int64_t npad = CeilDiv(N, kNR) * kNR, n_panels = npad / kNR;
  const float* bp = GemmImpl::Data(B);
  auto task = [&](int64_t q0, int64_t q1) {
    switch (M) {
      case 1: GemvPanels<1>(N, K, alpha, A, bp, npad, beta, C, ldc, ep, q0, q1); break;
      case 2: GemvPanels<2>(N, K, alpha, A, bp, npad, beta, C, ldc, ep, q0, q1); break;
      case 3: GemvPanels<3>(N, K, alpha, A, bp, npad, beta, C, ldc, ep, q0, q1); break;
      default: GemvPanels<4>(N, K, alpha, A, bp, npad, beta, C, ldc, ep, q0, q1); break;
    }
  };
  // Per panel: M*K*kNR FMAs, ~16 lanes per cycle, bounded by streaming K*kNR floats of B.
  const double cost = static_cast<double>(K) * kNR * static_cast<double>(std::max<int64_t>(M, 2)) / 16.0;
  if (pool) pool->ParallelFor(n_panels, cost, task);
  else task(0, n_panels);
}

}  // namespace

void Sgemm(int64_t M, int64_t N, int64_t K, float alpha, const GemmOperand& A, const GemmOperand& B, float beta,
           float* C, int64_t ldc, const GemmEpilogue* epilogue, ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  if (A.packed) OF_ASSERT(A.packed->is_a() && A.packed->rows() == M && A.packed->cols() == K);
  if (B.packed) OF_ASSERT(!B.packed->is_a() && B.packed->rows() == K && B.packed->cols() == N);
  const GemmEpilogue* ep = epilogue && !epilogue->empty() ? epilogue : nullptr;
  if (K <= 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    if (ep) ApplyEpilogueTile(*ep, C, ldc, 0, M, 0, N);
    return;
  }
  if (B.packed && !A.packed && M <= kGemvMaxRows) {
    SgemvPacked(M, N, K, alpha, A, *B.packed, beta, C, ldc, ep, pool);
    return;
  }
#if defined(ONEFLOW_HAVE_DNNL)
  // Pre-packed B with its raw data alongside: oneDNN for narrow outputs. There packing the rows of
  // A costs as much as the product itself and the 14-row tiles fit M badly; measured (1 and 2
  // threads) 16x128x4096: 82 vs 129 us, 64x10x1024: 14 vs 57 us; from N = 256 on a tie, and at
  // N = 1024 our kernel wins (64x1024x1024: 689 vs 733 us).
  const bool b_raw = !B.packed || (B.data != nullptr && GemmPrefersRawB(N));
  if (!A.packed && b_raw && DnnlGemmEnabled() && DnnlSgemm(M, N, K, alpha, A, B, beta, C, ldc, ep, pool)) return;
#endif
  const int threads = pool ? pool->num_threads() : 1;
  // Row blocks: at most kMCMax rows, and a multiple of the thread count so no thread idles.
  int64_t n_ic = CeilDiv(M, kMCMax);
  if (threads > 1 && n_ic > 1) n_ic = CeilDiv(n_ic, threads) * threads;
  const int64_t mc = CeilDiv(CeilDiv(M, n_ic), kMR) * kMR;
  n_ic = CeilDiv(M, mc);
  const int64_t mpad = CeilDiv(M, kMR) * kMR;
  const int64_t npad = CeilDiv(N, kNR) * kNR;

  for (int64_t jc = 0; jc < N; jc += kNC) {
    const int64_t nc = std::min(kNC, N - jc);
    const int64_t n_panels = CeilDiv(nc, kNR);
    // Too few row blocks to occupy every thread: also split the column panels.
    const int64_t n_jg = threads > 1 && n_ic < 2 * threads ? std::min(n_panels, CeilDiv(2 * threads, n_ic)) : 1;
    for (int64_t pc = 0; pc < K; pc += kKC) {
      const int64_t kc = std::min(kKC, K - pc);
      const bool last = pc + kc == K;
      const float cbeta = pc == 0 ? beta : 1.0f;
      const float* bp;
      if (B.packed) {
        bp = GemmImpl::Data(*B.packed) + pc * npad + jc * kc;
      } else {
        float* buf = tl_b_scratch.Get(static_cast<size_t>(n_panels * kNR * kc));
        auto pack = [&](int64_t begin, int64_t end) {
          for (int64_t q = begin; q < end; ++q)
            PackBPanel(B.data, B.ld, B.trans, pc, kc, jc + q * kNR, std::min(kNR, jc + nc - (jc + q * kNR)),
                       buf + q * kNR * kc);
        };
        if (pool) pool->ParallelFor(n_panels, static_cast<double>(kc * kNR), pack);
        else pack(0, n_panels);
        bp = buf;
      }
      // With several column groups per row block, each task would pack the same rows of A again:
      // pack them once here instead (the few-rows case of small-batch fully connected layers).
      const float* shared_a = nullptr;
      if (!A.packed && n_jg > 1) {
        float* buf = tl_a_scratch.Get(static_cast<size_t>(mpad * kc));
        auto pack = [&](int64_t begin, int64_t end) {
          for (int64_t q = begin; q < end; ++q)
            PackAPanel(A.data, A.ld, A.trans, q * kMR, std::min(kMR, M - q * kMR), pc, kc, buf + q * kMR * kc);
        };
        const int64_t a_panels = CeilDiv(M, kMR);
        if (pool) pool->ParallelFor(a_panels, static_cast<double>(kc * kMR), pack);
        else pack(0, a_panels);
        shared_a = buf;
      }
      auto task = [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t ic = t / n_jg, jg = t % n_jg;
          const int64_t i0 = ic * mc, m_blk = std::min(mc, M - i0);
          const int64_t p0 = jg * n_panels / n_jg, p1 = (jg + 1) * n_panels / n_jg;
          const float* ap;
          if (A.packed) {
            ap = GemmImpl::Data(*A.packed) + pc * mpad + i0 * kc;
          } else if (shared_a) {
            ap = shared_a + i0 * kc;
          } else {
            float* buf = tl_a_scratch.Get(static_cast<size_t>(CeilDiv(m_blk, kMR) * kMR * kc));
            for (int64_t ir = 0; ir < m_blk; ir += kMR)
              PackAPanel(A.data, A.ld, A.trans, i0 + ir, std::min(kMR, m_blk - ir), pc, kc, buf + ir * kc);
            ap = buf;
          }
          for (int64_t q = p0; q < p1; ++q) {
            const int64_t j = jc + q * kNR;
            const int64_t nvalid = std::min(kNR, jc + nc - j);
            for (int64_t ir = 0; ir < m_blk; ir += kMR) {
              const int64_t rows = std::min(kMR, m_blk - ir);
              kKernels[static_cast<size_t>(rows - 1)](kc, ap + ir * kc, bp + q * kNR * kc, C + (i0 + ir) * ldc + j,
                                                      ldc, nvalid, alpha, cbeta);
              if (last && ep) ApplyEpilogueTile(*ep, C, ldc, i0 + ir, rows, j, nvalid);
            }
          }
        }
      };
      const int64_t tasks = n_ic * n_jg;
      const double cost = 2.0 * static_cast<double>(mc) * static_cast<double>(nc / n_jg + 1) * kc / 48.0;
      if (pool) pool->ParallelFor(tasks, cost, task);
      else task(0, tasks);
    }
  }
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
