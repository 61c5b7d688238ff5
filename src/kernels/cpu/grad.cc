// CPU kernels of the ai.oneflow gradient ops (graph/ops/grad_ops.cc): activation derivatives,
// ReduceSumToShape, GatherGrad and SliceGrad.
#include <cmath>
#include <cstring>

#include "graph/ops/tensor_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/half_compute.h"
#include "kernels/cpu/tensor_copy.h"
#include "graph/op_schema.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// dX[i] = f(dY[i], S[i]) where S is the saved forward value; f sees float or double.
template <typename F>
void ActivationGrad(KernelContext& ctx, F f, double cost) {
  const Tensor& dy = ctx.input(0);
  const Tensor& s = ctx.input(1);
  OF_REQUIRE(dy.shape() == s.shape(), ctx.node_desc(), ": dY has shape ", ShapeToString(dy.shape()),
             " but the saved value has ", ShapeToString(s.shape()));
  DispatchFloating(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* pd = dy.data<T>();
    const T* ps = s.data<T>();
    T* out = ctx.output(0).data<T>();
    ctx.pool().ParallelFor(dy.numel(), cost, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = static_cast<T>(f(static_cast<C>(pd[i]), static_cast<C>(ps[i])));
    });
  });
}

// <Op>Grad of a unary row (graph/ops/unary_ops.h): dX = Bwd(dY, saved X or Y) with the
// forward op's attributes.
template <UnaryOpId kId, class Op>
void DerivativeKernel(KernelContext& ctx) {
  WithRowParams<Op>(UnaryInfo(kId), ctx.attrs(), ctx.node_desc(), [&](auto first, float p1) {
    ActivationGrad(ctx, [first, p1](auto d, auto s) {
      const float q[unary::kMaxParams] = {static_cast<float>(first), p1};
      return Op::Bwd(d, s, q);
    }, Op::kCost);
  });
}

// Rows without Bwd register nothing (a template, so their missing Bwd is never instantiated).
template <UnaryOpId kId, class Op>
void RegisterDerivative(KernelRegistry& r) {
  if constexpr (Op::kStandalone && Op::kGrad != unary::GradFrom::kNone)
    r.RegisterFn(UnaryInfo(kId).grad_op, DerivativeKernel<kId, Op>);
}

void RegisterDerivatives(KernelRegistry& r) {
#define OF_REGISTER_DERIVATIVE(Op) RegisterDerivative<UnaryOpId::k##Op, unary::Op>(r);
  ONEFLOW_UNARY_OPS(OF_REGISTER_DERIVATIVE)
#undef OF_REGISTER_DERIVATIVE
}
ONEFLOW_KERNEL_TABLE(RegisterDerivatives);

void ShrinkGradKernel(KernelContext& ctx) {
  const float lambd = ctx.attrs().GetFloat("lambd");
  ActivationGrad(ctx, [lambd](auto d, auto x) {
    using C = decltype(x);
    return x < -C(lambd) || x > C(lambd) ? d : C(0);
  }, kCheapCost);
}
ONEFLOW_KERNEL(ShrinkGrad, ShrinkGradKernel);

// Y (of `shape`) = X summed over the dims where X broadcasts Y (numpy alignment from the right).
void ReduceSumToShapeKernel(KernelContext& ctx) {
  if (HasHalfInput(ctx)) return ComputeHalfViaF32(ctx, ReduceSumToShapeKernel);
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Shape& xs = x.shape();
  const Shape& ys = y.shape();
  OF_REQUIRE(ys.size() <= xs.size(), ctx.node_desc(), ": cannot sum ", ShapeToString(xs), " to the larger rank ",
             ShapeToString(ys));
  const size_t off = xs.size() - ys.size();
  for (size_t d = 0; d < ys.size(); ++d)
    OF_REQUIRE(ys[d] == xs[off + d] || ys[d] == 1, ctx.node_desc(), ": ", ShapeToString(xs),
               " is not a broadcast of ", ShapeToString(ys));
  std::memset(y.raw(), 0, y.nbytes());
  if (x.numel() == 0) return;
  // Y's element strides inside X's iteration space (0 on summed dims); adjacent dims merged.
  Shape padded(off, 1);
  padded.insert(padded.end(), ys.begin(), ys.end());
  BroadcastPlan p = MakeBroadcastPlan({padded}, xs);
  const int r = static_cast<int>(p.dims.size());
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const int64_t inner = p.dims[static_cast<size_t>(r - 1)];
    const int64_t sy = p.strides[0][static_cast<size_t>(r - 1)];
    // Walks X in row-major order over the columns [kb, ke) of the collapsed inner dim. Each output
    // element is summed in X's order whatever the split, so results do not depend on threads.
    auto walk = [&](int64_t kb, int64_t ke) {
      std::vector<int64_t> idx(static_cast<size_t>(r), 0);
      int64_t oy = 0;
      for (int64_t i = 0; i < p.numel; i += inner) {
        if (sy) {
          for (int64_t k = kb; k < ke; ++k) py[oy + k] += px[i + k];
        } else {
          T s = 0;
          for (int64_t k = 0; k < inner; ++k) s += px[i + k];
          py[oy] += s;
        }
        for (int d = r - 2; d >= 0; --d) {
          oy += p.strides[0][static_cast<size_t>(d)];
          if (++idx[static_cast<size_t>(d)] < p.dims[static_cast<size_t>(d)]) break;
          oy -= p.strides[0][static_cast<size_t>(d)] * p.dims[static_cast<size_t>(d)];
          idx[static_cast<size_t>(d)] = 0;
        }
      }
    };
    // The inner dim kept (bias gradients: [rows, C] -> [C]): threads take disjoint column ranges,
    // which write disjoint outputs. Otherwise one sequential pass.
    if (sy) ctx.pool().ParallelFor(inner, static_cast<double>(p.numel / inner), walk);
    else walk(0, inner);
  });
}
ONEFLOW_KERNEL(ReduceSumToShape, ReduceSumToShapeKernel);

// dX[o, idx[j], i] += dY[o, j, i]: Gather's adjoint, parallel over the outer dims (no races).
void GatherGradKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  Tensor& dx = ctx.output(0);
  const Shape& xs = dx.shape();
  OF_REQUIRE(!xs.empty(), ctx.node_desc(), ": the data shape must have rank >= 1");
  const int64_t axis = ctx.attrs().GetInt("axis");
  OF_REQUIRE(axis >= 0 && axis < static_cast<int64_t>(xs.size()), ctx.node_desc(), ": axis ", axis, " out of range");
  const int64_t outer = ShapeProduct(xs, 0, static_cast<size_t>(axis));
  const int64_t n = xs[static_cast<size_t>(axis)];
  const int64_t inner = ShapeProduct(xs, static_cast<size_t>(axis) + 1, xs.size());
  const int64_t m = ind.numel();
  OF_REQUIRE(dy.numel() == outer * m * inner, ctx.node_desc(), ": dY has ", dy.numel(), " elements, expected ",
             outer * m * inner);
  std::vector<int64_t> idx = ind.ToInt64Vector();
  for (int64_t& k : idx) {
    if (k < 0) k += n;
    OF_REQUIRE(k >= 0 && k < n, ctx.node_desc(), ": index out of range [", -n, ", ", n, ")");
  }
  std::memset(dx.raw(), 0, dx.nbytes());
  DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pd = dy.data<T>();
    T* px = dx.data<T>();
    ctx.pool().ParallelFor(outer, static_cast<double>(m * inner), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (int64_t j = 0; j < m; ++j) {
          T* dst = px + (o * n + idx[static_cast<size_t>(j)]) * inner;
          const T* src = pd + (o * m + j) * inner;
          for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
        }
    });
  });
}
ONEFLOW_KERNEL(GatherGrad, GatherGradKernel);

// dX = zeros; dX[start + i * step] = dY[i] per axis (the positions Slice read are distinct).
void SliceGradKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  Tensor& dx = ctx.output(0);
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(4)) axes = ctx.input(4).ToInt64Vector();
  if (ctx.has_input(5)) steps = ctx.input(5).ToInt64Vector();
  std::vector<SliceAxis> sl = ComputeSlice(dx.shape(), ctx.input(2).ToInt64Vector(), ctx.input(3).ToInt64Vector(),
                                           axes, steps, ctx.node_desc());
  Shape shape(sl.size());
  for (size_t k = 0; k < sl.size(); ++k) shape[k] = sl[k].count;
  OF_REQUIRE(shape == dy.shape(), ctx.node_desc(), ": dY has shape ", ShapeToString(dy.shape()), ", the slice gives ",
             ShapeToString(shape));
  std::memset(dx.raw(), 0, dx.nbytes());
  if (dy.numel() == 0) return;
  std::vector<int64_t> xstr = ContiguousStrides(dx.shape());
  int64_t base = 0;
  std::vector<int64_t> step(sl.size());
  for (size_t k = 0; k < sl.size(); ++k) {
    base += sl[k].start * xstr[k];
    step[k] = sl[k].step * xstr[k];
  }
  DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pd = dy.data<T>();
    T* px = dx.data<T>();
    const size_t r = sl.size();
    std::vector<int64_t> idx(r, 0);
    int64_t o = base;
    for (int64_t i = 0; i < dy.numel(); ++i) {
      px[o] = pd[i];
      for (size_t d = r; d-- > 0;) {
        o += step[d];
        if (++idx[d] < shape[d]) break;
        o -= step[d] * shape[d];
        idx[d] = 0;
      }
    }
  });
}
ONEFLOW_KERNEL(SliceGrad, SliceGradKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
