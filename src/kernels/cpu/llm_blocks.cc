// CPU kernels: SwiGLU, CausalConvWithState and LinearAttention (graph/ops/llm_blocks.cc). float16/bfloat16 are
// computed in float and rounded once at the end; the sigmoids are fastmath's vectorizable form.
#include <algorithm>
#include <cmath>
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

// A float32 tensor as it is, a 16-bit one widened.
Tensor AsFloat(const Tensor& t) { return t.dtype() == DType::kFloat32 ? t : WidenToFloat(t); }

// LinearAttention: per batch and key/value head, the [d_k, d_v] state is kept in float through the
// steps (as the reference does); heads run in parallel.
void LinearAttentionKernel(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const std::string& rule = ctx.attrs().GetString("update_rule", "gated_delta");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  const int64_t hq = ctx.attrs().GetInt("q_num_heads"), hkv = ctx.attrs().GetInt("kv_num_heads");
  const Tensor q = AsFloat(ctx.input(0)), k = AsFloat(ctx.input(1)), v = AsFloat(ctx.input(2));
  OF_REQUIRE(q.rank() == 3 && k.rank() == 3 && v.rank() == 3, node, ": query, key and value must be rank 3");
  const int64_t batch = q.dim(0), steps = q.dim(1), dk = q.dim(2) / hq, dv = v.dim(2) / hkv, group = hq / hkv;
  OF_REQUIRE(k.dim(0) == batch && v.dim(0) == batch && k.dim(1) == steps && v.dim(1) == steps && k.dim(2) == hkv * dk &&
                 q.dim(2) == hq * dk && v.dim(2) == hkv * dv,
             node, ": query ", ShapeToString(q.shape()), ", key ", ShapeToString(k.shape()), " and value ",
             ShapeToString(v.shape()), " do not match ", hq, " query and ", hkv, " key/value heads");
  Tensor decay, beta, past;
  bool decay_per_dim = false;
  if (gated) {
    decay = AsFloat(ctx.input(4));
    OF_REQUIRE(decay.rank() == 3 && decay.dim(0) == batch && decay.dim(1) == steps &&
                   (decay.dim(2) == hkv || decay.dim(2) == hkv * dk),
               node, ": decay ", ShapeToString(decay.shape()), " must be [", batch, ", ", steps, ", ", hkv, " or ",
               hkv * dk, "]");
    decay_per_dim = decay.dim(2) == hkv * dk && dk != 1;
  }
  if (delta) {
    beta = AsFloat(ctx.input(5));
    OF_REQUIRE(beta.rank() == 3 && beta.dim(0) == batch && beta.dim(1) == steps && (beta.dim(2) == hkv || beta.dim(2) == 1),
               node, ": beta ", ShapeToString(beta.shape()), " must be [", batch, ", ", steps, ", ", hkv, " or 1]");
  }
  if (ctx.has_input(3)) {
    past = AsFloat(ctx.input(3));
    OF_REQUIRE(past.shape() == (Shape{batch, hkv, dk, dv}), node, ": past_state ", ShapeToString(past.shape()),
               " must be ", ShapeToString(Shape{batch, hkv, dk, dv}));
  }
  const float attr_scale = ctx.attrs().GetFloat("scale", 0.0f);
  const float scale = attr_scale == 0.0f ? 1.0f / std::sqrt(static_cast<float>(dk)) : attr_scale;
  Tensor out = Tensor::Uninitialized(DType::kFloat32, {batch, steps, hq * dv});
  Tensor state = Tensor::Uninitialized(DType::kFloat32, {batch, hkv, dk, dv});
  const float* qs = q.data<float>();
  const float* ks = k.data<float>();
  const float* vs = v.data<float>();
  ctx.pool().ParallelFor(batch * hkv, static_cast<double>(steps * dk * dv * (group + 2)), [&](int64_t begin, int64_t end) {
    std::vector<float> corrected(static_cast<size_t>(dv));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / hkv, h = bh % hkv;
      float* S = state.data<float>() + bh * dk * dv;
      if (past.defined()) std::memcpy(S, past.data<float>() + bh * dk * dv, static_cast<size_t>(dk * dv) * sizeof(float));
      else std::fill(S, S + dk * dv, 0.0f);
      for (int64_t t = 0; t < steps; ++t) {
        const float* kt = ks + (b * steps + t) * hkv * dk + h * dk;
        const float* vt = vs + (b * steps + t) * hkv * dv + h * dv;
        if (gated) {
          const float* g = decay.data<float>() + (b * steps + t) * decay.dim(2) + h * (decay_per_dim ? dk : 1);
          for (int64_t i = 0; i < dk; ++i) {
            const float f = std::exp(g[decay_per_dim ? i : 0]);
            for (int64_t j = 0; j < dv; ++j) S[i * dv + j] *= f;
          }
        }
        const float* update = vt;
        if (delta) {  // v' = beta (v - S^T k)
          const float bt = beta.data<float>()[(b * steps + t) * beta.dim(2) + (beta.dim(2) == 1 ? 0 : h)];
          for (int64_t j = 0; j < dv; ++j) corrected[static_cast<size_t>(j)] = 0.0f;
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dv; ++j) corrected[static_cast<size_t>(j)] += S[i * dv + j] * kt[i];
          for (int64_t j = 0; j < dv; ++j) corrected[static_cast<size_t>(j)] = bt * (vt[j] - corrected[static_cast<size_t>(j)]);
          update = corrected.data();
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += kt[i] * update[j];
        for (int64_t g = 0; g < group; ++g) {  // the query heads reading this key/value head
          const int64_t head = h * group + g;
          const float* qt = qs + (b * steps + t) * hq * dk + head * dk;
          float* o = out.data<float>() + (b * steps + t) * hq * dv + head * dv;
          for (int64_t j = 0; j < dv; ++j) o[j] = 0.0f;
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dv; ++j) o[j] += qt[i] * S[i * dv + j];
          for (int64_t j = 0; j < dv; ++j) o[j] *= scale;
        }
      }
    }
  });
  Tensor& y = ctx.output(0);
  if (y.dtype() == DType::kFloat32) std::memcpy(y.raw(), out.raw(), out.nbytes());
  else NarrowFromFloat(out, y);
  Tensor& present = ctx.output(1);
  if (present.dtype() == DType::kFloat32) std::memcpy(present.raw(), state.raw(), state.nbytes());
  else NarrowFromFloat(state, present);
}
ONEFLOW_KERNEL(LinearAttention, LinearAttentionKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
