// Helpers shared by the reduction and normalization kernels: [outer, n, inner] axis views,
// multi-lane contiguous reductions, and f16/bf16 <-> float staging.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/tensor.h"
#include "base/fast_math.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// A tensor seen as [outer, n, inner] where n spans axes [first, last) of `shape`.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

inline AxisView ViewAround(const Shape& shape, int64_t first, int64_t last) {
  AxisView v;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < first) v.outer *= shape[i];
    else if (i < last) v.n *= shape[i];
    else v.inner *= shape[i];
  }
  return v;
}

// Lane counts that fill two AVX-512 registers; independent accumulators let GCC vectorize
// reductions without reassociation flags. Lanes are combined as a tree (vector adds on halves)
// rather than one by one, which matters for short rows.
template <typename T>
constexpr int kLanes = sizeof(T) >= 8 ? 8 : 16;

// Sum of f(i) for i in [0, n).
template <typename T, typename F>
inline T LaneSum(int64_t n, F f) {
  constexpr int L = kLanes<T>;
  T acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) acc[j] += f(i + j);
  for (int w = L / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  T s = acc[0];
  for (; i < n; ++i) s += f(i);
  return s;
}

// Maximum (or, with kMax = false, minimum) of x[0..n) for float/double; -inf (+inf) when n == 0.
// GCC does not SLP-vectorize a lane array of max operations, so this uses its generic vector
// extension, at the tier's register width: a 64-byte vector on AVX2 or SSE is lowered lane by lane
// through the stack (measured: Softmax 5.7x onnxruntime at the AVX2 cap, 84% of it here). 64 bytes
// per step at every tier, in one to four independent accumulators.
template <typename T, bool kMax = true>
inline T LaneExtreme(const T* x, int64_t n) {
  static_assert(std::is_floating_point_v<T>, "LaneExtreme is for float and double");
  constexpr int kBytes = ONEFLOW_ISA_AVX512 ? 64 : (ONEFLOW_ISA_AVX ? 32 : 16);
  typedef T V __attribute__((vector_size(kBytes)));
  constexpr int W = kBytes / static_cast<int>(sizeof(T));  // lanes per vector
  constexpr int K = 64 / kBytes;                             // accumulators
  const T init = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  V acc[K];
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < W; ++j) acc[k][j] = init;
  int64_t i = 0;
  for (; i + W * K <= n; i += W * K) {
#pragma GCC unroll 4
    for (int k = 0; k < K; ++k) {
      V v;
      std::memcpy(&v, x + i + k * W, sizeof(V));
      if constexpr (kMax) acc[k] = v > acc[k] ? v : acc[k];
      else acc[k] = v < acc[k] ? v : acc[k];
    }
  }
  T m = init;
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < W; ++j) m = (kMax ? acc[k][j] > m : acc[k][j] < m) ? acc[k][j] : m;
  for (; i < n; ++i) m = (kMax ? x[i] > m : x[i] < m) ? x[i] : m;
  return m;
}

template <typename T>
inline T LaneMax(const T* x, int64_t n) { return LaneExtreme<T, true>(x, n); }

// f16/bf16 kernels compute in float: widen the input, run the float kernel, narrow the output.
inline Tensor WidenToFloat(const Tensor& t) {
  Tensor f = Tensor::Uninitialized(DType::kFloat32, t.shape());
  float* dst = f.data<float>();
  if (t.dtype() == DType::kFloat16) {
    const Float16* src = t.data<Float16>();
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(src[i]);
  } else {
    const BFloat16* src = t.data<BFloat16>();
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(src[i]);
  }
  return f;
}

inline void NarrowFromFloat(const Tensor& f, Tensor& out) {
  const float* src = f.data<float>();
  if (out.dtype() == DType::kFloat16) {
    Float16* dst = out.data<Float16>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = Float16(src[i]);
  } else {
    BFloat16* dst = out.data<BFloat16>();
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = BFloat16(src[i]);
  }
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
