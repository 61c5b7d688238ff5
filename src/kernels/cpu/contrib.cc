// CPU kernels: ONNX Runtime's contrib FastGelu, BiasGelu and FusedMatMul (graph/ops/contrib.cc).
// The GELUs add their bias through the broadcast engine (elementwise_util.h) and apply the
// vectorized fastmath forms that Gelu's rows use; FusedMatMul is MatMul's batching over Sgemm with the transposes folded into the
// operands.
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "base/fast_math.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/matmul_shape.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

template <bool kTanh>
void BiasedGeluKernel(KernelContext& ctx) {
  Tensor& y0 = ctx.output(0);
  const bool half = IsHalfDType(y0.dtype());
  const Tensor x = half ? WidenToFloat(ctx.input(0)) : ctx.input(0);
  Tensor y = half ? Tensor::Uninitialized(DType::kFloat32, y0.shape()) : y0;
  DispatchFloat(x.dtype(), [&](auto tag) {
    using C = typename decltype(tag)::type;
    auto gelu = [](C v) { return kTanh ? fastmath::GeluTanh(v) : fastmath::Gelu(v); };
    C* out = y.data<C>();
    if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
      const Tensor b = half ? WidenToFloat(ctx.input(1)) : ctx.input(1);
      BroadcastBinary(ctx.pool(), x.data<C>(), x.shape(), b.data<C>(), b.shape(), out, y.shape(),
                      [gelu](C v, C bias) { return gelu(v + bias); }, kMathCost);
    } else {
      UnaryMap(ctx.pool(), x.data<C>(), out, x.numel(), gelu, kMathCost);
    }
  });
  if (half) NarrowFromFloat(y, y0);
}
ONEFLOW_KERNEL(MsFastGelu, BiasedGeluKernel<true>);
ONEFLOW_KERNEL(MsBiasGelu, BiasedGeluKernel<false>);

// FusedMatMul: Y = alpha * op(A) op(B), op transposing the last two dims where transA / transB.
void ContribFusedMatMulKernel(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const bool ta = ctx.attrs().GetInt("transA", 0) != 0, tb = ctx.attrs().GetInt("transB", 0) != 0;
  OF_CHECK(ctx.attrs().GetInt("transBatchA", 0) == 0 && ctx.attrs().GetInt("transBatchB", 0) == 0, kUnsupported,
           node, ": transBatchA / transBatchB are not supported");
  const float alpha = ctx.attrs().GetFloat("alpha", 1.0f);
  const Tensor& a0 = ctx.input(0);
  const Tensor& b0 = ctx.input(1);
  OF_REQUIRE((!ta || a0.rank() >= 2) && (!tb || b0.rank() >= 2), node, ": a transposed operand needs rank >= 2");
  auto logical = [](const Shape& s, bool t) {
    Shape l = s;
    if (t) std::swap(l[l.size() - 1], l[l.size() - 2]);
    return l;
  };
  const MatMulShape m = AnalyzeMatMul(logical(a0.shape(), ta), logical(b0.shape(), tb));
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  if (m.K == 0) {  // an empty sum
    std::memset(y.raw(), 0, y.nbytes());
    return;
  }
  const bool half = IsHalfDType(a0.dtype());
  const Tensor a = half ? WidenToFloat(a0) : a0, b = half ? WidenToFloat(b0) : b0;
  Tensor yc = half ? Tensor::Uninitialized(DType::kFloat32, y.shape()) : y;
  const int64_t lda = ta ? m.M : m.K, ldb = tb ? m.K : m.N;
  for (int64_t i = 0; i < m.BatchCount(); ++i) {
    int64_t ao = 0, bo = 0;
    BatchOffsets(m, i, ao, bo);
    const int64_t yo = i * m.M * m.N;
    if (a.dtype() == DType::kFloat64) {
      ReferenceGemm<double>(m.M, m.N, m.K, alpha, a.data<double>() + ao, lda, ta, b.data<double>() + bo, ldb, tb, 0.0,
                            yc.data<double>() + yo, m.N);
    } else {
      Sgemm(m.M, m.N, m.K, alpha, GemmOperand::Raw(a.data<float>() + ao, lda, ta),
            GemmOperand::Raw(b.data<float>() + bo, ldb, tb), 0.0f, yc.data<float>() + yo, m.N, nullptr, &ctx.pool());
    }
  }
  if (half) NarrowFromFloat(yc, y);
}
ONEFLOW_KERNEL(MsFusedMatMul, ContribFusedMatMulKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
