// CPU kernel: Det. Each [M, M] matrix of X[..., M, M] is factored by Gaussian elimination with
// partial pivoting (LU) in double, whatever the storage type; the determinant is the product of
// the pivots with the sign of the row swaps. Matrices are independent, so the batch runs in parallel.
#include <cmath>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// The determinant of the m x m row-major matrix `a`, which it overwrites with its LU factors.
double LuDeterminant(double* a, int64_t m) {
  double det = 1.0;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * m + k]) > std::fabs(a[pivot * m + k])) pivot = i;
    const double p = a[pivot * m + k];
    if (p == 0.0) return 0.0;  // singular (a NaN pivot falls through and propagates)
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[pivot * m + j]);
      det = -det;
    }
    det *= p;
    for (int64_t i = k + 1; i < m; ++i) {
      const double f = a[i * m + k] / p;
      if (f == 0.0) continue;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

void DetKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  OF_REQUIRE(s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2], ctx.node_desc(),
             ": Det needs square matrices in the last two dims, got ", ShapeToString(s));
  const int64_t m = s.back();
  const int64_t batch = m == 0 ? ctx.output(0).numel() : x.numel() / (m * m);
  DispatchFloating(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.data<T>();
    T* out = ctx.output(0).data<T>();
    ctx.pool().ParallelFor(batch, static_cast<double>(m * m * m), [&](int64_t begin, int64_t end) {
      std::vector<double> a(static_cast<size_t>(m * m));
      for (int64_t b = begin; b < end; ++b) {
        for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = CastToDouble(src[b * m * m + i]);
        out[b] = CastFromDouble<T>(LuDeterminant(a.data(), m));  // the empty matrix's determinant is 1
      }
    });
  });
}
ONEFLOW_KERNEL(Det, DetKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
