// CPU kernels: the unary rows of graph/ops/unary_ops.h, and Clip, Shrink, IsNaN, IsInf, Not, BitwiseNot.
#include <cmath>

#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
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

// A standalone unary row (graph/ops/unary_ops.h): y = Fwd(x) with the node's attributes as the
// row's parameters, computed in float for 16-bit floats and, for kNumeric rows, in each integer type.
template <UnaryOpId kId, class Op>
void RowKernel(KernelContext& ctx) {
  WithRowParams<Op>(UnaryInfo(kId), ctx.attrs(), ctx.node_desc(), [&](auto first, float p1) {
    auto f = [first, p1](auto v) {
      const float q[unary::kMaxParams] = {static_cast<float>(first), p1};
      return Op::Fwd(v, q);
    };
    if constexpr (Op::kTypes == unary::Types::kNumeric) NumericUnary(ctx, f, Op::kCost);
    else FloatUnary(ctx, f, Op::kCost);
  });
}

template <UnaryOpId kId, class Op>
void RegisterRow(KernelRegistry& r) {
  if constexpr (Op::kStandalone) r.RegisterFn(UnaryInfo(kId).op, RowKernel<kId, Op>);
}

// Every standalone unary row of graph/op_list.h runs RowKernel.
void RegisterRows(KernelRegistry& r) {
#define OF_REGISTER_ROW(Op) RegisterRow<UnaryOpId::k##Op, unary::Op>(r);
  ONEFLOW_UNARY_OPS(OF_REGISTER_ROW)
#undef OF_REGISTER_ROW
}
ONEFLOW_KERNEL_TABLE(RegisterRows);

// ---- Unary ops outside the rows: bounds as inputs, integer saturation, bool results -----------

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
ONEFLOW_KERNEL(Shrink, ShrinkKernel);

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
ONEFLOW_KERNEL(Clip, ClipKernel);

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
ONEFLOW_KERNEL(IsNaN, IsNaNKernel);

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
ONEFLOW_KERNEL(IsInf, IsInfKernel);

void NotKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  OF_CHECK(x.dtype() == DType::kBool, kUnsupported, ctx.node_desc(), ": Not needs bool input, got ",
           DTypeName(x.dtype()));
  UnaryMap(ctx.pool(), x.data<bool>(), ctx.output(0).data<bool>(), x.numel(), [](bool v) { return !v; }, kCheapCost);
}
ONEFLOW_KERNEL(Not, NotKernel);

void BitwiseNotKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DispatchInteger(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    UnaryMap(ctx.pool(), x.data<T>(), ctx.output(0).data<T>(), x.numel(), [](T v) { return static_cast<T>(~v); },
             kCheapCost);
  });
}
ONEFLOW_KERNEL(BitwiseNot, BitwiseNotKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
