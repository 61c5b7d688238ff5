// Rounding into quantized integers and the dynamic (per-tensor, uint8) quantization parameters,
// shared by QuantizeLinear/DynamicQuantizeLinear (quantization.cc) and the kernels that quantize
// on the fly (DynamicQuantizeMatMul in matmul_integer.cc, the QLinear* ops).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// round_half_even(v) + zero_point saturated to [lo, hi]; NaN gives lo. Clamping to the integers
// [lo - zp, hi - zp] first and rounding after gives the same result (integers are fixed points of
// rounding, which is monotonic), and keeps |v| < 2^22, where adding and subtracting 1.5 * 2^23
// (2^52 for double) rounds half to even in the default rounding mode: selects and arithmetic
// only, so loops of it vectorize.
template <typename F>
inline int32_t QuantizeToRange(F v, int32_t zero_point, int32_t lo_value, int32_t hi_value) {
  const F lo = static_cast<F>(lo_value - zero_point);
  const F hi = static_cast<F>(hi_value - zero_point);
  v = v >= lo ? v : lo;  // NaN compares false: lo
  v = v <= hi ? v : hi;
  const F kRound = sizeof(F) == 4 ? static_cast<F>(12582912.0) : static_cast<F>(6755399441055744.0);  // 1.5 * 2^23 or 2^52
  return static_cast<int32_t>((v + kRound) - kRound) + zero_point;
}

template <typename Y, typename F>
inline Y QuantizeValue(F v, int32_t zero_point) {
  return static_cast<Y>(QuantizeToRange(v, zero_point, static_cast<int32_t>(std::numeric_limits<Y>::lowest()),
                                        static_cast<int32_t>(std::numeric_limits<Y>::max())));
}

struct DynamicQuantization {
  float scale = 1.0f;
  uint8_t zero_point = 0;
};

// DynamicQuantizeLinear's parameters for x[0..n): uint8 over x's range widened to include 0, as
// onnxruntime computes them; an all-zero x (an empty range) gets scale 1, where the ONNX formula
// would divide by zero. NaNs do not widen the range.
inline DynamicQuantization DynamicQuantizationOf(const float* xs, int64_t n) {
  // The range in 16 lanes (a float min/max reduction does not vectorize without -ffast-math,
  // nor, in GCC 12, these selects: hence the intrinsics). min(v, low) / max(v, high) return the
  // second operand when v is NaN, as the selects do, which keeps NaNs out.
  constexpr int kLanes = 16;
  alignas(64) float lows[kLanes] = {}, highs[kLanes] = {};
  int64_t i = 0;
#if ONEFLOW_ISA_AVX512
  __m512 lo16 = _mm512_setzero_ps(), hi16 = _mm512_setzero_ps();
  for (; i + kLanes <= n; i += kLanes) {
    const __m512 v = _mm512_loadu_ps(xs + i);
    lo16 = _mm512_min_ps(v, lo16);
    hi16 = _mm512_max_ps(v, hi16);
  }
  _mm512_store_ps(lows, lo16);
  _mm512_store_ps(highs, hi16);
#elif ONEFLOW_ISA_AVX2
  __m256 lo8[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, hi8[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (; i + kLanes <= n; i += kLanes)
    for (int h = 0; h < 2; ++h) {
      const __m256 v = _mm256_loadu_ps(xs + i + 8 * h);
      lo8[h] = _mm256_min_ps(v, lo8[h]);
      hi8[h] = _mm256_max_ps(v, hi8[h]);
    }
  for (int h = 0; h < 2; ++h) {
    _mm256_store_ps(lows + 8 * h, lo8[h]);
    _mm256_store_ps(highs + 8 * h, hi8[h]);
  }
#else
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float v = xs[i + j];
      lows[j] = v < lows[j] ? v : lows[j];
      highs[j] = v > highs[j] ? v : highs[j];
    }
#endif
  for (; i < n; ++i) {
    lows[0] = xs[i] < lows[0] ? xs[i] : lows[0];
    highs[0] = xs[i] > highs[0] ? xs[i] : highs[0];
  }
  float lo = 0.0f, hi = 0.0f;
  for (int j = 0; j < kLanes; ++j) {
    lo = std::min(lo, lows[j]);
    hi = std::max(hi, highs[j]);
  }
  DynamicQuantization q;
  q.scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  q.zero_point = static_cast<uint8_t>(std::nearbyint(std::clamp(0.0f - lo / q.scale, 0.0f, 255.0f)));
  return q;
}

// out[k] = QuantizeValue<uint8_t>(in[k] / scale, zero_point) for k in [begin, end).
inline void QuantizeUInt8(const float* __restrict in, uint8_t* __restrict out, int64_t begin, int64_t end, float scale,
                          uint8_t zero_point) {
  for (int64_t k = begin; k < end; ++k) out[k] = QuantizeValue<uint8_t>(in[k] / scale, zero_point);
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
