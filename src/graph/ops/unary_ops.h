// The unary elementwise ops, each defined once. A row of ONEFLOW_UNARY_TABLE (graph/op_list.h,
// which gives the op its id, name and domain) names a struct below that holds every other fact
// about the op: its first opset, its attributes (the formula's parameters, with defaults), which
// element types it takes, its cost, how SBP partial sums pass through it, and two scalar formulas:
//
//   Fwd(x, p)      y = f(x)                 p: the parameters, in the order of kParams
//   Bwd(d, s, p)   dX = d * f'(.)           s: the saved forward value, X or Y as kGrad says
//
// The formulas are templates over the compute type C (float for f32/f16/bf16, double, and for
// kNumeric ops the integer types) and compile for the host and for CUDA devices (OF_HD). From the
// rows, the rest of the engine builds, with no other per-op code:
//   graph/ops/elementwise.cc            the schema and, where kGrad says, the ai.oneflow <Op>Grad op
//   kernels/cpu/unary.cc, grad.cc       the CPU kernels (vectorized loops over Fwd / Bwd)
//   kernels/cuda/elementwise.cu, grad.cu  the CUDA kernels
//   graph/fused_elementwise_program.h   the FusedElementwise instruction set (EwOp)
//   kernels/cpu/fused_elementwise.cc, kernels/cuda/fused_elementwise.cu  its interpreters
//   kernels/cpu/elementwise_util.h      ApplyActivation, the fused MatMul/Gemm/Conv epilogues
//   passes/{fusion,elementwise_fusion,layout}.cc  which nodes those passes may take
// Constant folding runs the CPU kernels, so it follows too. docs/adding-an-op.md walks through a row.
//
// Math: the "Fast" functions are the vectorizable float approximations of base/fast_math.h on the
// host (accurate to a few ulp) and CUDA's own functions on a device; the others are libm's (and
// CUDA's) for every type. Double arguments always take libm.
#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "base/fast_math.h"
#include "graph/op_list.h"

#if defined(__CUDACC__)
#define OF_HD __host__ __device__ __forceinline__
#else
#define OF_HD inline
#endif

namespace oneflow {

class AttrMap;

namespace unary {

// ---- Scalar math the formulas use ---------------------------------------------------------------
namespace math {
#if defined(__CUDA_ARCH__)
#define OF_FAST_OR_DEVICE(host_expr, device_expr) return device_expr
#else
#define OF_FAST_OR_DEVICE(host_expr, device_expr) return host_expr
#endif
OF_HD float FastExp(float x) { OF_FAST_OR_DEVICE(fastmath::Exp(x), expf(x)); }
OF_HD float FastTanh(float x) { OF_FAST_OR_DEVICE(fastmath::Tanh(x), tanhf(x)); }
OF_HD float FastErf(float x) { OF_FAST_OR_DEVICE(fastmath::Erf(x), erff(x)); }
OF_HD float FastSigmoid(float x) { OF_FAST_OR_DEVICE(fastmath::Sigmoid(x), 1.0f / (1.0f + expf(-x))); }
OF_HD float FastGelu(float x) {
  OF_FAST_OR_DEVICE(fastmath::Gelu(x), 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)));
}
OF_HD float FastGeluTanh(float x) {
  OF_FAST_OR_DEVICE(fastmath::GeluTanh(x),
                    0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x))));
}
OF_HD float FastExpm1(float x) { OF_FAST_OR_DEVICE(fastmath::Expm1(x), expm1f(x)); }
OF_HD float FastLog(float x) { OF_FAST_OR_DEVICE(fastmath::Log(x), logf(x)); }
OF_HD float FastLog1p(float x) { OF_FAST_OR_DEVICE(fastmath::Log1p(x), log1pf(x)); }
OF_HD float FastSoftplus(float x) { OF_FAST_OR_DEVICE(fastmath::Softplus(x), fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)))); }
OF_HD float FastMish(float x) {
  OF_FAST_OR_DEVICE(fastmath::Mish(x), x * tanhf(fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)))));
}
#undef OF_FAST_OR_DEVICE
OF_HD double FastExpm1(double x) { return ::expm1(x); }
OF_HD double FastLog(double x) { return ::log(x); }
OF_HD double FastLog1p(double x) { return ::log1p(x); }
OF_HD double FastSoftplus(double x) { return (x > 0.0 ? x : 0.0) + ::log1p(::exp(-::fabs(x))); }
OF_HD double FastMish(double x) { return x * ::tanh(FastSoftplus(x)); }
OF_HD double FastExp(double x) { return ::exp(x); }
OF_HD double FastTanh(double x) { return ::tanh(x); }
OF_HD double FastErf(double x) { return ::erf(x); }
OF_HD double FastSigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
OF_HD double FastGelu(double x) { return 0.5 * x * ::erfc(-x * 0.70710678118654752440); }
OF_HD double FastGeluTanh(double x) { return x / (1.0 + ::exp(-2.0 * 0.79788456080286535588 * (x + 0.044715 * x * x * x))); }

#define OF_LIBM(Name, fn)                                \
  OF_HD float Name(float x) { return ::fn##f(x); }       \
  OF_HD double Name(double x) { return ::fn(x); }
OF_LIBM(Exp, exp) OF_LIBM(Expm1, expm1) OF_LIBM(Log, log) OF_LIBM(Log1p, log1p) OF_LIBM(Sqrt, sqrt)
OF_LIBM(Tanh, tanh) OF_LIBM(Erf, erf) OF_LIBM(Fabs, fabs) OF_LIBM(Floor, floor) OF_LIBM(Ceil, ceil)
OF_LIBM(Rint, nearbyint) OF_LIBM(Sin, sin) OF_LIBM(Cos, cos) OF_LIBM(Tan, tan) OF_LIBM(Asin, asin)
OF_LIBM(Acos, acos) OF_LIBM(Atan, atan) OF_LIBM(Sinh, sinh) OF_LIBM(Cosh, cosh) OF_LIBM(Asinh, asinh)
OF_LIBM(Acosh, acosh) OF_LIBM(Atanh, atanh)
#undef OF_LIBM

// x clamped to [lo, hi] by selects: a NaN passes through (fmin/fmax would drop it); lo > hi gives hi.
template <class C>
OF_HD C Clamp(C x, C lo, C hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

}  // namespace math

// ---- What a row declares -------------------------------------------------------------------------
constexpr int kMaxParams = 2;
// A float attribute and its default; with `choices` ("none|tanh"), a string attribute whose
// position in the list is the parameter's value (the default is the first).
struct Param {
  const char* name = nullptr;
  float value = 0.0f;
  const char* choices = nullptr;
};
struct ParamList {
  int count = 0;
  Param items[kMaxParams] = {};
};
enum class Types : uint8_t { kFloat, kNumeric };  // kNumeric: the integer types too
enum class GradFrom : uint8_t { kNone, kX, kY };  // kNone: no <Op>Grad (elementwise_grad.cc may have a rule)
enum class Linearity : uint8_t { kNone, kLinear };  // kLinear: f(a + b) = f(a) + f(b), partial sums pass
// Cycles per element, for ParallelFor's grain (the CPU kernels' kCheapCost / kMathCost / kLibmCost).
constexpr double kCheap = 1.0, kMath = 20.0, kLibm = 60.0;

struct RowDefaults {
  static constexpr int kSince = 13;
  static constexpr Types kTypes = Types::kFloat;
  static constexpr ParamList kParams{};
  static constexpr GradFrom kGrad = GradFrom::kNone;
  static constexpr Linearity kLinearity = Linearity::kNone;
  static constexpr double kCost = kCheap;
  // false: the formula serves fused programs and epilogues only; the op's schema and kernels
  // are written elsewhere (Clip takes its bounds as inputs) or it has none (Square).
  static constexpr bool kStandalone = true;
  // Mixed precision (train/mixed_precision.cc): cheap and well-conditioned enough to run in f16/bf16
  // when its input already is; otherwise the op computes in f32.
  static constexpr bool kFollowsLowPrecision = false;
};

#define OF_FWD(...)                                  \
  template <class C>                                 \
  OF_HD static C Fwd(C x, const float* p) {          \
    (void)p;                                         \
    return __VA_ARGS__;                              \
  }
#define OF_BWD(From, s, ...)                       \
  static constexpr GradFrom kGrad = GradFrom::From; \
  template <class C>                                \
  OF_HD static C Bwd(C d, C s, const float* p) {    \
    (void)p;                                        \
    return __VA_ARGS__;                             \
  }
#define OF_BWD_FROM_X(...) OF_BWD(kX, x, __VA_ARGS__)
#define OF_BWD_FROM_Y(...) OF_BWD(kY, y, __VA_ARGS__)

// ---- The rows ------------------------------------------------------------------------------------
// Rows with no Bwd have their gradient rule in graph/ops/elementwise_grad.cc (a formula of other
// ops: Exp's is dY * Y) or none.

struct Relu : RowDefaults {
  static constexpr const char* kName = op::kRelu;
  static constexpr bool kFollowsLowPrecision = true;
  static constexpr Types kTypes = Types::kNumeric;
  OF_FWD(x > C(0) ? x : C(0))
  OF_BWD_FROM_Y(y > C(0) ? d : C(0))
};
struct LeakyRelu : RowDefaults {
  static constexpr const char* kName = op::kLeakyRelu;
  static constexpr bool kFollowsLowPrecision = true;
  static constexpr ParamList kParams{1, {{"alpha", 0.01f}}};
  OF_FWD(x < C(0) ? C(p[0]) * x : x)
  OF_BWD_FROM_X(x > C(0) ? d : d * C(p[0]))
};
struct Sigmoid : RowDefaults {
  static constexpr const char* kName = op::kSigmoid;
  static constexpr bool kFollowsLowPrecision = true;
  static constexpr double kCost = kMath;
  OF_FWD(math::FastSigmoid(x))
  OF_BWD_FROM_Y(d * y * (C(1) - y))
};
struct Tanh : RowDefaults {
  static constexpr const char* kName = op::kTanh;
  static constexpr bool kFollowsLowPrecision = true;
  static constexpr double kCost = kMath;
  OF_FWD(math::FastTanh(x))
  OF_BWD_FROM_Y(d * (C(1) - y * y))
};

template <class C>
OF_HD C GeluGrad(C d, C x, bool tanh_form) {
  if (tanh_form) {
    const C k = C(0.79788456080286535588);  // sqrt(2 / pi)
    const C t = math::FastTanh(k * (x + C(0.044715) * x * x * x));
    const C dinner = k * (C(1) + C(3 * 0.044715) * x * x);
    return d * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * dinner);
  }
  const C cdf = C(0.5) * (C(1) + math::FastErf(x * C(0.70710678118654752440)));
  return d * (cdf + x * C(0.39894228040143267794) * math::FastExp(C(-0.5) * x * x));
}
struct Gelu : RowDefaults {
  static constexpr const char* kName = op::kGelu;
  static constexpr bool kFollowsLowPrecision = true;
  static constexpr int kSince = 20;
  static constexpr ParamList kParams{1, {{"approximate", 0.0f, "none|tanh"}}};
  static constexpr double kCost = kMath;
  OF_FWD(p[0] != 0.0f ? math::FastGeluTanh(x) : math::FastGelu(x))
  OF_BWD_FROM_X(GeluGrad(d, x, p[0] != 0.0f))
};
struct HardSigmoid : RowDefaults {
  static constexpr const char* kName = op::kHardSigmoid;
  static constexpr ParamList kParams{2, {{"alpha", 0.2f}, {"beta", 0.5f}}};
  OF_FWD(math::Clamp(C(p[0]) * x + C(p[1]), C(0), C(1)))
  OF_BWD_FROM_X((C(p[0]) * x + C(p[1]) > C(0) && C(p[0]) * x + C(p[1]) < C(1)) ? d * C(p[0]) : C(0))
};
struct HardSwish : RowDefaults {
  static constexpr const char* kName = op::kHardSwish;
  static constexpr int kSince = 14;
  // (x + 3) / 6, not x / 6 + 1/2: near x = -3 the sum is exact and the factor keeps its digits
  OF_FWD(x * math::Clamp((x + C(3)) / C(6), C(0), C(1)))
  OF_BWD_FROM_X(x < C(-3) ? C(0) : (x > C(3) ? d : d * (x / C(3) + C(0.5))))
};
// Not standalone: Clip-13 takes its bounds as inputs (graph/ops/elementwise.cc, kernels/cpu/unary.cc);
// this row is the formula fused programs and epilogues apply with constant bounds.
struct Clip : RowDefaults {
  static constexpr const char* kName = op::kClip;
  static constexpr bool kStandalone = false;
  static constexpr ParamList kParams{2, {{"min", -INFINITY}, {"max", INFINITY}}};
  OF_FWD(math::Clamp(x, C(p[0]), C(p[1])))
};
struct Exp : RowDefaults {
  static constexpr const char* kName = op::kExp;
  static constexpr double kCost = kMath;
  OF_FWD(math::FastExp(x))
};
struct Log : RowDefaults {
  static constexpr const char* kName = op::kLog;
  static constexpr double kCost = kMath;
  OF_FWD(math::FastLog(x))
};
// Abs and Neg of an integer's minimum wrap to the minimum (numpy), computed in the unsigned type.
struct Neg : RowDefaults {
  static constexpr const char* kName = op::kNeg;
  static constexpr Types kTypes = Types::kNumeric;
  static constexpr Linearity kLinearity = Linearity::kLinear;
  template <class C>
  OF_HD static C Fwd(C x, const float*) {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(std::make_unsigned_t<C>(0) - static_cast<std::make_unsigned_t<C>>(x));
    else return -x;
  }
};
struct Abs : RowDefaults {
  static constexpr const char* kName = op::kAbs;
  static constexpr Types kTypes = Types::kNumeric;
  template <class C>
  OF_HD static C Fwd(C x, const float* p) {
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_floating_point_v<C>) return math::Fabs(x);
    else return x < C(0) ? Neg::Fwd(x, p) : x;
  }
};
struct Sqrt : RowDefaults {
  static constexpr const char* kName = op::kSqrt;
  static constexpr double kCost = kMath;
  OF_FWD(math::Sqrt(x))
};
struct Reciprocal : RowDefaults {
  static constexpr const char* kName = op::kReciprocal;
  OF_FWD(C(1) / x)
};
struct Erf : RowDefaults {
  static constexpr const char* kName = op::kErf;
  static constexpr double kCost = kMath;
  OF_FWD(math::FastErf(x))
  OF_BWD_FROM_X(d * C(1.12837916709551257390) * math::FastExp(-x * x))  // 2 / sqrt(pi) exp(-x^2)
};
struct Softplus : RowDefaults {
  static constexpr const char* kName = op::kSoftplus;
  static constexpr double kCost = kMath;
  OF_FWD(math::FastSoftplus(x))
  OF_BWD_FROM_X(d * math::FastSigmoid(x))
};
// Fused-only: Pow by the constant 2, 3 or 0.5 (passes/elementwise_fusion.cc).
struct Square : RowDefaults {
  static constexpr const char* kName = op::kSquare;
  static constexpr bool kStandalone = false;
  OF_FWD(x * x)
};
struct Cube : RowDefaults {
  static constexpr const char* kName = op::kCube;
  static constexpr bool kStandalone = false;
  OF_FWD(x * x * x)
};
struct PowHalf : RowDefaults {  // Pow(x, 0.5): +0 for -0 and +inf for -inf, where sqrt gives -0 and NaN
  static constexpr const char* kName = op::kPowHalf;
  static constexpr bool kStandalone = false;
  static constexpr double kCost = kMath;
  OF_FWD(x == -C(INFINITY) ? C(INFINITY) : math::Sqrt(x) + C(0))
};
struct Floor : RowDefaults {
  static constexpr const char* kName = op::kFloor;
  OF_FWD(math::Floor(x))
};
struct Ceil : RowDefaults {
  static constexpr const char* kName = op::kCeil;
  OF_FWD(math::Ceil(x))
};
struct Round : RowDefaults {  // half to even, the default rounding mode
  static constexpr const char* kName = op::kRound;
  OF_FWD(math::Rint(x))
};
struct Sign : RowDefaults {
  static constexpr const char* kName = op::kSign;
  static constexpr Types kTypes = Types::kNumeric;
  template <class C>
  OF_HD static C Fwd(C x, const float*) {
    if constexpr (std::is_floating_point_v<C>) {
      if (x != x) return x;
    }
    return C((x > C(0)) - (x < C(0)));
  }
};

#define OF_LIBM_ROW(Op)                              \
  struct Op : RowDefaults {                          \
    static constexpr const char* kName = #Op;        \
    static constexpr double kCost = kLibm;           \
    OF_FWD(math::Op(x))                             \
  };
OF_LIBM_ROW(Sin) OF_LIBM_ROW(Cos) OF_LIBM_ROW(Tan) OF_LIBM_ROW(Asin) OF_LIBM_ROW(Acos) OF_LIBM_ROW(Atan)
OF_LIBM_ROW(Sinh) OF_LIBM_ROW(Cosh) OF_LIBM_ROW(Asinh) OF_LIBM_ROW(Acosh) OF_LIBM_ROW(Atanh)
#undef OF_LIBM_ROW

struct Elu : RowDefaults {
  static constexpr const char* kName = op::kElu;
  static constexpr ParamList kParams{1, {{"alpha", 1.0f}}};
  static constexpr double kCost = kMath;
  OF_FWD(x < C(0) ? C(p[0]) * math::FastExpm1(x) : x)
  OF_BWD_FROM_X(x > C(0) ? d : d * C(p[0]) * math::FastExp(x))
};
struct Selu : RowDefaults {
  static constexpr const char* kName = op::kSelu;
  static constexpr ParamList kParams{2, {{"alpha", 1.67326319217681884765625f}, {"gamma", 1.05070102214813232421875f}}};
  static constexpr double kCost = kMath;
  OF_FWD(x <= C(0) ? C(p[1]) * C(p[0]) * math::FastExpm1(x) : C(p[1]) * x)
  OF_BWD_FROM_X(d * (x > C(0) ? C(p[1]) : C(p[1]) * C(p[0]) * math::FastExp(x)))
};
struct Celu : RowDefaults {
  static constexpr const char* kName = op::kCelu;
  static constexpr ParamList kParams{1, {{"alpha", 1.0f}}};
  static constexpr double kCost = kMath;
  OF_FWD(x > C(0) ? x : C(p[0]) * math::FastExpm1(x / C(p[0])))
  OF_BWD_FROM_X(x > C(0) ? d : d * math::FastExp(x / C(p[0])))
};
struct Softsign : RowDefaults {
  static constexpr const char* kName = op::kSoftsign;
  OF_FWD(x / (C(1) + math::Fabs(x)))
  OF_BWD_FROM_X(d / ((C(1) + math::Fabs(x)) * (C(1) + math::Fabs(x))))
};
// d/dx x tanh(softplus(x)) = tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x)
template <class C>
OF_HD C MishGrad(C d, C x) {
  const C t = math::FastTanh(math::FastSoftplus(x));
  return d * (t + x * (C(1) - t * t) * math::FastSigmoid(x));
}
struct Mish : RowDefaults {
  static constexpr const char* kName = op::kMish;
  static constexpr int kSince = 18;
  static constexpr double kCost = kMath;
  OF_FWD(math::FastMish(x))
  OF_BWD_FROM_X(MishGrad(d, x))
};
struct ThresholdedRelu : RowDefaults {
  static constexpr const char* kName = op::kThresholdedRelu;
  static constexpr ParamList kParams{1, {{"alpha", 1.0f}}};
  OF_FWD(x > C(p[0]) ? x : C(0))
  OF_BWD_FROM_X(x > C(p[0]) ? d : C(0))
};
// x * sigmoid(a x) and its derivative sigmoid(a x) (1 + a x (1 - sigmoid(a x))).
template <class C>
OF_HD C SwishGrad(C d, C x, C a) {
  const C s = math::FastSigmoid(a * x);
  return d * (s + a * x * s * (C(1) - s));
}
struct Swish : RowDefaults {
  static constexpr const char* kName = op::kSwish;
  static constexpr int kSince = 24;
  static constexpr ParamList kParams{1, {{"alpha", 1.0f}}};
  static constexpr double kCost = kMath;
  OF_FWD(x * math::FastSigmoid(C(p[0]) * x))
  OF_BWD_FROM_X(SwishGrad(d, x, C(p[0])))
};
// ONNX Runtime's contrib op (com.microsoft QuickGelu, as CLIP and other exported transformers use
// it): Swish with alpha 1.702, the sigmoid approximation of Gelu; Swish's formulas.
struct MsQuickGelu : Swish {
  static constexpr const char* kName = op::kMsQuickGelu;
  static constexpr int kSince = 1;
  static constexpr ParamList kParams{1, {{"alpha", 1.702f}}};
};
// ONNX Runtime's contrib Gelu (com.microsoft Gelu, which its transformer optimizer writes into
// BERT- and GPT-style models): the exact erf form, ONNX Gelu with approximate="none", no attributes.
struct MsGelu : RowDefaults {
  static constexpr const char* kName = op::kMsGelu;
  static constexpr bool kFollowsLowPrecision = true;
  static constexpr int kSince = 1;
  static constexpr double kCost = kMath;
  OF_FWD(math::FastGelu(x))
  OF_BWD_FROM_X(GeluGrad(d, x, false))
};

#undef OF_FWD
#undef OF_BWD_FROM_X
#undef OF_BWD_FROM_Y
#undef OF_BWD

}  // namespace unary

namespace unary {

// Calls body(first) with `first` the row's first parameter: for a row whose first parameter is a
// choice (Gelu's approximate), a std::integral_constant of its value, so that inside the body's
// loop the formula's branch on it folds away at compile time and the loop vectorizes; otherwise
// p[0] itself. The CPU loops build their parameter array as {float(first), p[1]}.
template <class Op, class Body>
inline void WithFirstParam(const float* p, Body&& body) {
  if constexpr (Op::kParams.count > 0 && Op::kParams.items[0].choices != nullptr) {
    if (p[0] == 0.0f) return body(std::integral_constant<int, 0>{});
    if (p[0] == 1.0f) return body(std::integral_constant<int, 1>{});
  }
  body(p[0]);
}

}  // namespace unary

// Every row, once. The order is the order of UnaryOpId and of FusedElementwise's unary
// instructions; append new rows anywhere (programs are built and run by the same library).
// A typed id per row; kNone (0) is "no op" (an epilogue without activation).
enum class UnaryOpId : int16_t {
  kNone = 0,
#define OF_UNARY_ID(Op) k##Op,
  ONEFLOW_UNARY_OPS(OF_UNARY_ID)
#undef OF_UNARY_ID
  kCount
};

// A row's facts as data, for code that looks ops up by name at run time (passes, epilogues).
struct UnaryOpInfo {
  UnaryOpId id;
  OpId op;       // its id in the op list
  OpId grad_op;  // the id of its <Name>Grad op (a schema and kernels only where `grad` says)
  const char* name;
  // The row's token, unique where names are not (MsGelu is com.microsoft Gelu): what fused ops'
  // "activation" attribute stores.
  const char* token;
  const char* domain;
  int since;
  unary::Types types;
  unary::ParamList params;
  unary::GradFrom grad;
  unary::Linearity linearity;
  double cost;
  bool standalone;
  bool follows_low_precision;
};

#define OF_UNARY_INFO(Op)                                                                                     \
  UnaryOpInfo{UnaryOpId::k##Op, OpId::k##Op, OpId::k##Op##Grad, unary::Op::kName, #Op,   OpDomain(OpId::k##Op),     unary::Op::kSince,                \
              unary::Op::kTypes, unary::Op::kParams, unary::Op::kGrad, unary::Op::kLinearity, unary::Op::kCost, \
              unary::Op::kStandalone, unary::Op::kFollowsLowPrecision},
// Indexed by UnaryOpId - 1.
inline constexpr UnaryOpInfo kUnaryOps[] = {ONEFLOW_UNARY_OPS(OF_UNARY_INFO)};
#undef OF_UNARY_INFO
static_assert(sizeof(kUnaryOps) / sizeof(kUnaryOps[0]) == static_cast<size_t>(UnaryOpId::kCount) - 1);

inline const UnaryOpInfo& UnaryInfo(UnaryOpId id) { return kUnaryOps[static_cast<int>(id) - 1]; }
// The row of op `name` in `domain` ("" = ONNX), standalone or not; nullptr when there is none.
const UnaryOpInfo* FindUnaryOp(const std::string& domain, const std::string& name);
// The row's parameters from a node's attributes (defaults where absent). A string parameter
// outside its choices throws kUnsupported naming `what`. `out` gets kMaxParams values.
void ReadUnaryParams(const UnaryOpInfo& info, const AttrMap& attrs, float* out, const std::string& what);
// ReadUnaryParams for passes that only fuse what they can express: false instead of the error (an
// unknown Gelu approximation stays unfused, for the op's own kernel to reject).
bool TryReadUnaryParams(const UnaryOpInfo& info, const AttrMap& attrs, float* out);
// ReadUnaryParams, then body(first, p1) as unary::WithFirstParam gives `first`, with p1 the second
// parameter: how the CPU kernels of a row start.
template <class Op, class Body>
inline void WithRowParams(const UnaryOpInfo& info, const AttrMap& attrs, const std::string& what, Body&& body) {
  float p[unary::kMaxParams];
  ReadUnaryParams(info, attrs, p, what);
  const float p1 = p[1];
  unary::WithFirstParam<Op>(p, [&](auto first) { body(first, p1); });
}

}  // namespace oneflow
