// Fast, vectorizable float32 exp/tanh/erf/sigmoid/gelu shared by the CPU kernels, with double overloads
// that call libm so generic kernel code can use one name for both compute types.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace oneflow {
namespace fastmath {

// The float versions are branch-free (selects only) so GCC vectorizes loops that call them.

inline float BitsAsFloat(int32_t i) { float f; std::memcpy(&f, &i, 4); return f; }

// exp(x): Cody-Waite reduction x = n*ln2 + r (|r| <= ln2/2), degree-6 polynomial for e^r; ~1.5 ulp.
// 2^n is built as 2^(n-1) * 2 so n = 128 (x just below ln(FLT_MAX)) stays finite. Results below
// 2^-125 (x < -86.64) flush to exactly 0, so -inf attention masks give zeros in Softmax; NaN
// propagates; +inf above ln(FLT_MAX).
inline float Exp(float x) {
  const float kMax = 88.7228317f;   // ln(FLT_MAX)
  const float kMin = -86.6433525f;  // ln(2^-125)
  // Argument order matters: std::max(kMin, NaN) yields kMin, so a NaN never reaches the int conversion
  // below (converting NaN to int is undefined); the NaN is restored on return.
  float xc = std::min(std::max(kMin, x), kMax);
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest (1.5 * 2^23 trick)
  float r = xc - n * 0.693145751953125f;
  r = r - n * 1.428606765330187e-06f;
  float p = 0.001382941154983537f;
  p = p * r + 0.008374777795097602f;
  p = p * r + 0.0416683585473375f;
  p = p * r + 0.1666642075788135f;
  p = p * r + 0.49999991489160006f;
  p = p * r + 1.0000000361421941f;
  p = p * r + 1.0000000005923801f;
  float scale = BitsAsFloat((static_cast<int32_t>(n) + 126) << 23);
  float y = p * scale * 2.0f;
  y = x < kMin ? 0.0f : y;
  y = x > kMax ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;
}
inline double Exp(double x) { return std::exp(x); }

inline float Sigmoid(float x) { return 1.0f / (1.0f + Exp(-x)); }
inline double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// tanh: odd polynomial near 0 (keeps relative accuracy), 1 - 2/(e^{2|x|}+1) elsewhere.
inline float Tanh(float x) {
  float ax = std::fabs(x);
  float x2 = x * x;
  float p = -0.00569752222344177f;
  p = p * x2 + 0.020630306863266657f;
  p = p * x2 - 0.0537358650798325f;
  p = p * x2 + 0.13331365587964467f;
  p = p * x2 - 0.33333275348462005f;
  p = p * x2 + 0.9999999982361973f;
  float small = x * p;
  float big = std::copysign(1.0f - 2.0f / (Exp(2.0f * ax) + 1.0f), x);
  return ax < 0.625f ? small : big;
}
inline double Tanh(double x) { return std::tanh(x); }

// erfc(u) * exp(u^2) for u in [1, 4], as a polynomial in t = 1 / (1 + u/2) (least-squares fit).
inline float ErfcScaled(float u) {
  float t = 1.0f / (1.0f + 0.5f * u);
  float p = 0.018206617711189067f;
  p = p * t + 0.0475733388437817f;
  p = p * t - 0.3485030684360017f;
  p = p * t + 0.44448951947948045f;
  p = p * t - 0.03239291241663045f;
  p = p * t + 0.32071931678693577f;
  p = p * t + 0.2660674700738109f;
  p = p * t + 0.2840612977945978f;
  p = p * t - 0.00010492100319227036f;
  return p;
}

// erf(x) / x as a polynomial in x^2 for |x| < 1 (the odd polynomial Erf and Gelu share).
inline float ErfOddPoly(float x2) {
  float p = -0.0005667995109505239f;
  p = p * x2 + 0.004927419830784432f;
  p = p * x2 - 0.02672089357457614f;
  p = p * x2 + 0.11280578874605639f;
  p = p * x2 - 0.3761239067578162f;
  p = p * x2 + 1.1283791471036893f;
  return p;
}

// erf: odd polynomial on |x| < 1, 1 - exp(-x^2) * ErfcScaled(|x|) above; ~2e-7 absolute.
inline float Erf(float x) {
  float ax = std::fabs(x);
  float x2 = x * x;
  float small = x * ErfOddPoly(x2);
  float big = 1.0f - Exp(-x2) * ErfcScaled(std::min(ax, 4.0f));
  big = ax > 3.92f ? 1.0f : big;
  big = std::copysign(big, x);
  return ax < 1.0f ? small : big;
}
inline double Erf(double x) { return std::erf(x); }

// Gelu(x) = x * Phi(x), Phi(x) = erfc(-x/sqrt2)/2. One exp for all branches; for x <= -sqrt2 the
// erfc form avoids the cancellation in 1 + erf(u).
inline float Gelu(float x) {
  const float kInvSqrt2 = 0.70710678118654752f;
  float u = x * kInvSqrt2;
  float au = std::fabs(u);
  float u2 = u * u;
  float phi_central = 0.5f + 0.5f * (u * ErfOddPoly(u2));
  float half_erfc = 0.5f * Exp(-u2) * ErfcScaled(std::min(au, 4.0f));  // erfc(|u|) / 2
  half_erfc = au > 4.0f ? 0.0f : half_erfc;  // < 1e-8 there
  float phi_tail = u > 0.0f ? 1.0f - half_erfc : half_erfc;
  return x * (au < 1.0f ? phi_central : phi_tail);
}
inline double Gelu(double x) { return 0.5 * x * std::erfc(-x * 0.70710678118654752440); }

// Gelu with the tanh approximation: 0.5x(1 + tanh(z)) == x * sigmoid(2z), which stays accurate for x << 0.
inline float GeluTanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  float z = k * (x + 0.044715f * x * x * x);
  return x * Sigmoid(2.0f * z);
}
inline double GeluTanh(double x) {
  double z = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * z));
}

}  // namespace fastmath
}  // namespace oneflow
