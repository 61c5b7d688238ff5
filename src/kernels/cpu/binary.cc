// CPU kernels: broadcasting arithmetic (the rows of graph/ops/binary_ops.h; Pow Mod PRelu), variadic
// Min/Max/Sum/Mean,
// and the integer bit ops (BitShift, BitwiseAnd/Or/Xor).
#include <cmath>

#include "graph/ops/binary_ops.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

void RequireSameDType(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  OF_REQUIRE(a.dtype() == b.dtype(), ctx.node_desc(), ": inputs must share one dtype, got ",
             DTypeName(a.dtype()), " and ", DTypeName(b.dtype()));
}

// out = g(a, b) with broadcasting, for every numeric dtype (or integers only); g sees ComputeType<T>.
template <bool kIntegersOnly, typename G>
void MapBinary(KernelContext& ctx, G g, double cost) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  RequireSameDType(ctx, a, b);
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    BroadcastBinary(ctx.pool(), a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<T>(), out.shape(),
                    [g](T x, T y) { return static_cast<T>(g(static_cast<C>(x), static_cast<C>(y))); }, cost);
  };
  if constexpr (kIntegersOnly) DispatchInteger(a.dtype(), run);
  else DispatchNumericHalf(a.dtype(), run);
}
template <typename G>
void ArithBinary(KernelContext& ctx, G g, double cost) { MapBinary<false>(ctx, g, cost); }

// A standalone row of graph/ops/binary_ops.h (Add, Sub, Mul, Div): its formula with broadcasting.
template <class Op>
void BinaryRowKernel(KernelContext& ctx) {
  ArithBinary(ctx, [](auto x, auto y) { return Op::Fwd(x, y); }, Op::kCost);
}

// Every standalone binary row of graph/op_list.h runs BinaryRowKernel.
void RegisterRows(KernelRegistry& r) {
#define OF_REGISTER_BINARY_ROW(Op) \
  if constexpr (binary::Op::kStandalone) r.RegisterFn(OpId::k##Op, BinaryRowKernel<binary::Op>);
  ONEFLOW_BINARY_OPS(OF_REGISTER_BINARY_ROW)
#undef OF_REGISTER_BINARY_ROW
}
ONEFLOW_KERNEL_TABLE(RegisterRows);

// fmod=1: result takes the dividend's sign (C fmod / %). fmod=0: the divisor's sign (Python/numpy).
// Integer x mod 0 is 0 (numpy's np.fmod and np.remainder); floats give fmod's NaN.
void ModKernel(KernelContext& ctx) {
  const bool c_style = ctx.attrs().GetInt("fmod") != 0;
  ArithBinary(ctx, [c_style](auto x, auto y) {
    using C = decltype(x);
    if constexpr (std::is_floating_point_v<C>) {
      C r = std::fmod(x, y);
      if (c_style) return r;
      if (r != C(0) && ((r < C(0)) != (y < C(0)))) r += y;
      if (r == C(0)) r = std::copysign(C(0), y);
      return r;
    } else {
      if (y == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (y == C(-1)) return C(0);  // avoids the INT_MIN % -1 trap
      }
      C r = static_cast<C>(x % y);
      if constexpr (std::is_signed_v<C>) {
        if (!c_style && r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
      }
      return r;
    }
  }, kMathCost);
}
ONEFLOW_KERNEL(Mod, ModKernel);

void PowKernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  ThreadPool& pool = ctx.pool();
  // Common model pattern: float32 tensor to a constant scalar power (x^2 in decomposed LayerNorm).
  if (a.dtype() == DType::kFloat32 && b.numel() == 1 && b.dtype() != DType::kBool) {
    const double e = b.GetAsDouble(0);
    const float* x = a.data<float>();
    float* y = out.data<float>();
    if (e == 2.0) return UnaryMap(pool, x, y, a.numel(), [](float v) { return v * v; }, kCheapCost);
    if (e == 3.0) return UnaryMap(pool, x, y, a.numel(), [](float v) { return v * v * v; }, kCheapCost);
    if (e == 1.0) return UnaryMap(pool, x, y, a.numel(), [](float v) { return v; }, kCheapCost);
    if (e == 0.5) {  // pow(-0, .5) = +0 and pow(-inf, .5) = +inf, unlike sqrt
      const float inf = std::numeric_limits<float>::infinity();
      return UnaryMap(pool, x, y, a.numel(), [inf](float v) { return v == -inf ? inf : std::sqrt(v) + 0.0f; }, kCheapCost);
    }
    if (e == -1.0) return UnaryMap(pool, x, y, a.numel(), [](float v) { return 1.0f / v; }, kCheapCost);
  }
  const bool base_float = IsFloatDType(a.dtype());
  const bool exp_float = IsFloatDType(b.dtype());
  OF_CHECK(a.dtype() != DType::kBool && b.dtype() != DType::kBool, kUnsupported, ctx.node_desc(),
           ": Pow does not take bool");
  if (base_float) {
    // Float base: the exponent in the base's type (exact for the small integers models use).
    Tensor e = b;
    if (b.dtype() != a.dtype()) {
      e = Tensor::Uninitialized(a.dtype(), b.shape());
      CastInto(pool, b, e);
    }
    DispatchFloating(a.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      BroadcastBinary(pool, a.data<T>(), a.shape(), e.data<T>(), e.shape(), out.data<T>(), out.shape(),
                      [](T x, T y) { return static_cast<T>(binary::Pow::Fwd(static_cast<C>(x), static_cast<C>(y))); },
                      kLibmCost);
    });
    return;
  }
  // Integer base: integer exponents exactly, float exponents through double.
  const DType e_type = exp_float ? DType::kFloat64 : b.dtype() == DType::kUInt64 ? DType::kUInt64 : DType::kInt64;
  Tensor e = Tensor::Uninitialized(e_type, b.shape());
  CastInto(pool, b, e);
  DispatchInteger(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (exp_float) {
      // Converted back as Cast does: 0^-1.0 (inf), (-8)^0.5 (NaN) and overflows saturate, not UB.
      BroadcastBinary(pool, a.data<T>(), a.shape(), e.data<double>(), e.shape(), out.data<T>(), out.shape(),
                      [](T x, double y) { return SaturatingCast<T>(std::pow(static_cast<double>(x), y)); },
                      kLibmCost);
    } else if (e_type == DType::kUInt64) {
      BroadcastBinary(pool, a.data<T>(), a.shape(), e.data<uint64_t>(), e.shape(), out.data<T>(), out.shape(),
                      [](T x, uint64_t y) { return binary::IntPow(x, y); }, kMathCost);
    } else {
      BroadcastBinary(pool, a.data<T>(), a.shape(), e.data<int64_t>(), e.shape(), out.data<T>(), out.shape(),
                      [](T x, int64_t y) { return binary::IntPow(x, y); }, kMathCost);
    }
  });
}
ONEFLOW_KERNEL(Pow, PowKernel);

// PRelu: slope broadcasts (unidirectionally) to X.
void PReluKernel(KernelContext& ctx) {
  ArithBinary(ctx, [](auto x, auto s) {
    using C = decltype(x);
    return x < C(0) ? binary::Mul::Fwd(s, x) : x;
  }, kCheapCost);
}
ONEFLOW_KERNEL(PRelu, PReluKernel);

// Min/Max/Sum/Mean over 1..N inputs: out = g(in0, in1), then out = g(out, in_i) in place.
template <typename G>
void VariadicKernel(KernelContext& ctx, G g, bool mean) {
  Tensor& out = ctx.output(0);
  const size_t n = ctx.num_inputs();
  OF_REQUIRE(n >= 1, ctx.node_desc(), ": needs at least one input");
  for (size_t i = 1; i < n; ++i) RequireSameDType(ctx, ctx.input(0), ctx.input(i));
  DispatchNumericHalf(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    auto op = [g](T x, T y) { return static_cast<T>(g(static_cast<C>(x), static_cast<C>(y))); };
    const Tensor& in0 = ctx.input(0);
    if (n == 1) {
      BroadcastBinary(ctx.pool(), in0.data<T>(), in0.shape(), in0.data<T>(), in0.shape(), out.data<T>(), out.shape(),
                      [](T x, T) { return x; }, kCheapCost);
    } else {
      const Tensor& in1 = ctx.input(1);
      BroadcastBinary(ctx.pool(), in0.data<T>(), in0.shape(), in1.data<T>(), in1.shape(), out.data<T>(), out.shape(),
                      op, kCheapCost);
      for (size_t i = 2; i < n; ++i) {
        const Tensor& in = ctx.input(i);
        BroadcastBinary(ctx.pool(), out.data<T>(), out.shape(), in.data<T>(), in.shape(), out.data<T>(), out.shape(),
                        op, kCheapCost);
      }
    }
    if (mean) {
      if constexpr (std::is_integral_v<C>) {
        // The count in 64 bits: in T, 256 inputs of int8 would be a division by zero.
        using W = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
        const W count = static_cast<W>(n);
        UnaryMap(ctx.pool(), out.data<T>(), out.data<T>(), out.numel(),
                 [count](T x) { return static_cast<T>(static_cast<W>(x) / count); }, kCheapCost);
      } else {
        const C inv = static_cast<C>(n);
        UnaryMap(ctx.pool(), out.data<T>(), out.data<T>(), out.numel(),
                 [inv](T x) { return static_cast<T>(static_cast<C>(x) / inv); }, kCheapCost);
      }
    }
  });
}

void MaxKernel(KernelContext& ctx) { VariadicKernel(ctx, [](auto x, auto y) { return binary::Max::Fwd(x, y); }, false); }
ONEFLOW_KERNEL(Max, MaxKernel);
void MinKernel(KernelContext& ctx) { VariadicKernel(ctx, [](auto x, auto y) { return binary::Min::Fwd(x, y); }, false); }
ONEFLOW_KERNEL(Min, MinKernel);
void SumKernel(KernelContext& ctx) { VariadicKernel(ctx, [](auto x, auto y) { return binary::Add::Fwd(x, y); }, false); }
ONEFLOW_KERNEL(Sum, SumKernel);
void MeanKernel(KernelContext& ctx) { VariadicKernel(ctx, [](auto x, auto y) { return binary::Add::Fwd(x, y); }, true); }
ONEFLOW_KERNEL(Mean, MeanKernel);

// out = g(a, b) for integer tensors.
template <typename G>
void IntegerBinary(KernelContext& ctx, G g) { MapBinary<true>(ctx, g, kCheapCost); }

void BitwiseAndKernel(KernelContext& ctx) { IntegerBinary(ctx, [](auto x, auto y) { return x & y; }); }
ONEFLOW_KERNEL(BitwiseAnd, BitwiseAndKernel);
void BitwiseOrKernel(KernelContext& ctx) { IntegerBinary(ctx, [](auto x, auto y) { return x | y; }); }
ONEFLOW_KERNEL(BitwiseOr, BitwiseOrKernel);
void BitwiseXorKernel(KernelContext& ctx) { IntegerBinary(ctx, [](auto x, auto y) { return x ^ y; }); }
ONEFLOW_KERNEL(BitwiseXor, BitwiseXorKernel);

// Shift amounts outside [0, bits) shift everything out: LEFT gives 0, RIGHT gives the sign fill.
// Signed RIGHT shifts are arithmetic; LEFT shifts wrap.
void BitShiftKernel(KernelContext& ctx) {
  const std::string& dir = ctx.attrs().GetString("direction");
  OF_REQUIRE(dir == "LEFT" || dir == "RIGHT", ctx.node_desc(), ": direction must be LEFT or RIGHT, got '",
             dir, "'");
  auto shift = [](auto x, auto y, bool left) {
    using T = decltype(x);
    using U = std::make_unsigned_t<T>;
    constexpr int kBits = static_cast<int>(sizeof(T) * 8);
    bool in_range = true;
    if constexpr (std::is_signed_v<T>) in_range = y >= 0;
    in_range = in_range && static_cast<U>(y) < static_cast<U>(kBits);
    if (left) return in_range ? static_cast<T>(static_cast<U>(x) << static_cast<int>(y)) : T(0);
    if (in_range) return static_cast<T>(x >> static_cast<int>(y));
    if constexpr (std::is_signed_v<T>) return x < 0 ? T(-1) : T(0);
    return T(0);
  };
  if (dir == "LEFT") IntegerBinary(ctx, [shift](auto x, auto y) { return shift(x, y, true); });
  else IntegerBinary(ctx, [shift](auto x, auto y) { return shift(x, y, false); });
}
ONEFLOW_KERNEL(BitShift, BitShiftKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
