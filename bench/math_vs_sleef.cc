// base/fast_math.h (vectorized by GCC) vs SLEEF's 1-ulp AVX2 functions, on 16 K floats that stay
// in cache, one thread: the measurement behind the choice in docs/math.md. Not part of the build
// (SLEEF is no dependency of the engine); run it with Debian's libsleef-dev:
//   g++ -O3 -march=x86-64-v3 -mtune=generic -fno-trapping-math -Isrc -I/usr/include/x86_64-linux-gnu \
//       bench/math_vs_sleef.cc -lsleef -o /tmp/math_vs_sleef && taskset -c 1 /tmp/math_vs_sleef
#include <immintrin.h>
#include <sleef.h>
#include <chrono>
#include <cstdio>
#include <vector>
#include <random>
#include "base/fast_math.h"
using namespace oneflow;
__attribute__((noinline)) void ours_exp(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = fastmath::Exp(x[i]); }
__attribute__((noinline)) void ours_tanh(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = fastmath::Tanh(x[i]); }
__attribute__((noinline)) void ours_log(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = fastmath::Log(x[i]); }
__attribute__((noinline)) void ours_erf(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = fastmath::Erf(x[i]); }
__attribute__((noinline)) void sl_exp(const float* x, float* y, long n) { for (long i = 0; i < n; i += 8) _mm256_storeu_ps(y+i, Sleef_expf8_u10avx2(_mm256_loadu_ps(x+i))); }
__attribute__((noinline)) void sl_tanh(const float* x, float* y, long n) { for (long i = 0; i < n; i += 8) _mm256_storeu_ps(y+i, Sleef_tanhf8_u10avx2(_mm256_loadu_ps(x+i))); }
__attribute__((noinline)) void sl_log(const float* x, float* y, long n) { for (long i = 0; i < n; i += 8) _mm256_storeu_ps(y+i, Sleef_logf8_u10avx2(_mm256_loadu_ps(x+i))); }
__attribute__((noinline)) void sl_erf(const float* x, float* y, long n) { for (long i = 0; i < n; i += 8) _mm256_storeu_ps(y+i, Sleef_erff8_u10avx2(_mm256_loadu_ps(x+i))); }
template <class F> double T(F f, const float* x, float* y, long n) {
  double best = 1e9;
  for (int r = 0; r < 30; ++r) { auto t0 = std::chrono::steady_clock::now(); for (int k = 0; k < 20; ++k) f(x, y, n); double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 20 / n * 1e9; if (dt < best) best = dt; }
  return best;
}
int main() {
  const long n = 16384; std::vector<float> x(n), xp(n), y(n);
  std::mt19937 g(1); std::normal_distribution<float> d(0, 3);
  for (long i = 0; i < n; ++i) { x[i] = d(g); xp[i] = std::exp(x[i]); }
  printf("ns/elem (AVX2, 16K floats, best of 30)  ours  sleef_u10\n");
  printf("exp   %.3f %.3f\n", T(ours_exp, x.data(), y.data(), n), T(sl_exp, x.data(), y.data(), n));
  printf("tanh  %.3f %.3f\n", T(ours_tanh, x.data(), y.data(), n), T(sl_tanh, x.data(), y.data(), n));
  printf("log   %.3f %.3f\n", T(ours_log, xp.data(), y.data(), n), T(sl_log, xp.data(), y.data(), n));
  printf("erf   %.3f %.3f\n", T(ours_erf, x.data(), y.data(), n), T(sl_erf, x.data(), y.data(), n));
}
