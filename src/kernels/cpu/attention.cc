// CPU kernel: ai.oneflow FusedAttention, softmax(scale * Q K^T [causal]) V per batch and head. One
// query row at a time (scores in a row buffer, max-subtracted softmax in f32, f64 for f64 data);
// f16/bf16 run in f32. The reference the CUDA flash kernel is tested against.
#include <cmath>
#include <vector>

#include "graph/op_schema.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

struct AttentionDims {
  int64_t bh, sq, sk, d, dv;
};

template <typename T>
void AttentionRows(const T* q, const T* k, const T* v, T* y, const AttentionDims& a, T scale, bool causal,
                   ThreadPool& pool) {
  const double cost = static_cast<double>(a.sk * (a.d + a.dv));
  pool.ParallelFor(a.bh * a.sq, cost, [&](int64_t begin, int64_t end) {
    std::vector<T> p(static_cast<size_t>(a.sk));
    for (int64_t r = begin; r < end; ++r) {
      const int64_t h = r / a.sq, i = r % a.sq;
      const T* qi = q + r * a.d;
      const T* kh = k + h * a.sk * a.d;
      const T* vh = v + h * a.sk * a.dv;
      const int64_t keys = causal ? std::min(a.sk, i + 1) : a.sk;
      T mx = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        T s = 0;
        for (int64_t c = 0; c < a.d; ++c) s += qi[c] * kh[j * a.d + c];
        p[j] = s * scale;
        mx = std::max(mx, p[j]);
      }
      T sum = 0;
      for (int64_t j = 0; j < keys; ++j) {
        p[j] = std::exp(p[j] - mx);
        sum += p[j];
      }
      T* yi = y + r * a.dv;
      for (int64_t c = 0; c < a.dv; ++c) yi[c] = 0;
      for (int64_t j = 0; j < keys; ++j) {
        const T w = p[j] / sum;
        for (int64_t c = 0; c < a.dv; ++c) yi[c] += w * vh[j * a.dv + c];
      }
    }
  });
}

void FusedAttentionKernel(KernelContext& ctx) {
  const Tensor& q0 = ctx.input(0);
  const Tensor& k0 = ctx.input(1);
  const Tensor& v0 = ctx.input(2);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(q0.rank() == 4 && k0.rank() == 4 && v0.rank() == 4, node, ": Q, K and V must be [B, H, S, D]");
  OF_REQUIRE(q0.dim(0) == k0.dim(0) && q0.dim(1) == k0.dim(1) && k0.dim(0) == v0.dim(0) && k0.dim(1) == v0.dim(1) &&
                 q0.dim(3) == k0.dim(3) && k0.dim(2) == v0.dim(2),
             node, ": Q ", ShapeToString(q0.shape()), ", K ", ShapeToString(k0.shape()), " and V ",
             ShapeToString(v0.shape()), " do not match");
  const AttentionDims a{q0.dim(0) * q0.dim(1), q0.dim(2), k0.dim(2), q0.dim(3), v0.dim(3)};
  if (y.numel() == 0) return;
  OF_REQUIRE(a.sk > 0, node, ": K and V have no keys");
  float scale = ctx.attrs().GetFloat("scale", 0.0f);
  if (scale == 0.0f) scale = 1.0f / std::sqrt(static_cast<float>(a.d));
  const bool causal = ctx.attrs().GetInt("causal", 0) != 0;
  if (q0.dtype() == DType::kFloat64) {
    AttentionRows<double>(q0.data<double>(), k0.data<double>(), v0.data<double>(), y.data<double>(), a, scale, causal,
                          ctx.pool());
    return;
  }
  const bool half = IsHalfDType(q0.dtype());
  OF_REQUIRE(half || q0.dtype() == DType::kFloat32, node, ": dtype ", DTypeName(q0.dtype()), " is not supported");
  const Tensor q = half ? WidenToFloat(q0) : q0, k = half ? WidenToFloat(k0) : k0, v = half ? WidenToFloat(v0) : v0;
  Tensor yf = half ? Tensor::Uninitialized(DType::kFloat32, y.shape()) : y;
  AttentionRows<float>(q.data<float>(), k.data<float>(), v.data<float>(), yf.data<float>(), a, scale, causal, ctx.pool());
  if (half) NarrowFromFloat(yf, y);
}
ONEFLOW_KERNEL(FusedAttention, FusedAttentionKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
