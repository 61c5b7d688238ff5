// Fast, vectorizable float32 math shared by the CPU kernels (exp, expm1, log, log1p, sigmoid, tanh,
// erf, GELU, softplus, mish). Exp, Sigmoid, Tanh, Erf and the GELUs have double overloads that call
// libm, so generic kernel code can use one name for both compute types; the unary rows reach the
// others through graph/ops/unary_ops.h (math::FastLog and friends), which has the double forms. Accuracy against libm in double, over the whole float range, is in
// docs/math.md and asserted by tests/unit/math_accuracy_test.cc.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace oneflow {
namespace fastmath {

// The float versions are branch-free (selects only), call no std::fma (the x86-64-v2 baseline has no
// FMA, so it would be a libm call there; on the wider tiers GCC fuses a * b + c itself) and no libm, so GCC vectorizes any loop that calls them
// at every ISA tier; -fno-trapping-math (CMakeLists.txt) lets it turn the selects into blends.

inline float BitsAsFloat(int32_t i) { float f; std::memcpy(&f, &i, 4); return f; }
inline int32_t FloatAsBits(float f) { int32_t i; std::memcpy(&i, &f, 4); return i; }

// 2^e for e in [-126, 127], built in the exponent field. The shift is done unsigned: a NaN input
// reaches here with a garbage e, and shifting a negative or overflowing int is undefined (UBSan
// stops on it); the result is then some float that the NaN in the other factor overrides.
inline float Pow2(int32_t e) { return BitsAsFloat(static_cast<int32_t>(static_cast<uint32_t>(e + 127) << 23)); }

// e^x = p * 2^n for x in [-170, 89] (callers clamp): Cody-Waite reduction x = n*ln2 + r with
// |r| <= ln2/2, then a degree-6 polynomial for p = e^r (p in [0.70, 1.42], ~1 ulp). n is rounded by
// adding 1.5 * 2^23, which leaves it in the sum's low mantissa bits: read from there, no float ->
// int conversion (undefined for NaN) is needed, so a NaN input flows through to a NaN p.
inline float ExpReduce(float xc, int32_t& n) {
  const float kRound = 12582912.0f;  // 1.5 * 2^23
  const float t = xc * 1.44269504088896341f + kRound;
  const float nf = t - kRound;
  n = FloatAsBits(t) - FloatAsBits(kRound);
  float r = xc - nf * 0.693145751953125f;  // ln2 in two parts: n * hi is exact
  r = r - nf * 1.428606765330187e-06f;
  float p = 0.001382941154983537f;
  p = p * r + 0.008374777795097602f;
  p = p * r + 0.0416683585473375f;
  p = p * r + 0.1666642075788135f;
  p = p * r + 0.49999991489160006f;
  p = p * r + 1.0000000361421941f;
  p = p * r + 1.0000000005923801f;
  return p;
}

// m * e^x for x in [-170, 89] (callers clamp) and a normal m, rounded once: the 2^n of ExpReduce
// is applied last, as two normal factors 2^(n>>1) * 2^(n - (n>>1)) (a single factor cannot reach
// n = -150, the last subnormal, nor n = 128, just below FLT_MAX when p < 1), so a subnormal result
// is rounded once from the exact product instead of losing bits in a subnormal e^x.
inline float ExpTimes(float xc, float m) {
  int32_t n;
  const float p = ExpReduce(xc, n);
  const int32_t half = n >> 1;
  return (m * p) * Pow2(half) * Pow2(n - half);
}

// exp(x), <= 2 ulp over the whole range, subnormal results included (e^-100 is 3.7e-44, not 0).
// Inputs are clamped to [-104, 89], where e^x rounds to 0 and overflows to +inf. The clamp's
// operand order (x first) lets NaN through, and the arithmetic keeps it NaN.
inline float Exp(float x) { return ExpTimes(std::min(std::max(x, -104.0f), 89.0f), 1.0f); }
inline double Exp(double x) { return std::exp(x); }

// expm1(x) = e^x - 1 without the cancellation near 0: a Taylor polynomial on (-1, 1.5) (terms to
// x^13/13!, so truncation stays far below an ulp), elsewhere p * 2^n - 1 on Exp's reduction, which
// rounds once (the product by a power of two is exact). The interval is asymmetric because the
// subtraction of 1 magnifies p's error by e^x / (e^x - 1): 1.6 at x = 1 (2.2 ulp measured with the
// interval ending there), 1.3 from 1.5 on; below -1 the polynomial would cancel instead. Below -17
// the result is -1 in float; above 88.72, +inf.
inline float Expm1(float x) {
  float q = 1.0f / 6227020800.0f;  // 1/13!
  q = q * x + 1.0f / 479001600.0f;
  q = q * x + 1.0f / 39916800.0f;
  q = q * x + 1.0f / 3628800.0f;
  q = q * x + 1.0f / 362880.0f;
  q = q * x + 1.0f / 40320.0f;
  q = q * x + 1.0f / 5040.0f;
  q = q * x + 1.0f / 720.0f;
  q = q * x + 1.0f / 120.0f;
  q = q * x + 1.0f / 24.0f;
  q = q * x + 1.0f / 6.0f;
  q = q * x + 0.5f;
  const float small = x + (x * x) * q;
  const float xc = std::min(std::max(x, -20.0f), 89.0f);  // NaN passes (see Exp)
  int32_t n;
  const float p = ExpReduce(xc, n);
  // 2^(n-1) * 2p: n - 1 in [-30, 127] stays a normal power of two; 2p is exact.
  const float scale = Pow2(n - 1);
  const float big = (p + p) * scale - 1.0f;  // the product is exact: one rounding, in the subtraction
  return (x > -1.0f && x < 1.5f) ? small : big;  // NaN: big, which is NaN
}

// log(x): x = 2^k * m with m in [sqrt(1/2), sqrt(2)), f = m - 1, and log(1 + f) through s = f/(2 + f)
// and a degree-8 even polynomial in s (the classic BSD construction); < 1 ulp. Subnormal inputs are
// scaled by 2^23 first; log(0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN propagates.
inline float Log(float x) {
  const bool subnormal = x < 1.17549435e-38f;  // FLT_MIN; negatives and 0 too, fixed by the selects
  const float xs = subnormal ? x * 8388608.0f : x;
  // Carry m >= sqrt(2) into k. Added unsigned: a NaN's bits would overflow int32 (undefined).
  const int32_t shifted =
      static_cast<int32_t>(static_cast<uint32_t>(FloatAsBits(xs)) + uint32_t{0x3f800000 - 0x3f3504f3});
  const float k = static_cast<float>((shifted >> 23) - 127) - (subnormal ? 23.0f : 0.0f);
  const float f = BitsAsFloat((shifted & 0x007fffff) + 0x3f3504f3) - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s, w = z * z;
  // (log((1+s)/(1-s)) - 2s) / s as a polynomial in s^2, with FreeBSD logf's minimax coefficients
  const float odd = z * (0.66666662693f + w * 0.28498786688f);
  const float even = w * (0.40000972152f + w * 0.24279078841f);
  const float half_f2 = 0.5f * f * f;
  float y = s * (half_f2 + odd + even) + k * 9.0580006145e-06f - half_f2 + f + k * 6.9313812256e-01f;
  y = x == 0.0f ? -std::numeric_limits<float>::infinity() : y;
  y = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : y;
  y = x == std::numeric_limits<float>::infinity() ? x : y;
  return x != x ? x : y;
}

// log1p(x) = log(u) + log(1 + c/u) with u = 1 + x rounded and c = x - (u - 1) its rounding error;
// the second term is c/u to first order. Tiny x gives u = 1 and so x itself.
inline float Log1p(float x) {
  const float u = 1.0f + x;
  float y = Log(u) + (x - (u - 1.0f)) / u;
  y = u == 0.0f ? -std::numeric_limits<float>::infinity() : y;  // x = -1
  y = x == std::numeric_limits<float>::infinity() ? x : y;
  return y;
}

// sigmoid(x) = 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below: one exp of -|x|, which never
// overflows, so the negative tail keeps its relative accuracy down to the subnormals.
inline float Sigmoid(float x) {
  const float e = Exp(-std::fabs(x));
  return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}
inline double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// softplus(x) = log(1 + e^x) = max(x, 0) + log1p(e^-|x|): never overflows, exact for large |x|.
inline float Softplus(float x) { return (x > 0.0f ? x : 0.0f) + Log1p(Exp(-std::fabs(x))); }

// mish(x) = x tanh(softplus(x)) = x * n / (n + 2) with n = e^x (e^x + 2), since
// tanh(log(1 + e)) = ((1+e)^2 - 1) / ((1+e)^2 + 1): one exp and one division. Above 20 the factor
// is 1 in float (and n would overflow near 44); toward -inf the result is -0.
inline float Mish(float x) {
  const float xc = std::min(std::max(-120.0f, x), 20.0f);  // x e^x rounds to -0 below -111
  const float e = ExpTimes(xc, 1.0f);
  // x e (e + 2) / (n + 2) with x e rounded once (ExpTimes): below x = -87, e^x is subnormal and
  // would lose the bits the product by x needs
  float y = ExpTimes(xc, x * ((e + 2.0f) / (e * (e + 2.0f) + 2.0f)));
  y = x > 20.0f ? x : y;
  return x < -120.0f ? x * 0.0f : y;  // -0, and NaN at -inf as the spec's x * tanh(softplus(x))
}

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

// erfc(u) * exp(u^2) for u in [0.5, 10.5], as a degree-9 polynomial in t = 1 / (1 + u/2) (a weighted
// least-squares fit for relative error: 2e-9 in exact arithmetic, ~3 ulp evaluated in float).
// Past 10.5, erfc(u) / 2 is below the smallest float.
inline float ErfcScaled(float u) {
  const float t = 1.0f / (1.0f + 0.5f * u);
  float p = -0.07368302345275879f;
  p = p * t + 0.348169207572937f;
  p = p * t - 0.6053904294967651f;
  p = p * t + 0.4006798565387726f;
  p = p * t - 0.10452448576688766f;
  p = p * t + 0.23397433757781982f;
  p = p * t + 0.23519498109817505f;
  p = p * t + 0.2835836112499237f;
  p = p * t + 0.2819855213165283f;
  p = p * t + 3.4982754186785314e-06f;
  return p;
}

// e^(-k v^2), k a power of two, to a few ulp. Rounding v^2 (or an input scaled by an inexact
// constant, such as x / sqrt2) costs a relative error of about v^2 * 2^-24 after the exp: 10 ulp at
// v = 4, 190 at GELU's far tail. So v^2 = hi + lo exactly (Dekker's product on a split of v, no FMA
// needed at the baseline ISA), scaled by k exactly, and e^-(hi + lo) = e^-hi (1 - lo).
inline float ExpNegScaledSquare(float v, float k) {
  // v = vh + vl with 12 significant bits each (vh: v with the low 12 mantissa bits cleared), so
  // every partial product is exact. A mask, not Veltkamp's 4097 * v split: a compiler that fuses
  // the split's multiply and subtractions into FMAs (GCC does by default) would break that split.
  const float vh = BitsAsFloat(FloatAsBits(v) & ~0xFFF);
  const float vl = v - vh;
  const float hi = v * v;
  const float lo = ((vh * vh - hi) + 2.0f * vh * vl) + vl * vl;
  return Exp(-k * hi) * (1.0f - k * lo);
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

// erf: odd polynomial on |x| < 1, 1 - e^(-x^2) * ErfcScaled(|x|) above (1 in float past 3.92).
inline float Erf(float x) {
  const float ax = std::min(std::fabs(x), 4.0f);  // also keeps NaN out of the tail's arithmetic
  const float small = x * ErfOddPoly(x * x);
  const float big = std::copysign(1.0f - ExpNegScaledSquare(ax, 1.0f) * ErfcScaled(ax), x);
  const float y = std::fabs(x) < 1.0f ? small : big;
  return x != x ? x : y;
}
inline double Erf(double x) { return std::erf(x); }

// Gelu(x) = x * Phi(x), Phi(x) = erfc(-x/sqrt2)/2: the odd polynomial for u = x/sqrt2 in (-0.5, 1)
// and the scaled erfc on both tails, so for x << 0 the result keeps its relative accuracy (x Phi(x) is still a
// normal float at x = -13) instead of the cancellation in 1 + erf(u).
inline float Gelu(float x) {
  const float kInvSqrt2 = 0.70710678118654752f;
  const float u = x * kInvSqrt2;
  const float ax = std::min(std::fabs(x), 14.5f);
  const float phi_central = 0.5f + 0.5f * (u * ErfOddPoly(u * u));
  // erfc(|u|) / 2, with e^(-u^2) as e^(-x^2 / 2) from the exact x
  const float half_erfc = 0.5f * ExpNegScaledSquare(ax, 0.5f) * ErfcScaled(ax * kInvSqrt2);
  const float phi_tail = u > 0.0f ? 1.0f - half_erfc : half_erfc;
  // Below u = -0.5 the central form would cancel (0.5 + 0.5 erf(u) with erf(u) near -1).
  return x * ((u > -0.5f && u < 1.0f) ? phi_central : phi_tail);
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
