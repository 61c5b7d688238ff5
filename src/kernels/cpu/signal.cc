// CPU kernels: HannWindow, HammingWindow, BlackmanWindow (graph/ops/signal.cc). Samples are computed
// in double and converted to the output type (integer types truncate toward zero, as numpy's astype).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "base/dtype.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

constexpr double kPi = 3.14159265358979323846;

template <typename Sample>
void WindowKernel(KernelContext& ctx, Sample sample) {
  Tensor& y = ctx.output(0);
  const int64_t n = y.numel();
  const bool periodic = ctx.attrs().GetInt("periodic", 1) != 0;
  const double period = static_cast<double>(periodic ? n : n - 1);
  DispatchAll(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = y.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      // A symmetric window of one sample has period 0: its sample is NaN (0 / 0) as the formula and
      // onnxruntime give; an integer output type has no NaN and gets 0.
      const double v = sample(static_cast<double>(i) / period);
      if constexpr (std::is_integral_v<T>) out[i] = std::isfinite(v) ? static_cast<T>(v) : T(0);
      else out[i] = CastFromDouble<T>(v);
    }
  });
}

void HannWindowKernel(KernelContext& ctx) {
  WindowKernel(ctx, [](double x) {
    const double s = std::sin(kPi * x);
    return s * s;
  });
}
void HammingWindowKernel(KernelContext& ctx) {
  WindowKernel(ctx, [](double x) { return 25.0 / 46.0 - (21.0 / 46.0) * std::cos(2.0 * kPi * x); });
}
void BlackmanWindowKernel(KernelContext& ctx) {
  WindowKernel(ctx, [](double x) { return 0.42 - 0.5 * std::cos(2.0 * kPi * x) + 0.08 * std::cos(4.0 * kPi * x); });
}
ONEFLOW_KERNEL(HannWindow, HannWindowKernel);
ONEFLOW_KERNEL(HammingWindow, HammingWindowKernel);
ONEFLOW_KERNEL(BlackmanWindow, BlackmanWindowKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
