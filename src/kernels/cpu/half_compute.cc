// ComputeHalfViaF32: widen f16/bf16 inputs, run the f32 body, round the outputs back.
#include "kernels/cpu/half_compute.h"

#include <vector>

#include "base/half.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

template <typename From, typename To>
void Convert(const From* src, To* dst, int64_t n, ThreadPool& pool) {
  pool.ParallelFor(n, 1.0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = To(static_cast<float>(src[i]));
  });
}

Tensor Widen(const Tensor& t, ThreadPool& pool) {
  Tensor out = Tensor::Uninitialized(DType::kFloat32, t.shape());
  if (t.dtype() == DType::kFloat16) Convert(t.data<Float16>(), out.data<float>(), t.numel(), pool);
  else Convert(t.data<BFloat16>(), out.data<float>(), t.numel(), pool);
  return out;
}

void Narrow(const Tensor& f32, Tensor& out, ThreadPool& pool) {
  if (out.dtype() == DType::kFloat16) Convert(f32.data<float>(), out.data<Float16>(), f32.numel(), pool);
  else Convert(f32.data<float>(), out.data<BFloat16>(), f32.numel(), pool);
}

}  // namespace

bool HasHalfInput(const KernelContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && IsHalfDType(ctx.input(i).dtype())) return true;
  return false;
}

void ComputeHalfViaF32(KernelContext& ctx, const std::function<void(KernelContext&)>& f32_body) {
  KernelContext inner(ctx.node(), ctx.pool(), &ctx.node_desc());
  std::vector<Tensor> wide_in(ctx.num_inputs()), wide_out(ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      inner.inputs().push_back(nullptr);
      continue;
    }
    const Tensor& t = ctx.input(i);
    if (IsHalfDType(t.dtype())) {
      wide_in[i] = Widen(t, ctx.pool());
      inner.inputs().push_back(&wide_in[i]);
    } else {
      inner.inputs().push_back(&t);
    }
  }
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) {
      inner.outputs().push_back(nullptr);
      continue;
    }
    Tensor& t = ctx.output(i);
    if (IsHalfDType(t.dtype())) {
      wide_out[i] = Tensor::Uninitialized(DType::kFloat32, t.shape());
      inner.outputs().push_back(&wide_out[i]);
    } else {
      inner.outputs().push_back(&t);
    }
  }
  f32_body(inner);
  for (size_t i = 0; i < ctx.num_outputs(); ++i)
    if (wide_out[i].defined()) Narrow(wide_out[i], ctx.output(i), ctx.pool());
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
