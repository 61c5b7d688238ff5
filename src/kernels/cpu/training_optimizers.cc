// CPU kernels of ai.onnx.preview.training Adagrad, Momentum and Adam (graph/ops/training.cc has the
// formulas). Each element is updated in double and stored in the tensor's dtype, as the ONNX
// reference computes it.
#include <cmath>
#include <string>

#include "kernels/cpu/isa_region.h"
#include "kernels/kernel.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

struct StepScalars {
  double r = 0;
  int64_t t = 0;
};

StepScalars ReadScalars(const KernelContext& ctx) {
  const Tensor& r = ctx.input(0);
  const Tensor& t = ctx.input(1);
  OF_CHECK(r.numel() == 1 && t.numel() == 1 && t.dtype() == DType::kInt64, kInvalidArgument, ctx.node_desc(),
           ": R and T must be one value each (T int64), got ", DescribeValue(r), " and ", DescribeValue(t));
  return {r.GetAsDouble(0), t.GetAsInt64(0)};
}

// Calls update(x, g, states..., outs...) per element of every optimized tensor: `groups` inputs
// per tensor after R and T, and groups - 1 outputs (X_new, then the new states).
template <size_t groups, typename Update>
void ForEachElement(KernelContext& ctx, Update&& update) {
  const size_t n = (ctx.num_inputs() - 2) / groups;
  for (size_t i = 0; i < n; ++i) {
    const Tensor* in[groups];
    for (size_t g = 0; g < groups; ++g) {
      in[g] = &ctx.input(2 + g * n + i);
      OF_CHECK(in[g]->shape() == in[0]->shape() && in[g]->dtype() == in[0]->dtype(), kInvalidArgument,
               ctx.node_desc(), ": input ", 2 + g * n + i, " is ", DescribeValue(*in[g]), " but X[", i, "] is ",
               DescribeValue(*in[0]));
    }
    Tensor* out[groups - 1];
    for (size_t g = 0; g + 1 < groups; ++g) out[g] = &ctx.output(g * n + i);
    DispatchFloat(in[0]->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const int64_t count = in[0]->numel();
      for (int64_t e = 0; e < count; ++e) {
        double v[groups], o[groups - 1];
        for (size_t g = 0; g < groups; ++g) v[g] = static_cast<double>(in[g]->template data<T>()[e]);
        update(v, o);
        for (size_t g = 0; g + 1 < groups; ++g) out[g]->template data<T>()[e] = static_cast<T>(o[g]);
      }
    });
  }
}

void Adagrad(KernelContext& ctx) {
  const StepScalars s = ReadScalars(ctx);
  const double decay = ctx.attrs().GetFloat("decay_factor"), eps = ctx.attrs().GetFloat("epsilon");
  const double norm = ctx.attrs().GetFloat("norm_coefficient");
  const double r = s.r / (1.0 + static_cast<double>(s.t) * decay);
  ForEachElement<3>(ctx, [&](const double* v, double* o) {  // v: X, G, H; o: X_new, H_new
    const double g = norm * v[0] + v[1];
    o[1] = v[2] + g * g;
    o[0] = v[0] - r * g / (std::sqrt(o[1]) + eps);
  });
}
ONEFLOW_KERNEL(Adagrad, Adagrad);

void Momentum(KernelContext& ctx) {
  const StepScalars s = ReadScalars(ctx);
  const double alpha = ctx.attrs().GetFloat("alpha"), norm = ctx.attrs().GetFloat("norm_coefficient");
  const double beta = s.t > 0 ? ctx.attrs().GetFloat("beta") : 1.0;
  const std::string& mode = ctx.attrs().GetString("mode");
  OF_CHECK(mode == "standard" || mode == "nesterov", kInvalidArgument, ctx.node_desc(), ": mode '", mode,
           "' is neither 'standard' nor 'nesterov'");
  const bool nesterov = mode == "nesterov";
  ForEachElement<3>(ctx, [&](const double* v, double* o) {  // v: X, G, V; o: X_new, V_new
    const double g = norm * v[0] + v[1];
    o[1] = alpha * v[2] + beta * g;
    o[0] = v[0] - s.r * (nesterov ? g + alpha * o[1] : o[1]);
  });
}
ONEFLOW_KERNEL(Momentum, Momentum);

void Adam(KernelContext& ctx) {
  const StepScalars s = ReadScalars(ctx);
  const double alpha = ctx.attrs().GetFloat("alpha"), beta = ctx.attrs().GetFloat("beta");
  const double eps = ctx.attrs().GetFloat("epsilon"), norm = ctx.attrs().GetFloat("norm_coefficient");
  const double post = ctx.attrs().GetFloat("norm_coefficient_post");
  const double t = static_cast<double>(s.t);
  const double r = s.t > 0 ? s.r * std::sqrt(1.0 - std::pow(beta, t)) / (1.0 - std::pow(alpha, t)) : s.r;
  ForEachElement<4>(ctx, [&](const double* v, double* o) {  // v: X, G, V, H; o: X_new, V_new, H_new
    const double g = norm * v[0] + v[1];
    o[1] = alpha * v[2] + (1.0 - alpha) * g;
    o[2] = beta * v[3] + (1.0 - beta) * g * g;
    o[0] = (1.0 - post) * (v[0] - r * (o[1] / (std::sqrt(o[2]) + eps)));
  });
}
ONEFLOW_KERNEL(Adam, Adam);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
