// CPU kernels of the losses (graph/ops/loss.cc): SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss
// and their ai.oneflow gradient ops. The input is viewed as (N, C, D) with D the product of the
// trailing dims; sums run in double in a fixed order, so results do not depend on the thread count.
#include <cmath>
#include <cstring>

#include "graph/op_schema.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

enum class Reduction { kNone, kSum, kMean };

struct LossLayout {
  int64_t n = 0, c = 0, d = 0;
  std::vector<int64_t> labels;  // n * d, row-major (n, d)
  std::vector<double> weight;   // n * d: the class weight of each position, 0 where ignored
  Reduction reduction = Reduction::kMean;
  double weight_sum = 0;        // the mean's denominator
};

// `x_shape` is the (N, C, D1..Dk) input; labels and weights are validated against it.
LossLayout MakeLayout(KernelContext& ctx, const Shape& x_shape, const Tensor& labels, const Tensor* weights) {
  LossLayout l;
  const std::string& who = ctx.node_desc();
  OF_REQUIRE(x_shape.size() >= 2, who, ": the input must have shape (N, C, ...), got ", ShapeToString(x_shape));
  l.n = x_shape[0];
  l.c = x_shape[1];
  l.d = ShapeProduct(x_shape, 2, x_shape.size());
  Shape want{x_shape[0]};
  want.insert(want.end(), x_shape.begin() + 2, x_shape.end());
  OF_REQUIRE(labels.shape() == want, who, ": labels have shape ", ShapeToString(labels.shape()), ", expected ",
             ShapeToString(want));
  if (weights) {
    OF_REQUIRE(weights->rank() == 1 && weights->dim(0) == l.c, who, ": weights must have shape [", l.c, "], got ",
               ShapeToString(weights->shape()));
  }
  const std::string& red = ctx.attrs().GetString("reduction");
  l.reduction = red == "none" ? Reduction::kNone : red == "sum" ? Reduction::kSum : Reduction::kMean;
  const bool has_ignore = ctx.attrs().has("ignore_index");
  const int64_t ignore = has_ignore ? ctx.attrs().GetInt("ignore_index") : 0;
  l.labels = labels.ToInt64Vector();
  l.weight.resize(l.labels.size());
  for (size_t i = 0; i < l.labels.size(); ++i) {
    const int64_t k = l.labels[i];
    if (has_ignore && k == ignore) {
      l.weight[i] = 0;
      continue;
    }
    OF_REQUIRE(k >= 0 && k < l.c, who, ": label ", k, " at position ", i, " is outside [0, ", l.c, ")",
               has_ignore ? " and is not ignore_index" : "");
    l.weight[i] = weights ? weights->GetAsDouble(k) : 1.0;
  }
  for (double w : l.weight) l.weight_sum += w;
  return l;
}

// Writes per-position losses (reduction none) or their sum / weighted mean into `out`.
template <typename T>
void WriteLoss(const LossLayout& l, const std::vector<double>& losses, Tensor& out) {
  T* o = out.data<T>();
  if (l.reduction == Reduction::kNone) {
    for (size_t i = 0; i < losses.size(); ++i) o[i] = static_cast<T>(losses[i]);
    return;
  }
  double total = 0;
  for (double v : losses) total += v;
  // A mean over nothing (every label ignored) is 0/0 = NaN, as in the ONNX reference.
  o[0] = static_cast<T>(l.reduction == Reduction::kSum ? total : total / l.weight_sum);
}

// The upstream gradient of position i: dloss[i] (none), dloss (sum) or dloss / weight_sum (mean).
template <typename T>
double UpstreamGrad(const LossLayout& l, const Tensor& dloss, size_t i) {
  const T* g = dloss.data<T>();
  if (l.reduction == Reduction::kNone) return static_cast<double>(g[i]);
  return l.reduction == Reduction::kSum ? static_cast<double>(g[0]) : static_cast<double>(g[0]) / l.weight_sum;
}

void CheckUpstream(KernelContext& ctx, const LossLayout& l, const Tensor& dloss) {
  const int64_t want = l.reduction == Reduction::kNone ? l.n * l.d : 1;
  OF_REQUIRE(dloss.numel() == want, ctx.node_desc(), ": dloss has ", dloss.numel(), " elements, expected ", want);
}

// log-sum-exp over the class dim at position (i, j).
template <typename T>
double LogSumExp(const T* x, int64_t c, int64_t d) {
  double m = -INFINITY;
  for (int64_t k = 0; k < c; ++k) m = std::max(m, static_cast<double>(x[k * d]));
  double s = 0;
  for (int64_t k = 0; k < c; ++k) s += std::exp(static_cast<double>(x[k * d]) - m);
  return m + std::log(s);
}

void SceKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const LossLayout l = MakeLayout(ctx, x.shape(), ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr);
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* lp = ctx.has_output(1) ? ctx.output(1).data<T>() : nullptr;
    std::vector<double> losses(static_cast<size_t>(l.n * l.d));
    ctx.pool().ParallelFor(l.n * l.d, static_cast<double>(l.c) * 30, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t i = p / l.d, j = p % l.d;
        const T* row = px + i * l.c * l.d + j;
        const double lse = LogSumExp(row, l.c, l.d);
        if (lp)
          for (int64_t k = 0; k < l.c; ++k) lp[i * l.c * l.d + k * l.d + j] = static_cast<T>(row[k * l.d] - lse);
        const double w = l.weight[static_cast<size_t>(p)];
        losses[static_cast<size_t>(p)] = w == 0 ? 0.0 : -(row[l.labels[static_cast<size_t>(p)] * l.d] - lse) * w;
      }
    });
    WriteLoss<T>(l, losses, ctx.output(0));
  });
}
ONEFLOW_KERNEL(SoftmaxCrossEntropyLoss, SceKernel);

// dscores[i, k, j] = g * w * (softmax[i, k, j] - [k == label]).
void SceGradKernel(KernelContext& ctx) {
  const Tensor& dloss = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const LossLayout l = MakeLayout(ctx, x.shape(), ctx.input(2), ctx.has_input(3) ? &ctx.input(3) : nullptr);
  CheckUpstream(ctx, l, dloss);
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* dx = ctx.output(0).data<T>();
    ctx.pool().ParallelFor(l.n * l.d, static_cast<double>(l.c) * 30, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t i = p / l.d, j = p % l.d;
        const T* row = px + i * l.c * l.d + j;
        T* drow = dx + i * l.c * l.d + j;
        const double gw = UpstreamGrad<T>(l, dloss, static_cast<size_t>(p)) * l.weight[static_cast<size_t>(p)];
        if (gw == 0) {
          for (int64_t k = 0; k < l.c; ++k) drow[k * l.d] = T(0);
          continue;
        }
        const double lse = LogSumExp(row, l.c, l.d);
        for (int64_t k = 0; k < l.c; ++k) drow[k * l.d] = static_cast<T>(gw * std::exp(row[k * l.d] - lse));
        const int64_t label = l.labels[static_cast<size_t>(p)];
        drow[label * l.d] = static_cast<T>(static_cast<double>(drow[label * l.d]) - gw);
      }
    });
  });
}
ONEFLOW_KERNEL(SoftmaxCrossEntropyLossGrad, SceGradKernel);

void NllKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const LossLayout l = MakeLayout(ctx, x.shape(), ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr);
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    std::vector<double> losses(static_cast<size_t>(l.n * l.d));
    for (int64_t p = 0; p < l.n * l.d; ++p) {
      const double w = l.weight[static_cast<size_t>(p)];
      const int64_t i = p / l.d, j = p % l.d;
      losses[static_cast<size_t>(p)] = w == 0 ? 0.0 : -px[(i * l.c + l.labels[static_cast<size_t>(p)]) * l.d + j] * w;
    }
    WriteLoss<T>(l, losses, ctx.output(0));
  });
}
ONEFLOW_KERNEL(NegativeLogLikelihoodLoss, NllKernel);

// dinput = zeros with -g * w at each (i, label, j).
void NllGradKernel(KernelContext& ctx) {
  const Tensor& dloss = ctx.input(0);
  Tensor& dx = ctx.output(0);
  const LossLayout l = MakeLayout(ctx, dx.shape(), ctx.input(1), ctx.has_input(3) ? &ctx.input(3) : nullptr);
  CheckUpstream(ctx, l, dloss);
  std::memset(dx.raw(), 0, dx.nbytes());
  DispatchFloat(dx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* px = dx.data<T>();
    for (int64_t p = 0; p < l.n * l.d; ++p) {
      const double w = l.weight[static_cast<size_t>(p)];
      if (w == 0) continue;
      const int64_t i = p / l.d, j = p % l.d;
      px[(i * l.c + l.labels[static_cast<size_t>(p)]) * l.d + j] =
          static_cast<T>(-UpstreamGrad<T>(l, dloss, static_cast<size_t>(p)) * w);
    }
  });
}
ONEFLOW_KERNEL(NegativeLogLikelihoodLossGrad, NllGradKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
