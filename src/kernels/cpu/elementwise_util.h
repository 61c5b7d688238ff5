// Shared pieces of the CPU elementwise kernels: fast float32 math, the broadcast engine, unary loops,
// and ApplyActivation (the in-place activation used by fused MatMul/Conv epilogues).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/dtype.h"
#include "base/tensor.h"
#include "base/thread_pool.h"
#include "graph/attribute.h"

namespace oneflow {

// ================================================================================================
// Fused activation epilogue (public interface for other kernels).
//
//   ActivationParams act;                     // kind = kNone: ApplyActivation is a no-op
//   act.kind = Activation::kLeakyRelu; act.alpha = 0.1f;
//   ApplyActivation(act, data, n);            // data[i] = act(data[i]) for i in [0, n), in place
//
// ApplyActivation is single-threaded and allocation-free: call it from inside your own parallel
// loop on the block you just produced (e.g. one output tile) while it is still in cache. It is
// thread-safe (no shared state). Semantics match the ONNX ops of the same name:
//   kRelu         max(x, 0)
//   kLeakyRelu    x < 0 ? alpha * x : x                            (alpha)
//   kSigmoid      1 / (1 + exp(-x))
//   kTanh         tanh(x)
//   kGelu         x * Phi(x) (exact, erf-based; ONNX Gelu approximate="none")
//   kGeluTanh     ONNX Gelu approximate="tanh"
//   kHardSigmoid  clamp(alpha * x + beta, 0, 1)                    (alpha, beta)
//   kHardSwish    x * clamp(x / 6 + 0.5, 0, 1)
//   kClip         clamp(x, min, max)                               (min, max; NaN stays NaN)
// Float math uses vectorizable approximations accurate to ~2e-7 relative.
// ================================================================================================
enum class Activation { kNone, kRelu, kLeakyRelu, kSigmoid, kTanh, kGelu, kGeluTanh, kHardSigmoid, kHardSwish, kClip };

struct ActivationParams {
  Activation kind = Activation::kNone;
  float alpha = 0.01f;  // kLeakyRelu slope; kHardSigmoid alpha (set it to 0.2f for ONNX's default)
  float beta = 0.5f;    // kHardSigmoid beta
  float min = -std::numeric_limits<float>::infinity();  // kClip bounds
  float max = std::numeric_limits<float>::infinity();
};

void ApplyActivation(const ActivationParams& p, float* data, int64_t n);

// Maps an ONNX activation node (default domain) to ActivationParams, for fusion passes and fused
// kernels: Relu, LeakyRelu, Sigmoid, Tanh, Gelu (either `approximate`), HardSigmoid, HardSwish.
// Returns false for anything else. Clip is not handled here because its bounds are inputs: the
// caller builds {kClip, .min = ..., .max = ...} from the constant min/max tensors itself.
// `attrs` may lack attributes (defaults are the ONNX ones).
bool ActivationFromOnnx(const std::string& op_type, const AttrMap& attrs, ActivationParams* out);

// ================================================================================================
// Fast float32 math. Branch-free (selects only) so GCC vectorizes loops that call them.
// ================================================================================================
namespace fastmath {

inline float BitsAsFloat(int32_t i) { float f; std::memcpy(&f, &i, 4); return f; }

// exp(x): Cody-Waite reduction x = n*ln2 + r, degree-6 polynomial for e^r; ~1.5 ulp.
// Results below ~2.6e-38 flush to 0; NaN propagates; +inf above ln(FLT_MAX).
inline float Exp(float x) {
  float xc = std::min(std::max(x, -86.5f), 88.7228f);
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  float r = xc - n * 0.693145751953125f;
  r = r - n * 1.428606765330187e-06f;
  float p = 0.001382941154983537f;
  p = p * r + 0.008374777795097602f;
  p = p * r + 0.0416683585473375f;
  p = p * r + 0.1666642075788135f;
  p = p * r + 0.49999991489160006f;
  p = p * r + 1.0000000361421941f;
  p = p * r + 1.0000000005923801f;
  // 2^n as 2^(n-1) * 2 so n = 128 (x just below the overflow bound) stays finite.
  float scale = BitsAsFloat((static_cast<int32_t>(n) + 126) << 23);
  float y = p * scale * 2.0f;
  y = x < -86.5f ? 0.0f : y;
  y = x > 88.7228f ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;
}

inline float Sigmoid(float x) { return 1.0f / (1.0f + Exp(-x)); }

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

// erf: odd polynomial on |x| < 1, 1 - exp(-x^2) * ErfcScaled(|x|) above; ~2e-7 absolute.
inline float Erf(float x) {
  float ax = std::fabs(x);
  float x2 = x * x;
  float p = -0.0005667995109505239f;
  p = p * x2 + 0.004927419830784432f;
  p = p * x2 - 0.02672089357457614f;
  p = p * x2 + 0.11280578874605639f;
  p = p * x2 - 0.3761239067578162f;
  p = p * x2 + 1.1283791471036893f;
  float small = x * p;
  float big = 1.0f - Exp(-x2) * ErfcScaled(std::min(ax, 4.0f));
  big = ax > 3.92f ? 1.0f : big;
  big = std::copysign(big, x);
  return ax < 1.0f ? small : big;
}

// Gelu(x) = x * Phi(x), Phi(x) = erfc(-x/sqrt2)/2. One exp for all branches; for x <= -sqrt2 the
// erfc form avoids the cancellation in 1 + erf(u).
inline float Gelu(float x) {
  const float kInvSqrt2 = 0.70710678118654752f;
  float u = x * kInvSqrt2;
  float au = std::fabs(u);
  float u2 = u * u;
  float p = -0.0005667995109505239f;
  p = p * u2 + 0.004927419830784432f;
  p = p * u2 - 0.02672089357457614f;
  p = p * u2 + 0.11280578874605639f;
  p = p * u2 - 0.3761239067578162f;
  p = p * u2 + 1.1283791471036893f;
  float phi_central = 0.5f + 0.5f * (u * p);
  float half_erfc = 0.5f * Exp(-u2) * ErfcScaled(std::min(au, 4.0f));  // erfc(|u|) / 2
  half_erfc = au > 4.0f ? 0.0f : half_erfc;  // < 1e-8 there
  float phi_tail = u > 0.0f ? 1.0f - half_erfc : half_erfc;
  return x * (au < 1.0f ? phi_central : phi_tail);
}

// Gelu with the tanh approximation: 0.5x(1 + tanh(z)) == x * sigmoid(2z), which stays accurate for x << 0.
inline float GeluTanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  float z = k * (x + 0.044715f * x * x * x);
  return x * Sigmoid(2.0f * z);
}

}  // namespace fastmath

// Approximate cycles per element, for ParallelFor's inline-or-fork decision.
constexpr double kCheapCost = 1.0;
constexpr double kMathCost = 20.0;
constexpr double kLibmCost = 60.0;

// ================================================================================================
// Broadcast engine.
// ================================================================================================
// `out` iterated in row-major order over collapsed dims; strides[k][d] is operand k's element stride
// along collapsed dim d (0 where it broadcasts). Adjacent dims where every operand either matches the
// output or broadcasts in the same way are merged, so [N,C]+[C] becomes one "row" loop of C and a
// same-shape pair becomes a single flat dim.
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;
  int64_t numel = 0;
};

// Operand shapes must broadcast to `out` (which may be larger than their joint broadcast).
BroadcastPlan MakeBroadcastPlan(const std::vector<Shape>& operands, const Shape& out);

// Binary op with broadcasting: out[i] = f(a[ia], b[ib]). `out` may alias `a` when a has out's shape.
template <typename TA, typename TB, typename TR, typename F>
void BroadcastBinary(ThreadPool& pool, const TA* a, const Shape& sa, const TB* b, const Shape& sb, TR* out,
                     const Shape& so, F f, double cost) {
  BroadcastPlan p = MakeBroadcastPlan({sa, sb}, so);
  const int64_t n = p.numel;
  if (n == 0) return;
  const int r = static_cast<int>(p.dims.size());
  const int64_t inner = p.dims[r - 1];
  const int64_t ia = p.strides[0][r - 1], ib = p.strides[1][r - 1];
  // Inner loops: the four stride combinations, each a simple loop GCC vectorizes.
  auto inner_loop = [&f, ia, ib](const TA* pa, const TB* pb, TR* po, int64_t len) {
    if (ia && ib) {
#pragma GCC ivdep
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], pb[i]);
    } else if (ia) {
      const TB vb = *pb;
#pragma GCC ivdep
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], vb);
    } else if (ib) {
      const TA va = *pa;
#pragma GCC ivdep
      for (int64_t i = 0; i < len; ++i) po[i] = f(va, pb[i]);
    } else {
      const TR v = f(*pa, *pb);
      for (int64_t i = 0; i < len; ++i) po[i] = v;
    }
  };
  if (r == 1) {
    pool.ParallelFor(n, cost, [&](int64_t begin, int64_t end) {
      inner_loop(a + begin * ia, b + begin * ib, out + begin, end - begin);
    });
    return;
  }
  pool.ParallelFor(n, cost, [&](int64_t begin, int64_t end) {
    // Position the odometer over the outer dims at `begin`, then walk row segments.
    std::vector<int64_t> idx(static_cast<size_t>(r - 1));
    int64_t row = begin / inner, col = begin % inner;
    int64_t oa = 0, ob = 0;
    for (int d = r - 2; d >= 0; --d) {
      idx[d] = row % p.dims[d];
      row /= p.dims[d];
      oa += idx[d] * p.strides[0][d];
      ob += idx[d] * p.strides[1][d];
    }
    int64_t pos = begin;
    while (pos < end) {
      int64_t len = std::min(inner - col, end - pos);
      inner_loop(a + oa + col * ia, b + ob + col * ib, out + pos, len);
      pos += len;
      col = 0;
      for (int d = r - 2; d >= 0; --d) {
        oa += p.strides[0][d];
        ob += p.strides[1][d];
        if (++idx[d] < p.dims[d]) break;
        oa -= p.strides[0][d] * p.dims[d];
        ob -= p.strides[1][d] * p.dims[d];
        idx[d] = 0;
      }
    }
  });
}

// Unary map over a contiguous buffer, parallel for large n. y may alias x.
template <typename TI, typename TO, typename F>
void UnaryMap(ThreadPool& pool, const TI* x, TO* y, int64_t n, F f, double cost) {
  pool.ParallelFor(n, cost, [&](int64_t begin, int64_t end) {
#pragma GCC ivdep
    for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
  });
}

// Entry points of the per-file kernel sets (all registered by RegisterCpuElementwiseKernels).
class KernelRegistry;
void RegisterCpuUnaryKernels(KernelRegistry& r);     // cpu/unary.cc
void RegisterCpuBinaryKernels(KernelRegistry& r);    // cpu/binary.cc
void RegisterCpuCompareKernels(KernelRegistry& r);   // cpu/compare.cc
void RegisterCpuCastKernels(KernelRegistry& r);      // cpu/cast.cc

// Converts every element of `src` into `dst` (same numel; any numeric/bool/f16/bf16 pair).
void CastInto(ThreadPool& pool, const Tensor& src, Tensor& dst);

}  // namespace oneflow
