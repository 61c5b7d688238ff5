// CPU kernels: ONNX Runtime's contrib FastGelu, BiasGelu and FusedMatMul (graph/ops/contrib.cc).
// The GELUs add their bias (broadcast, numpy rules) and apply the vectorized fastmath forms that
// Gelu's rows use; FusedMatMul is MatMul's batching over Sgemm with the transposes folded into the
// operands.
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "base/fast_math.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/matmul_shape.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// X + bias, broadcast to the output's shape, in the compute type (f32; f64 for f64).
template <typename C>
std::vector<C> BiasedInput(KernelContext& ctx, const Shape& out) {
  auto expand = [&](const Tensor& t) {
    std::vector<C> v(static_cast<size_t>(NumElements(out)));
    const int64_t r = static_cast<int64_t>(out.size());
    std::vector<int64_t> stride(out.size(), 0);
    int64_t s = 1;
    for (int64_t i = r - 1, j = t.rank() - 1; j >= 0; --i, --j) {
      stride[static_cast<size_t>(i)] = t.dim(j) == 1 ? 0 : s;
      s *= t.dim(j);
    }
    const Tensor f = IsHalfDType(t.dtype()) ? WidenToFloat(t) : t;
    std::vector<int64_t> idx(out.size(), 0);
    int64_t off = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = f.dtype() == DType::kFloat64 ? static_cast<C>(f.data<double>()[off]) : static_cast<C>(f.data<float>()[off]);
      for (int64_t d = r - 1; d >= 0; --d) {
        off += stride[static_cast<size_t>(d)];
        if (++idx[static_cast<size_t>(d)] < out[static_cast<size_t>(d)]) break;
        off -= stride[static_cast<size_t>(d)] * out[static_cast<size_t>(d)];
        idx[static_cast<size_t>(d)] = 0;
      }
    }
    return v;
  };
  std::vector<C> x = expand(ctx.input(0));
  if (ctx.num_inputs() > 1 && ctx.has_input(1)) {
    const std::vector<C> b = expand(ctx.input(1));
    for (size_t i = 0; i < x.size(); ++i) x[i] += b[i];
  }
  return x;
}

template <bool kTanh>
void BiasedGeluKernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  auto run = [&](auto tag) {
    using C = typename decltype(tag)::type;
    std::vector<C> x = BiasedInput<C>(ctx, y.shape());
    ctx.pool().ParallelFor(static_cast<int64_t>(x.size()), 20.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) x[i] = kTanh ? fastmath::GeluTanh(x[i]) : fastmath::Gelu(x[i]);
    });
    return x;
  };
  if (y.dtype() == DType::kFloat64) {
    const std::vector<double> out = run(TypeTag<double>{});
    std::copy(out.begin(), out.end(), y.data<double>());
    return;
  }
  const std::vector<float> out = run(TypeTag<float>{});
  if (y.dtype() == DType::kFloat32) {
    std::copy(out.begin(), out.end(), y.data<float>());
    return;
  }
  Tensor f = Tensor::Uninitialized(DType::kFloat32, y.shape());
  std::copy(out.begin(), out.end(), f.data<float>());
  NarrowFromFloat(f, y);
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
