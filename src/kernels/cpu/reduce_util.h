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
// Range reduction x = k*ln2 + r (|r| <= ln2/2, Cody-Waite split of ln2), then a degree-7 Taylor
// polynomial for e^r: relative error ~2e-7 over the normal range. Results below FLT_MIN flush to 0.
inline float FastExp(float x) {
  const float kMax = 88.7228317f;   // ln(FLT_MAX)
  const float kMin = -87.3365479f;  // ln(FLT_MIN)
  float xc = x > kMax ? kMax : x;
  xc = xc < kMin ? kMin : xc;
  const float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  float t = xc * 1.44269504f + kMagic;
  float k = t - kMagic;
  k = k > 127.0f ? 127.0f : k;  // keep 2^k finite; r then grows to <= ln2 at the very top
  float r = xc - k * 0.693145752f;
  r = r - k * 1.42860677e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t ki = static_cast<int32_t>(k);
  uint32_t bits = static_cast<uint32_t>(ki + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  float y = p * scale;
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
// reductions without reassociation flags.
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
  T s = 0;
  for (int j = 0; j < L; ++j) s += acc[j];
  for (; i < n; ++i) s += f(i);
  return s;
}

// Maximum of x[0..n); -inf (or lowest) when n == 0.
template <typename T>
inline T LaneMax(const T* x, int64_t n) {
  constexpr int L = kLanes<T>;
  const T lo = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                    : std::numeric_limits<T>::lowest();
  T acc[L];
  for (int j = 0; j < L; ++j) acc[j] = lo;
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  T m = lo;
  for (int j = 0; j < L; ++j) m = acc[j] > m ? acc[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

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

inline bool IsHalfDType(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

}  // namespace oneflow
