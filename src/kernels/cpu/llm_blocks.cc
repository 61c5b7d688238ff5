// CPU kernels: SwiGLU and CausalConvWithState (graph/ops/llm_blocks.cc). float16/bfloat16 are
// computed in float and rounded once at the end; the sigmoids are fastmath's vectorizable form.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/fast_math.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// Runs fn(inputs as f32/f64, output as f32/f64) with half types widened, and narrows the output.
template <typename Fn>
void InFloat(KernelContext& ctx, Tensor& out0, Fn&& fn) {
  const bool half = IsHalfDType(out0.dtype());
  Tensor out = half ? Tensor::Uninitialized(DType::kFloat32, out0.shape()) : out0;
  auto widen = [&](size_t i) { return half ? WidenToFloat(ctx.input(i)) : ctx.input(i); };
  fn(widen, out);
  if (half) NarrowFromFloat(out, out0);
}

void SwiGLUKernel(KernelContext& ctx) {
  const Shape& sa = ctx.input(0).shape();
  OF_REQUIRE(sa == ctx.input(1).shape(), ctx.node_desc(), ": A ", ShapeToString(sa), " and B ",
             ShapeToString(ctx.input(1).shape()), " must have one shape");
  const float alpha = ctx.attrs().GetFloat("alpha", 1.0f);
  InFloat(ctx, ctx.output(0), [&](auto widen, Tensor& y) {
    const Tensor a = widen(0), b = widen(1);
    DispatchFloat(y.dtype(), [&](auto tag) {
      using C = typename decltype(tag)::type;
      const C* pa = a.data<C>();
      const C* pb = b.data<C>();
      C* out = y.data<C>();
      const C al = static_cast<C>(alpha);
      ctx.pool().ParallelFor(y.numel(), kMathCost, [&](int64_t begin, int64_t end) {
        OF_IVDEP
        for (int64_t i = begin; i < end; ++i) out[i] = pa[i] * fastmath::Sigmoid(al * pa[i]) * pb[i];
      });
    });
  });
}
ONEFLOW_KERNEL(SwiGLU, SwiGLUKernel);

// output[b, c, t] = act(bias[c] + sum_j weight[c, 0, j] * padded[b, c, t + j]) with
// padded = past_state (or zeros, k - 1 positions) then input; present_state = padded's last k - 1.
void CausalConvWithStateKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const Tensor& w0 = ctx.input(1);
  OF_REQUIRE(x0.rank() == 3 && w0.rank() == 3 && w0.dim(0) == x0.dim(1) && w0.dim(1) == 1 && w0.dim(2) >= 1,
             ctx.node_desc(), ": input ", ShapeToString(x0.shape()), " and weight ", ShapeToString(w0.shape()),
             " must be [batch, channels, length] and [channels, 1, k]");
  const int64_t batch = x0.dim(0), channels = x0.dim(1), length = x0.dim(2), k = w0.dim(2);
  if (ctx.has_input(2))
    OF_REQUIRE(ctx.input(2).numel() == channels, ctx.node_desc(), ": bias must have ", channels, " entries");
  if (ctx.has_input(3)) {
    const Shape want{batch, channels, k - 1};
    OF_REQUIRE(ctx.input(3).shape() == want, ctx.node_desc(), ": past_state ", ShapeToString(ctx.input(3).shape()),
               " must be ", ShapeToString(want));
  }
  const bool silu = ctx.attrs().GetString("activation", "none") != "none";
  Tensor& state0 = ctx.output(1);
  InFloat(ctx, ctx.output(0), [&](auto widen, Tensor& y) {
    const Tensor x = widen(0), w = widen(1);
    const Tensor bias = ctx.has_input(2) ? widen(2) : Tensor();
    const Tensor past = ctx.has_input(3) ? widen(3) : Tensor();
    const bool half = IsHalfDType(state0.dtype());
    Tensor state = half ? Tensor::Uninitialized(DType::kFloat32, state0.shape()) : state0;
    DispatchFloat(y.dtype(), [&](auto tag) {
      using C = typename decltype(tag)::type;
      const int64_t padded_len = length + k - 1;
      ctx.pool().ParallelFor(batch * channels, static_cast<double>(padded_len * k), [&](int64_t begin, int64_t end) {
        std::vector<C> padded(static_cast<size_t>(padded_len));
        for (int64_t row = begin; row < end; ++row) {  // row = b * channels + c
          const int64_t c = row % channels;
          if (past.defined()) std::memcpy(padded.data(), past.data<C>() + row * (k - 1), static_cast<size_t>(k - 1) * sizeof(C));
          else std::fill(padded.begin(), padded.begin() + (k - 1), C(0));
          std::memcpy(padded.data() + (k - 1), x.data<C>() + row * length, static_cast<size_t>(length) * sizeof(C));
          const C* wc = w.data<C>() + c * k;
          const C b = bias.defined() ? bias.data<C>()[c] : C(0);
          C* out = y.data<C>() + row * length;
          for (int64_t t = 0; t < length; ++t) {
            C acc = b;
            for (int64_t j = 0; j < k; ++j) acc += wc[j] * padded[static_cast<size_t>(t + j)];
            out[t] = silu ? acc * fastmath::Sigmoid(acc) : acc;
          }
          std::memcpy(state.data<C>() + row * (k - 1), padded.data() + length, static_cast<size_t>(k - 1) * sizeof(C));
        }
      });
    });
    if (half) NarrowFromFloat(state, state0);
  });
}
ONEFLOW_KERNEL(CausalConvWithState, CausalConvWithStateKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
