// oneflow_gemm_bench[_<tier>] [n] [trials]: measured multiply-add peak of the tier's instruction set
// (per core, 1 and 2 threads) vs the engine's Sgemm at n^3 (default 2048): its default path (oneDNN
// sgemm slices on our pool when built in) and our own microkernel (AVX-512 14x32, AVX2 6x16 blocks,
// or the baseline's plain loops). oneflow_gemm_bench is the baseline (SSE4.2) copy;
// oneflow_gemm_bench_avx2 and _avx512 the wider ones. oneDNN picks its own ISA unless
// ONEFLOW_MAX_ISA caps it too: ONEFLOW_MAX_ISA=avx2 build/oneflow_gemm_bench_avx2 on an AVX-512 host
// is what an AVX2-only CPU runs. WITH_OPENMP=1 adds oneDNN on its own OpenMP threads (leaves spinning
// OpenMP workers behind, which slow whatever runs next on a 2-core machine). Trials alternate
// between the peak loop and the GEMMs and the best of each is kept, so all see the same load.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "base/cpu_isa.h"
#include "base/thread_pool.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa_region.h"

#if defined(ONEFLOW_HAVE_DNNL)
#include <oneapi/dnnl/dnnl.h>
extern "C" void omp_set_num_threads(int);
#endif

using Clock = std::chrono::steady_clock;

// The peak of the instruction set the GEMM below runs: this file is compiled once per CPU kernel
// tier (oneflow_gemm_bench_<tier>, CMakeLists.txt), as the kernels are, so both the probe and the
// Sgemm it calls are that tier's copy. kChains independent multiply-add chains of one register
// each cover the latency on both pipes (4 cycles x 2 pipes needs 8) and, with the two operands, fit
// the register file: 16 of AVX-512's 32 registers, 12 of the 16 of AVX2 and SSE (16 there spilled
// and measured 66 GFLOP/s where oneDNN's Sgemm ran at 72). SSE has no FMA, so its peak is a multiply
// and an add per lane.
namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
#if ONEFLOW_ISA_AVX512
using PeakVec = __m512;
inline PeakVec PeakSet(float v) { return _mm512_set1_ps(v); }
inline PeakVec PeakStep(PeakVec acc, PeakVec b, PeakVec c) { return _mm512_fmadd_ps(acc, b, c); }
constexpr double kFlopsPerStep = 32;
constexpr int kChains = 16;
constexpr const char* kPeakIsa = "AVX-512 FMA";
#elif ONEFLOW_ISA_AVX2
using PeakVec = __m256;
inline PeakVec PeakSet(float v) { return _mm256_set1_ps(v); }
inline PeakVec PeakStep(PeakVec acc, PeakVec b, PeakVec c) { return _mm256_fmadd_ps(acc, b, c); }
constexpr double kFlopsPerStep = 16;
constexpr int kChains = 12;
constexpr const char* kPeakIsa = "AVX2 FMA";
#else
using PeakVec = __m128;
inline PeakVec PeakSet(float v) { return _mm_set1_ps(v); }
inline PeakVec PeakStep(PeakVec acc, PeakVec b, PeakVec c) { return _mm_add_ps(_mm_mul_ps(acc, b), c); }
constexpr double kFlopsPerStep = 8;
constexpr int kChains = 12;
constexpr const char* kPeakIsa = "SSE mul+add";
#endif

double PeakOneThread(double seconds) {
  PeakVec acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = PeakSet(static_cast<float>(i));
  const PeakVec b = PeakSet(1.0000001f), c = PeakSet(1e-7f);
  long iters = 0;
  auto t0 = Clock::now();
  double elapsed = 0;
  do {
    for (int rep = 0; rep < 10000; ++rep) {
#pragma GCC unroll 16
      for (int i = 0; i < kChains; ++i) acc[i] = PeakStep(acc[i], b, c);
    }
    iters += 10000;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < seconds);
  // Keep the results alive: one lane of each chain, stored.
  float sink = 0;
  for (int i = 0; i < kChains; ++i) {
    float lanes[sizeof(PeakVec) / sizeof(float)];
    std::memcpy(lanes, &acc[i], sizeof(lanes));
    sink += lanes[0];
  }
  if (sink == 1.2345f) std::printf(" ");
  return static_cast<double>(iters) * kChains * kFlopsPerStep / elapsed / 1e9;
}
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
using oneflow::PeakOneThread;

static double PeakThreads(int threads, double seconds) {
  if (threads == 1) return PeakOneThread(seconds);
  std::vector<double> r(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { r[static_cast<size_t>(t)] = PeakOneThread(seconds); });
  for (auto& t : ts) t.join();
  double sum = 0;
  for (double x : r) sum += x;
  return sum;
}

template <typename Fn>
static double TimeIt(Fn&& fn) {
  auto t0 = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int trials = argc > 2 ? std::atoi(argv[2]) : 7;
  if (n <= 0 || trials <= 0) {
    std::fprintf(stderr, "usage: %s [N (default 2048)] [TRIALS (default 7)]\n", argv[0]);
    return 2;
  }
  const double flop = 2.0 * n * n * n;
  std::vector<float> A(static_cast<size_t>(n * n)), B(A.size()), C(A.size());
  for (size_t i = 0; i < A.size(); ++i) {
    A[i] = static_cast<float>((i * 7 % 13) - 6) / 8.0f;
    B[i] = static_cast<float>((i * 5 % 11) - 5) / 8.0f;
  }
  const int tier = ONEFLOW_CPU_TIER;
  if (static_cast<int>(oneflow::DetectedCpuIsa()) < tier) {
    std::printf("this copy runs the %s kernels; this CPU has %s only\n",
                oneflow::CpuIsaName(static_cast<oneflow::CpuIsa>(tier)), oneflow::CpuIsaName(oneflow::DetectedCpuIsa()));
    return 0;
  }
  std::printf("%s; this copy: %s kernels, peak measured as %s\n", oneflow::CpuIsaSummary().c_str(),
              oneflow::CpuIsaName(static_cast<oneflow::CpuIsa>(tier)), oneflow::kPeakIsa);
  std::printf("GEMM %lldx%lldx%lld fp32, best of %d trials\n", static_cast<long long>(n), static_cast<long long>(n),
              static_cast<long long>(n), trials);
  for (int threads = 1; threads <= 2; ++threads) {
    oneflow::ThreadPool pool(threads);
    auto own = [&] {
      oneflow::SetDnnlGemmEnabled(false);
      oneflow::Sgemm(n, n, n, 1.0f, oneflow::GemmOperand::Raw(A.data(), n), oneflow::GemmOperand::Raw(B.data(), n),
                     0.0f, C.data(), n, nullptr, &pool);
      oneflow::SetDnnlGemmEnabled(true);
    };
    auto ours = [&] {
      oneflow::Sgemm(n, n, n, 1.0f, oneflow::GemmOperand::Raw(A.data(), n), oneflow::GemmOperand::Raw(B.data(), n),
                     0.0f, C.data(), n, nullptr, &pool);
    };
    ours();  // warm up (page faults, scratch buffers)
    own();
    double peak = 0, best_ours = 1e30, best_own = 1e30, best_dnnl = 1e30;
    for (int t = 0; t < trials; ++t) {
      double gemm_s = TimeIt(ours);
      best_ours = std::min(best_ours, gemm_s);
      best_own = std::min(best_own, TimeIt(own));
      peak = std::max(peak, PeakThreads(threads, std::max(0.02, gemm_s)));
#if defined(ONEFLOW_HAVE_DNNL)
      if (!std::getenv("WITH_OPENMP")) continue;
      omp_set_num_threads(threads);
      auto dnnl = [&] {
        dnnl_sgemm('N', 'N', n, n, n, 1.0f, A.data(), n, B.data(), n, 0.0f, C.data(), n);
      };
      if (t == 0) dnnl();
      best_dnnl = std::min(best_dnnl, TimeIt(dnnl));
#endif
    }
    const double ours_gf = flop / best_ours / 1e9;
    const double own_gf = flop / best_own / 1e9;
    std::printf("threads=%d  peak %.1f GFLOP/s (%.1f per core)  Sgemm %.1f GFLOP/s = %.1f%% of peak  (own kernel %.1f = %.1f%%)",
                threads, peak, peak / threads, ours_gf, 100.0 * ours_gf / peak, own_gf, 100.0 * own_gf / peak);
#if defined(ONEFLOW_HAVE_DNNL)
    if (std::getenv("WITH_OPENMP")) {
      const double dnnl_gf = flop / best_dnnl / 1e9;
      std::printf("  oneDNN on OpenMP %.1f GFLOP/s = %.1f%% of peak", dnnl_gf, 100.0 * dnnl_gf / peak);
    }
#endif
    std::printf("\n");
  }
  return 0;
}
