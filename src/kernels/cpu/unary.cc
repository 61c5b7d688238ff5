// CPU kernels: unary math and activations (Exp .. Atanh, Relu .. Swish, Clip, IsNaN, IsInf, Not).
#include <cmath>

#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

// y = g(x) elementwise for a tensor of type T; g is a generic lambda over ComputeType<T>, so 16-bit
// floats are computed in float.
template <typename T, typename G>
void MapUnary(KernelContext& ctx, G g, double cost) {
  UnaryMap(ctx.pool(), ctx.input(0).data<T>(), ctx.output(0).data<T>(), ctx.input(0).numel(),
           [g](T v) { return static_cast<T>(g(static_cast<ComputeType<T>>(v))); }, cost);
}

// MapUnary for the floating types (g sees float or double).
template <typename G>
void FloatUnary(KernelContext& ctx, G g, double cost) {
  DispatchFloating(ctx.input(0).dtype(), [&](auto tag) { MapUnary<typename decltype(tag)::type>(ctx, g, cost); });
}

// MapUnary for every numeric type, integers included.
template <typename G>
void NumericUnary(KernelContext& ctx, G g, double cost) {
  DispatchNumericHalf(ctx.input(0).dtype(), [&](auto tag) { MapUnary<typename decltype(tag)::type>(ctx, g, cost); });
}

// log(1 + exp(x)) without overflow.
template <typename C>
C Softplus(C v) {
  return v > C(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

void ExpKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return fastmath::Exp(v); }, kMathCost); }
void LogKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return std::log(v); }, kLibmCost); }
void SqrtKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return std::sqrt(v); }, kMathCost); }
void ReciprocalKernel(KernelContext& ctx) {
  FloatUnary(ctx, [](auto v) { return decltype(v)(1) / v; }, kCheapCost);
}
void FloorKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return std::floor(v); }, kCheapCost); }
void CeilKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return std::ceil(v); }, kCheapCost); }
// Round half to even (the default FP rounding mode).
void RoundKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return std::nearbyint(v); }, kCheapCost); }

// fastmath's float versions are vectorizable approximations; its double overloads call libm.
void ErfKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return fastmath::Erf(v); }, kMathCost); }
void TanhKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return fastmath::Tanh(v); }, kMathCost); }
void SigmoidKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return fastmath::Sigmoid(v); }, kMathCost); }

#define OF_LIBM_UNARY(Name, fn) \
  void Name##Kernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return std::fn(v); }, kLibmCost); }
OF_LIBM_UNARY(Sin, sin)
OF_LIBM_UNARY(Cos, cos)
OF_LIBM_UNARY(Tan, tan)
OF_LIBM_UNARY(Asin, asin)
OF_LIBM_UNARY(Acos, acos)
OF_LIBM_UNARY(Atan, atan)
OF_LIBM_UNARY(Sinh, sinh)
OF_LIBM_UNARY(Cosh, cosh)
OF_LIBM_UNARY(Asinh, asinh)
OF_LIBM_UNARY(Acosh, acosh)
OF_LIBM_UNARY(Atanh, atanh)
#undef OF_LIBM_UNARY

// ---- Numeric (integer-capable) unaries ---------------------------------------------------------

void AbsKernel(KernelContext& ctx) {
  NumericUnary(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_unsigned_v<C>) return v;
    else if constexpr (std::is_floating_point_v<C>) return std::fabs(v);
    // Negated in the unsigned type: |INT_MIN| wraps to INT_MIN (as numpy) instead of overflowing.
    else return v < 0 ? static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(v)) : v;
  }, kCheapCost);
}

void NegKernel(KernelContext& ctx) {
  NumericUnary(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(U(0) - static_cast<U>(v));  // wraps for INT_MIN instead of UB
    } else {
      return -v;
    }
  }, kCheapCost);
}

void SignKernel(KernelContext& ctx) {
  NumericUnary(ctx, [](auto v) {
    using C = decltype(v);
    if constexpr (std::is_floating_point_v<C>) return v != v ? v : C((v > C(0)) - (v < C(0)));
    else return C((v > C(0)) - (v < C(0)));
  }, kCheapCost);
}

void ReluKernel(KernelContext& ctx) {
  NumericUnary(ctx, [](auto v) { return v > decltype(v)(0) ? v : decltype(v)(0); }, kCheapCost);
}

void LeakyReluKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  FloatUnary(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v < C(0) ? C(alpha) * v : v;
  }, kCheapCost);
}

void EluKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  FloatUnary(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v < C(0) ? C(alpha) * std::expm1(v) : v;
  }, kLibmCost);
}

void SeluKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  const float gamma = ctx.attrs().GetFloat("gamma");
  FloatUnary(ctx, [alpha, gamma](auto v) {
    using C = decltype(v);
    return v <= C(0) ? C(gamma) * C(alpha) * std::expm1(v) : C(gamma) * v;
  }, kLibmCost);
}

void CeluKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  FloatUnary(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v > C(0) ? v : C(alpha) * std::expm1(v / C(alpha));
  }, kLibmCost);
}

void GeluKernel(KernelContext& ctx) {
  const std::string& approx = ctx.attrs().GetString("approximate");
  OF_CHECK(approx == "none" || approx == "tanh", kUnsupported, ctx.node_desc(),
           ": Gelu approximate='", approx, "' (expected 'none' or 'tanh')");
  if (approx == "tanh") FloatUnary(ctx, [](auto v) { return fastmath::GeluTanh(v); }, kMathCost);
  else FloatUnary(ctx, [](auto v) { return fastmath::Gelu(v); }, kMathCost);
}

void HardSigmoidKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  const float beta = ctx.attrs().GetFloat("beta");
  FloatUnary(ctx, [alpha, beta](auto v) {
    using C = decltype(v);
    return std::min(std::max(C(alpha) * v + C(beta), C(0)), C(1));
  }, kCheapCost);
}

void HardSwishKernel(KernelContext& ctx) {
  FloatUnary(ctx, [](auto v) {
    using C = decltype(v);
    return v * std::min(std::max(v * C(1.0 / 6.0) + C(0.5), C(0)), C(1));
  }, kCheapCost);
}

void SoftplusKernel(KernelContext& ctx) { FloatUnary(ctx, [](auto v) { return Softplus(v); }, kLibmCost); }

void SoftsignKernel(KernelContext& ctx) {
  FloatUnary(ctx, [](auto v) { return v / (decltype(v)(1) + std::fabs(v)); }, kCheapCost);
}

void MishKernel(KernelContext& ctx) {
  FloatUnary(ctx, [](auto v) { return v * std::tanh(Softplus(v)); }, kLibmCost);
}

void ThresholdedReluKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  FloatUnary(ctx, [alpha](auto v) {
    using C = decltype(v);
    return v > C(alpha) ? v : C(0);
  }, kCheapCost);
}

void ShrinkKernel(KernelContext& ctx) {
  const float bias = ctx.attrs().GetFloat("bias");
  const float lambd = ctx.attrs().GetFloat("lambd");
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  // Computed in double so the float attributes apply exactly to integer inputs too.
  DispatchNumericHalf(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    UnaryMap(ctx.pool(), x.data<T>(), y.data<T>(), x.numel(), [bias, lambd](T t) {
      double v = CastToDouble(t);
      double r = v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0);
      // Integers saturate: v -/+ bias can leave T's range (or be NaN for a NaN bias).
      if constexpr (std::is_integral_v<T>) return SaturatingCast<T>(r);
      else return CastFromDouble<T>(r);
    }, kCheapCost);
  });
}

void SwishKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  FloatUnary(ctx, [alpha](auto v) {
    using C = decltype(v);
    if constexpr (std::is_same_v<C, float>) return v * fastmath::Sigmoid(alpha * v);
    else return v / (C(1) + std::exp(-C(alpha) * v));
  }, kMathCost);
}

// Clip-13: min/max are optional scalar inputs; absent means unbounded.
void ClipKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  for (size_t i = 1; i < 3; ++i) {
    if (ctx.has_input(i)) {
      OF_REQUIRE(ctx.input(i).numel() == 1, ctx.node_desc(), ": Clip ", i == 1 ? "min" : "max",
                 " must be a scalar, got shape ", ShapeToString(ctx.input(i).shape()));
      OF_REQUIRE(ctx.input(i).dtype() == x.dtype(), ctx.node_desc(), ": Clip bounds must have the input's dtype");
    }
  }
  DispatchNumericHalf(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    }
    if (ctx.has_input(1)) lo = static_cast<C>(ctx.input(1).data<T>()[0]);
    if (ctx.has_input(2)) hi = static_cast<C>(ctx.input(2).data<T>()[0]);
    UnaryMap(ctx.pool(), x.data<T>(), y.data<T>(), x.numel(), [lo, hi](T t) {
      C v = static_cast<C>(t);
      v = v < lo ? lo : v;  // NaN passes through both selects
      v = v > hi ? hi : v;  // min > max yields max, as numpy.clip
      return static_cast<T>(v);
    }, kCheapCost);
  });
}

void IsNaNKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool* y = ctx.output(0).data<bool>();
  DispatchFloating(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    UnaryMap(ctx.pool(), x.data<T>(), y, x.numel(), [](T t) {
      ComputeType<T> v = static_cast<ComputeType<T>>(t);
      return v != v;
    }, kCheapCost);
  });
}

void IsInfKernel(KernelContext& ctx) {
  const bool neg = ctx.attrs().GetInt("detect_negative") != 0;
  const bool pos = ctx.attrs().GetInt("detect_positive") != 0;
  const Tensor& x = ctx.input(0);
  bool* y = ctx.output(0).data<bool>();
  DispatchFloating(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const C inf = std::numeric_limits<C>::infinity();
    UnaryMap(ctx.pool(), x.data<T>(), y, x.numel(), [neg, pos, inf](T t) {
      C v = static_cast<C>(t);
      return (pos && v == inf) || (neg && v == -inf);
    }, kCheapCost);
  });
}

void NotKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  OF_CHECK(x.dtype() == DType::kBool, kUnsupported, ctx.node_desc(), ": Not needs bool input, got ",
           DTypeName(x.dtype()));
  UnaryMap(ctx.pool(), x.data<bool>(), ctx.output(0).data<bool>(), x.numel(), [](bool v) { return !v; }, kCheapCost);
}

void BitwiseNotKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DispatchInteger(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    UnaryMap(ctx.pool(), x.data<T>(), ctx.output(0).data<T>(), x.numel(), [](T v) { return static_cast<T>(~v); },
             kCheapCost);
  });
}

}  // namespace

void RegisterCpuUnaryKernels(KernelRegistry& r) {
  r.RegisterFn("Exp", ExpKernel);
  r.RegisterFn("Log", LogKernel);
  r.RegisterFn("Sqrt", SqrtKernel);
  r.RegisterFn("Reciprocal", ReciprocalKernel);
  r.RegisterFn("Floor", FloorKernel);
  r.RegisterFn("Ceil", CeilKernel);
  r.RegisterFn("Round", RoundKernel);
  r.RegisterFn("Erf", ErfKernel);
  r.RegisterFn("Tanh", TanhKernel);
  r.RegisterFn("Sigmoid", SigmoidKernel);
  r.RegisterFn("Sin", SinKernel);
  r.RegisterFn("Cos", CosKernel);
  r.RegisterFn("Tan", TanKernel);
  r.RegisterFn("Asin", AsinKernel);
  r.RegisterFn("Acos", AcosKernel);
  r.RegisterFn("Atan", AtanKernel);
  r.RegisterFn("Sinh", SinhKernel);
  r.RegisterFn("Cosh", CoshKernel);
  r.RegisterFn("Asinh", AsinhKernel);
  r.RegisterFn("Acosh", AcoshKernel);
  r.RegisterFn("Atanh", AtanhKernel);
  r.RegisterFn("Abs", AbsKernel);
  r.RegisterFn("Neg", NegKernel);
  r.RegisterFn("Sign", SignKernel);
  r.RegisterFn("Relu", ReluKernel);
  r.RegisterFn("LeakyRelu", LeakyReluKernel);
  r.RegisterFn("Elu", EluKernel);
  r.RegisterFn("Selu", SeluKernel);
  r.RegisterFn("Celu", CeluKernel);
  r.RegisterFn("Gelu", GeluKernel);
  r.RegisterFn("HardSigmoid", HardSigmoidKernel);
  r.RegisterFn("HardSwish", HardSwishKernel);
  r.RegisterFn("Softplus", SoftplusKernel);
  r.RegisterFn("Softsign", SoftsignKernel);
  r.RegisterFn("Mish", MishKernel);
  r.RegisterFn("ThresholdedRelu", ThresholdedReluKernel);
  r.RegisterFn("Shrink", ShrinkKernel);
  r.RegisterFn("Swish", SwishKernel);
  r.RegisterFn("Clip", ClipKernel);
  r.RegisterFn("IsNaN", IsNaNKernel);
  r.RegisterFn("IsInf", IsInfKernel);
  r.RegisterFn("Not", NotKernel);
  r.RegisterFn("BitwiseNot", BitwiseNotKernel);
}

}  // namespace oneflow
