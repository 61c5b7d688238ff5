// Shared pieces of the CPU elementwise kernels: the broadcast engine, unary loops,
// and ApplyActivation (the in-place activation used by fused MatMul/Conv epilogues).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "base/dtype.h"
#include "base/narrow_types.h"
#include "base/tensor.h"
#include "base/thread_pool.h"
#include "graph/attribute.h"
#include "base/fast_math.h"
#include "graph/ops/unary_ops.h"
#include "kernels/cpu/isa_region.h"

// Tells GCC the loop's iterations are independent (outputs never alias inputs partially); other
// compilers do without.
#if defined(__GNUC__) && !defined(__clang__)
#define OF_IVDEP _Pragma("GCC ivdep")
#else
#define OF_IVDEP
#endif

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// ================================================================================================
// Fused activation epilogue (public interface for other kernels).
//
//   ActivationParams act;                     // kind = kNone: ApplyActivation is a no-op
//   act.kind = Activation::kLeakyRelu; act.params[0] = 0.1f;
//   ApplyActivation(act, data, n);            // data[i] = act(data[i]) for i in [0, n), in place
//
// An activation is any unary row of graph/ops/unary_ops.h, with its parameters in the row's
// order (LeakyRelu: alpha; HardSigmoid: alpha, beta; Gelu: approximate, 0 none / 1 tanh; Clip:
// min, max): the formula is the op's own, so fused and unfused graphs agree to rounding.
// ApplyActivation is single-threaded and allocation-free: call it from inside your own parallel
// loop on the block you just produced (e.g. one output tile) while it is still in cache.
// ================================================================================================
using Activation = UnaryOpId;

struct ActivationParams {
  Activation kind = Activation::kNone;
  float params[unary::kMaxParams] = {};
};

void ApplyActivation(const ActivationParams& p, float* data, int64_t n);
void ApplyActivation(const ActivationParams& p, double* data, int64_t n);

// The fused ops' `activation` attribute: a row's name ("" and "None" are kNone) and its
// `activation_params` (defaults where absent). Fails with kInvalidModel on an unknown name.
ActivationParams ActivationFromAttrs(const std::string& name, const std::vector<float>& params);
const char* ActivationName(Activation a);

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
      OF_IVDEP
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], pb[i]);
    } else if (ia) {
      const TB vb = *pb;
      OF_IVDEP
      for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], vb);
    } else if (ib) {
      const TA va = *pa;
      OF_IVDEP
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
    OF_IVDEP
    for (int64_t i = begin; i < end; ++i) y[i] = f(x[i]);
  });
}

// Float -> integer with a result for every input (a bare static_cast is undefined behaviour outside
// the target's range, and constant folding runs kernels on whatever a model file holds): NaN gives
// 0, values past either end give that end, the rest truncate toward zero. This is what CUDA's cvt
// and AArch64's fcvtz[su] do in hardware; x86 (and so numpy there) gives INT_MIN patterns instead.
template <typename D, typename C>
D SaturatingCast(C v) {
  static_assert(std::is_integral_v<D> && !std::is_same_v<D, bool> && std::is_floating_point_v<C>);
  // Both bounds are powers of two (0 or -2^(n-1), and 2^n or 2^(n-1)), so exact in any float type.
  constexpr C kLowest = static_cast<C>(std::numeric_limits<D>::lowest());
  constexpr C kPastMax = static_cast<C>(std::numeric_limits<D>::max() / 2 + 1) * C(2);
  if (v != v) return D(0);
  if (v <= kLowest) return std::numeric_limits<D>::lowest();
  if (v >= kPastMax) return std::numeric_limits<D>::max();
  return static_cast<D>(v);  // v in (lowest, max + 1): its truncation fits
}

// Converts every element of `src` into `dst` (same numel; any pair of types but string). The
// options matter only for float8 and float8e8m0 targets (base/narrow_types.h).
void CastInto(ThreadPool& pool, const Tensor& src, Tensor& dst, const NarrowCastOptions& options = {});

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
