// Helpers shared by the reduction and normalization kernels: [outer, n, inner] axis views,
// a vectorizable float exp, multi-lane contiguous reductions, and f16/bf16 <-> float staging.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/tensor.h"

namespace oneflow {

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

// exp(x) for float without branches or table lookups, so loops calling it auto-vectorize.
// Range reduction x = k*ln2 + r (|r| <= ln2/2, Cody-Waite split of ln2), then a fitted degree-5
// polynomial for e^r: relative error below 5e-7. 2^k is built as 2^(k-1) * 2 so that k = 128 (x near
// ln(FLT_MAX)) stays finite; results below 2^-125 (x < -86.64) flush to 0.
inline float FastExp(float x) {
  const float kMax = 88.7228317f;   // ln(FLT_MAX)
  const float kMin = -86.6433525f;  // ln(2^-125)
  float xc = x < kMin ? kMin : x;
  xc = xc > kMax ? kMax : xc;
  const float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  const float k = (xc * 1.44269504f + kMagic) - kMagic;
  float r = xc - k * 0.693145752f;
  r = r - k * 1.42860677e-6f;
  // Degree-5 polynomial for e^r with c0 = c1 = 1 and the rest fitted to minimise relative error.
  float p = 0.008204f;
  p = p * r + 0.04187702f;
  p = p * r + 0.16668446f;
  p = p * r + 0.49999443f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(k) + 126) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  float y = (p * scale) * 2.0f;
  y = x < kMin ? 0.0f : y;
  y = x > kMax ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;  // NaN in, NaN out
}

template <typename T>
inline T Exp(T x) {
  if constexpr (std::is_same_v<T, float>) return FastExp(x);
  else return std::exp(x);
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
// extension (lowered to whatever the target has).
template <typename T, bool kMax = true>
inline T LaneExtreme(const T* x, int64_t n) {
  static_assert(std::is_floating_point_v<T>, "LaneExtreme is for float and double");
  typedef T V __attribute__((vector_size(64)));
  constexpr int L = 64 / sizeof(T);
  const T init = kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  V acc;
  for (int j = 0; j < L; ++j) acc[j] = init;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    V v;
    std::memcpy(&v, x + i, sizeof(V));
    if constexpr (kMax) acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }
  T m = init;
  for (int j = 0; j < L; ++j) m = (kMax ? acc[j] > m : acc[j] < m) ? acc[j] : m;
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

}  // namespace oneflow
