// CPU kernels: MatMul (numpy semantics: 1-D operands, batch broadcasting) and Gemm, plus their
// fused variants. f32 runs on the packed SGEMM; other types use the reference GEMM.
#include <cstring>
#include <type_traits>

#include "graph/infer_util.h"
#include "kernels/cpu/half_compute.h"
#include "kernels/cpu/matmul_shape.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

bool BIsShared(const MatMulShape& s) {
  for (int64_t st : s.b_stride)
    if (st != 0) return false;
  return true;
}

template <typename T>
void AddBiasAndActivate(T* y, int64_t rows, int64_t n, const T* bias, const ActivationParams& act) {
  for (int64_t i = 0; i < rows; ++i) {
    T* row = y + i * n;
    if (bias)
      for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) ApplyActivation(act, row, n);
  }
}

}  // namespace

MatMulKernel::MatMulKernel(const KernelInitContext& init) : act_(ReadActivation(init.attrs())) {
  const Tensor* b = init.constant_input(1);
  if (b && b->dtype() == DType::kFloat32 && b->rank() == 2) {
    packed_b_ = PackGemmB(b->dim(0), b->dim(1), b->data<float>(), b->dim(1), false);
    has_packed_b_ = true;
  }
}

void MatMulKernel::Compute(KernelContext& ctx) {
  if (HasHalfInput(ctx)) return ComputeHalfViaF32(ctx, [this](KernelContext& c) { Compute(c); });
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  MatMulShape s = AnalyzeMatMul(a.shape(), b.shape());
  if (bias) OF_REQUIRE(bias->numel() == s.N, ctx.node_desc(), ": bias must have ", s.N, " values");
  if (y.numel() == 0) return;
  const int64_t batch = s.BatchCount();
  // B shared by every batch item and A contiguous: one GEMM with the batch folded into M.
  const bool fold = BIsShared(s) && a.rank() >= 2;
  if (a.dtype() == DType::kFloat32) {
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.data<float>();
    GemmEpilogue ep;
    ep.col_bias = bias ? bias->data<float>() : nullptr;
    ep.act = act_;
    const GemmOperand bop = has_packed_b_ ? GemmOperand::PackedOrRaw(packed_b_, pb, s.N) : GemmOperand::Raw(pb, s.N);
    if (fold) {
      // B's batch dims are all 1, so the output holds A's batch x M rows.
      const int64_t rows = y.numel() / s.N;
      Sgemm(rows, s.N, s.K, 1.0f, GemmOperand::Raw(pa, s.K), bop, 0.0f, py, s.N, &ep, &ctx.pool());
      return;
    }
    const double flops = 2.0 * static_cast<double>(s.M) * s.N * s.K;
    auto one = [&](int64_t i, ThreadPool* pool) {
      int64_t ao, bo;
      BatchOffsets(s, i, ao, bo);
      Sgemm(s.M, s.N, s.K, 1.0f, GemmOperand::Raw(pa + ao, s.K), GemmOperand::Raw(pb + bo, s.N), 0.0f,
            py + i * s.M * s.N, s.N, &ep, pool);
    };
    if (flops < 4e6 && batch > 1) {
      // Many small products (attention heads): one whole GEMM per task.
      ctx.pool().ParallelFor(batch, flops / 16.0, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) one(i, nullptr);
      });
    } else {
      for (int64_t i = 0; i < batch; ++i) one(i, &ctx.pool());
    }
    return;
  }
  if (bias || act_.kind != Activation::kNone)
    OF_REQUIRE(a.dtype() == DType::kFloat64, ctx.node_desc(), ": fused epilogue needs float32/float64");
  DispatchNumeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = y.data<T>();
    ctx.pool().ParallelFor(batch, 2.0 * static_cast<double>(s.M) * s.N * s.K, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        int64_t ao, bo;
        BatchOffsets(s, i, ao, bo);
        T* yi = py + i * s.M * s.N;
        ReferenceGemm<T>(s.M, s.N, s.K, T(1), pa + ao, s.K, false, pb + bo, s.N, false, T(0), yi, s.N);
        AddBiasAndActivate<T>(yi, s.M, s.N, bias ? bias->data<T>() : nullptr, act_);
      }
    });
  });
}
ONEFLOW_KERNEL_CLASS(MatMul, MatMulKernel);
ONEFLOW_KERNEL_CLASS(FusedMatMul, MatMulKernel);

GemmKernel::GemmKernel(const KernelInitContext& init)
    : act_(ReadActivation(init.attrs())),
      alpha_(init.attrs().GetFloat("alpha", 1.0f)),
      beta_(init.attrs().GetFloat("beta", 1.0f)),
      trans_a_(init.attrs().GetInt("transA", 0) != 0),
      trans_b_(init.attrs().GetInt("transB", 0) != 0) {
  const Tensor* b = init.constant_input(1);
  if (b && b->dtype() == DType::kFloat32 && b->rank() == 2) {
    const int64_t k = trans_b_ ? b->dim(1) : b->dim(0), n = trans_b_ ? b->dim(0) : b->dim(1);
    packed_b_ = PackGemmB(k, n, b->data<float>(), b->dim(1), trans_b_);
    has_packed_b_ = true;
    if (trans_b_ && GemmPrefersRawB(n)) {
      b_kn_.resize(static_cast<size_t>(k * n));
      const float* src = b->data<float>();
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < k; ++i) b_kn_[static_cast<size_t>(i * n + j)] = src[j * k + i];
    }
  }
}

// Y = beta * broadcast(C) (C of rank 0..2, unidirectionally broadcast to [M, N]).
template <typename T>
static void FillBroadcastC(const Tensor& c, T beta, T* y, int64_t M, int64_t N) {
  const T* pc = c.data<T>();
  const int64_t cr = c.rank() == 2 ? c.dim(0) : 1;
  const int64_t cc = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
  OF_REQUIRE((cr == 1 || cr == M) && (cc == 1 || cc == N), "Gemm: C of shape ", ShapeToString(c.shape()),
             " does not broadcast to [", M, ",", N, "]");
  for (int64_t i = 0; i < M; ++i) {
    const T* row = pc + (cr == 1 ? 0 : i * cc);
    T* out = y + i * N;
    for (int64_t j = 0; j < N; ++j) out[j] = beta * row[cc == 1 ? 0 : j];
  }
}

void GemmKernel::Compute(KernelContext& ctx) {
  if (HasHalfInput(ctx)) return ComputeHalfViaF32(ctx, [this](KernelContext& c) { Compute(c); });
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  const int64_t M = y.dim(0), N = y.dim(1);
  const int64_t K = trans_a_ ? a.dim(0) : a.dim(1);
  if (y.numel() == 0) return;
  const bool use_c = c != nullptr && beta_ != 0.0f;
  if (a.dtype() == DType::kFloat32) {
    float* py = y.data<float>();
    GemmEpilogue ep;
    ep.act = act_;
    float beta = 0.0f;
    const bool c_is_row = use_c && beta_ == 1.0f && c->numel() == N && (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1));
    if (c_is_row && N > 1) {
      ep.col_bias = c->data<float>();  // the common fully connected bias: added in the epilogue
    } else if (use_c) {
      FillBroadcastC<float>(*c, beta_, py, M, N);
      beta = 1.0f;
    }
    GemmOperand bop = GemmOperand::Raw(b.data<float>(), b.dim(1), trans_b_);
    if (has_packed_b_)
      bop = b_kn_.empty() ? GemmOperand::PackedOrRaw(packed_b_, b.data<float>(), b.dim(1), trans_b_)
                          : GemmOperand::PackedOrRaw(packed_b_, b_kn_.data(), N, false);
    Sgemm(M, N, K, alpha_, GemmOperand::Raw(a.data<float>(), a.dim(1), trans_a_), bop, beta, py, N, &ep,
          &ctx.pool());
    return;
  }
  if (act_.kind != Activation::kNone)
    OF_REQUIRE(a.dtype() == DType::kFloat64, ctx.node_desc(), ": fused activation needs float32/float64");
  DispatchNumeric(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* py = y.data<T>();
    if (use_c) FillBroadcastC<T>(*c, static_cast<T>(beta_), py, M, N);
    ReferenceGemm<T>(M, N, K, static_cast<T>(alpha_), a.data<T>(), a.dim(1), trans_a_, b.data<T>(), b.dim(1), trans_b_,
                     use_c ? T(1) : T(0), py, N);
    AddBiasAndActivate<T>(py, M, N, nullptr, act_);
  });
}
ONEFLOW_KERNEL_CLASS(Gemm, GemmKernel);
ONEFLOW_KERNEL_CLASS(FusedGemm, GemmKernel);

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
