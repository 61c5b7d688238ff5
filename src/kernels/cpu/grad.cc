// CPU kernels of the ai.oneflow gradient ops (graph/ops/grad_ops.cc): activation derivatives,
// ReduceSumToShape, GatherGrad and SliceGrad.
#include <cmath>
#include <cstring>

#include "graph/ops/tensor_util.h"
#include "kernels/cpu/all_kernels.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/half_compute.h"
#include "kernels/cpu/tensor_copy.h"
#include "graph/op_schema.h"
#include "kernels/kernel.h"

namespace oneflow {
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

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1 / sqrt(2 pi)
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;

void ReluGradKernel(KernelContext& ctx) {
  ActivationGrad(ctx, [](auto d, auto y) { return y > decltype(y)(0) ? d : decltype(d)(0); }, kCheapCost);
}
void SigmoidGradKernel(KernelContext& ctx) {
  ActivationGrad(ctx, [](auto d, auto y) { return d * y * (decltype(y)(1) - y); }, kCheapCost);
}
void TanhGradKernel(KernelContext& ctx) {
  ActivationGrad(ctx, [](auto d, auto y) { return d * (decltype(y)(1) - y * y); }, kCheapCost);
}
void ErfGradKernel(KernelContext& ctx) {
  ActivationGrad(ctx, [](auto d, auto x) { return d * decltype(x)(kTwoOverSqrtPi) * std::exp(-x * x); }, kLibmCost);
}
void LeakyReluGradKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  ActivationGrad(ctx, [alpha](auto d, auto x) { return x > decltype(x)(0) ? d : d * decltype(d)(alpha); }, kCheapCost);
}
void EluGradKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  ActivationGrad(ctx, [alpha](auto d, auto x) {
    using C = decltype(x);
    return x > C(0) ? d : d * C(alpha) * std::exp(x);
  }, kLibmCost);
}
void GeluGradKernel(KernelContext& ctx) {
  const std::string& approx = ctx.attrs().GetString("approximate");
  OF_CHECK(approx == "none" || approx == "tanh", kUnsupported, ctx.node_desc(), ": approximate='", approx, "'");
  if (approx == "tanh") {
    ActivationGrad(ctx, [](auto d, auto x) {
      using C = decltype(x);
      const C inner = C(kSqrt2OverPi) * (x + C(0.044715) * x * x * x);
      const C t = std::tanh(inner);
      const C dinner = C(kSqrt2OverPi) * (C(1) + C(3 * 0.044715) * x * x);
      return d * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * dinner);
    }, kLibmCost);
  } else {
    ActivationGrad(ctx, [](auto d, auto x) {
      using C = decltype(x);
      const C cdf = C(0.5) * (C(1) + std::erf(x * C(0.70710678118654752440)));
      return d * (cdf + x * C(kInvSqrt2Pi) * std::exp(C(-0.5) * x * x));
    }, kLibmCost);
  }
}
void HardSigmoidGradKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha"), beta = ctx.attrs().GetFloat("beta");
  ActivationGrad(ctx, [alpha, beta](auto d, auto x) {
    using C = decltype(x);
    const C v = C(alpha) * x + C(beta);
    return v > C(0) && v < C(1) ? d * C(alpha) : C(0);
  }, kCheapCost);
}
void HardSwishGradKernel(KernelContext& ctx) {
  ActivationGrad(ctx, [](auto d, auto x) {
    using C = decltype(x);
    return x < C(-3) ? C(0) : (x > C(3) ? d : d * (x / C(3) + C(0.5)));
  }, kCheapCost);
}
void SoftplusGradKernel(KernelContext& ctx) {
  ActivationGrad(ctx, [](auto d, auto x) {
    using C = decltype(x);
    return d / (C(1) + std::exp(-x));
  }, kLibmCost);
}

void SoftsignGradKernel(KernelContext& ctx) {
  ActivationGrad(ctx, [](auto d, auto x) {
    using C = decltype(x);
    const C s = C(1) + std::fabs(x);
    return d / (s * s);
  }, kCheapCost);
}
// d/dx x tanh(softplus(x)) = tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x)
void MishGradKernel(KernelContext& ctx) {
  ActivationGrad(ctx, [](auto d, auto x) {
    using C = decltype(x);
    const C sp = x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    const C t = std::tanh(sp);
    return d * (t + x * (C(1) - t * t) / (C(1) + std::exp(-x)));
  }, kLibmCost);
}
void SeluGradKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha"), gamma = ctx.attrs().GetFloat("gamma");
  ActivationGrad(ctx, [alpha, gamma](auto d, auto x) {
    using C = decltype(x);
    return d * (x > C(0) ? C(gamma) : C(gamma) * C(alpha) * std::exp(x));
  }, kLibmCost);
}
void CeluGradKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  ActivationGrad(ctx, [alpha](auto d, auto x) {
    using C = decltype(x);
    return x > C(0) ? d : d * std::exp(x / C(alpha));
  }, kLibmCost);
}
void ThresholdedReluGradKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  ActivationGrad(ctx, [alpha](auto d, auto x) { return x > decltype(x)(alpha) ? d : decltype(d)(0); }, kCheapCost);
}
void ShrinkGradKernel(KernelContext& ctx) {
  const float lambd = ctx.attrs().GetFloat("lambd");
  ActivationGrad(ctx, [lambd](auto d, auto x) {
    using C = decltype(x);
    return x < -C(lambd) || x > C(lambd) ? d : C(0);
  }, kCheapCost);
}
// d/dx x sigmoid(a x) = s + a x s (1 - s)
void SwishGradKernel(KernelContext& ctx) {
  const float alpha = ctx.attrs().GetFloat("alpha");
  ActivationGrad(ctx, [alpha](auto d, auto x) {
    using C = decltype(x);
    const C s = C(1) / (C(1) + std::exp(-C(alpha) * x));
    return d * (s + C(alpha) * x * s * (C(1) - s));
  }, kLibmCost);
}

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

}  // namespace

void RegisterCpuGradKernels(KernelRegistry& r) {
  r.RegisterFn("ReduceSumToShape", ReduceSumToShapeKernel, kOneflowDomain);
  r.RegisterFn("ReluGrad", ReluGradKernel, kOneflowDomain);
  r.RegisterFn("SigmoidGrad", SigmoidGradKernel, kOneflowDomain);
  r.RegisterFn("TanhGrad", TanhGradKernel, kOneflowDomain);
  r.RegisterFn("ErfGrad", ErfGradKernel, kOneflowDomain);
  r.RegisterFn("LeakyReluGrad", LeakyReluGradKernel, kOneflowDomain);
  r.RegisterFn("EluGrad", EluGradKernel, kOneflowDomain);
  r.RegisterFn("GeluGrad", GeluGradKernel, kOneflowDomain);
  r.RegisterFn("HardSigmoidGrad", HardSigmoidGradKernel, kOneflowDomain);
  r.RegisterFn("HardSwishGrad", HardSwishGradKernel, kOneflowDomain);
  r.RegisterFn("SoftplusGrad", SoftplusGradKernel, kOneflowDomain);
  r.RegisterFn("SoftsignGrad", SoftsignGradKernel, kOneflowDomain);
  r.RegisterFn("MishGrad", MishGradKernel, kOneflowDomain);
  r.RegisterFn("SeluGrad", SeluGradKernel, kOneflowDomain);
  r.RegisterFn("CeluGrad", CeluGradKernel, kOneflowDomain);
  r.RegisterFn("ThresholdedReluGrad", ThresholdedReluGradKernel, kOneflowDomain);
  r.RegisterFn("ShrinkGrad", ShrinkGradKernel, kOneflowDomain);
  r.RegisterFn("SwishGrad", SwishGradKernel, kOneflowDomain);
  r.RegisterFn("GatherGrad", GatherGradKernel, kOneflowDomain);
  r.RegisterFn("SliceGrad", SliceGradKernel, kOneflowDomain);
}

}  // namespace oneflow
