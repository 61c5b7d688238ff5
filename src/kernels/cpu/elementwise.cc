// CPU kernels: elementwise.
#include "graph/infer_util.h"
#include "kernels/cpu/all_kernels.h"
#include "kernels/kernel.h"

namespace oneflow {

static void AddKernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& c = ctx.output(0);
  OF_REQUIRE(a.shape() == b.shape(), "broadcast not implemented yet");
  DispatchNumeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = c.data<T>();
    for (int64_t i = 0; i < c.numel(); ++i) pc[i] = pa[i] + pb[i];
  });
}

static void ReluKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) py[i] = px[i] > T(0) ? px[i] : T(0);
  });
}

void RegisterCpuElementwiseKernels(KernelRegistry& r) {
  r.RegisterFn("Add", AddKernel);
  r.RegisterFn("Relu", ReluKernel);
}

}  // namespace oneflow
