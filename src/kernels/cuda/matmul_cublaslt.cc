// MatMul, Gemm and the fused ai.oneflow FusedMatMul / FusedGemm on cuBLASLt (f32, tf32, f16, bf16),
// with bias and Relu/Gelu(tanh) epilogues fused; other activations run as one extra pass.
#include "kernels/cuda/matmul_cublaslt.h"

#include <cublasLt.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/op_schema.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;
constexpr size_t kMaxPlans = 4096;

std::atomic<int> g_allow_tf32{-1};  // -1: not yet read from the environment

cudaDataType_t LtType(DType dt) {
  switch (dt) {
    case DType::kFloat32: return CUDA_R_32F;
    case DType::kFloat16: return CUDA_R_16F;
    case DType::kBFloat16: return CUDA_R_16BF;
    default: Fail(ErrorCode::kUnsupported, "MatMul on CUDA: dtype ", DTypeName(dt), " is not supported");
  }
}

// One cuBLASLt handle per thread and device (handles are not meant to be shared across threads).
cublasLtHandle_t Handle(int device) {
  struct Handles {
    std::map<int, cublasLtHandle_t> by_device;
    ~Handles() {
      for (auto& [d, h] : by_device) (void)cublasLtDestroy(h);
    }
  };
  thread_local Handles handles;
  auto it = handles.by_device.find(device);
  if (it != handles.by_device.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  OF_CUBLAS_CHECK(cublasLtCreate(&h));
  handles.by_device.emplace(device, h);
  return h;
}

// RAII owners for the cuBLASLt descriptors.
struct OpDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~OpDesc() { if (d) (void)cublasLtMatmulDescDestroy(d); }
};
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  ~Layout() { if (l) (void)cublasLtMatrixLayoutDestroy(l); }
};
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  ~Preference() { if (p) (void)cublasLtMatmulPreferenceDestroy(p); }
};

void MakeLayout(Layout& out, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  OF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&out.l, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    OF_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(out.l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    OF_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(out.l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                     sizeof(stride)));
  }
}

// The heuristic's choice per problem: querying it costs more host time than launching a small GEMM.
// The operands' alignments are part of the key: the heuristic is told them (a smaller alignment
// excludes the algorithms that need more), so a plan is only reused for operands at least as aligned.
struct PlanKey {
  int device, dtype, compute;
  bool trans_a, trans_b;
  int64_t m, n, k, batch, stride_a, stride_b, stride_d;
  int epilogue;
  bool bias, beta;
  uint32_t align_a, align_b, align_d;  // bytes, in our operands' terms (A, B, D = C)
  auto Tie() const {
    return std::tie(device, dtype, compute, trans_a, trans_b, m, n, k, batch, stride_a, stride_b, stride_d, epilogue,
                    bias, beta, align_a, align_b, align_d);
  }
  bool operator<(const PlanKey& o) const { return Tie() < o.Tie(); }
};
struct PlanCache {
  std::mutex mu;
  std::map<PlanKey, cublasLtMatmulHeuristicResult_t> plans;
};
PlanCache& Plans() {
  static PlanCache* cache = new PlanCache();
  return *cache;
}

// cuBLASLt assumes 256-byte aligned operands unless the preference says otherwise, and its
// algorithms step from the base pointer by the leading dimension (every column) and by the batch
// stride (every batch): the alignment an algorithm may rely on is the largest power of two, at most
// 256, dividing the pointer, ld * element size and (batched, not broadcast) stride * element size.
uint32_t OperandAlignment(const void* p, int64_t ld, int64_t batch, int64_t stride, size_t elem_size) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | uint64_t{256};
  bits |= static_cast<uint64_t>(ld) * elem_size;
  if (batch > 1 && stride != 0) bits |= static_cast<uint64_t>(stride < 0 ? -stride : stride) * elem_size;
  return static_cast<uint32_t>(bits & (~bits + 1));  // the lowest set bit
}

// The fused bias epilogue reads the bias vector with wide loads; cuBLASLt has no preference
// attribute for its alignment, so a bias aligned to less than this is added outside the epilogue.
constexpr uint32_t kBiasAlignment = 16;

}  // namespace

void SetAllowTf32(bool allow) { g_allow_tf32.store(allow ? 1 : 0); }

bool AllowTf32() {
  int v = g_allow_tf32.load();
  if (v < 0) {
    const char* env = std::getenv("ONEFLOW_CUDA_ALLOW_TF32");
    v = env != nullptr && std::strcmp(env, "1") == 0 ? 1 : 0;
    g_allow_tf32.store(v);
  }
  return v == 1;
}

void LtMatmul(const LtGemm& in, cudaStream_t stream) {
  if (in.m == 0 || in.n == 0 || in.batch == 0) return;
  OF_CHECK(in.batch <= INT32_MAX, kUnsupported, "MatMul on CUDA: batch ", in.batch, " is too large");
  const cudaDataType_t type = LtType(in.dtype);
  const size_t es = DTypeSize(in.dtype);
  LtGemm g = in;
  if (g.bias != nullptr && OperandAlignment(g.bias, 0, 1, 0, es) < kBiasAlignment) {
    // A bias the epilogue cannot read (e.g. a view at an odd offset): D = bias broadcast over every
    // row of every batch, then D = alpha op(A) op(B) + 1 * D with the activation still fused.
    OF_CHECK(g.beta == 0.0f, kUnsupported, "MatMul on CUDA: a bias aligned to less than ", kBiasAlignment,
             " bytes together with beta != 0");
    if (g.batch == 1 || g.stride_d == g.m * g.n) {
      LaunchBroadcastTo(g.dtype, g.bias, Shape{g.n}, g.d, Shape{g.batch * g.m, g.n}, stream);
    } else {
      for (int64_t i = 0; i < g.batch; ++i)
        LaunchBroadcastTo(g.dtype, g.bias, Shape{g.n}, static_cast<char*>(g.d) + i * g.stride_d * es,
                          Shape{g.m, g.n}, stream);
    }
    g.bias = nullptr;
    g.beta = 1.0f;
  }
  const cublasComputeType_t compute =
      g.dtype == DType::kFloat32 && AllowTf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  int device = 0;
  OF_CUDA_CHECK(cudaGetDevice(&device));

  // cuBLASLt is column-major: a row-major [r,c] matrix is its column-major [c,r] transpose, so
  // D^T = op(B)^T op(A)^T is computed with B as cuBLASLt's first operand and A as its second.
  OpDesc op;
  OF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op.d, compute, CUDA_R_32F));
  const cublasOperation_t ta = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  OF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  OF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.bias) {
    epi = g.epilogue == LtEpilogue::kRelu       ? CUBLASLT_EPILOGUE_RELU_BIAS
          : g.epilogue == LtEpilogue::kGeluTanh ? CUBLASLT_EPILOGUE_GELU_BIAS
                                                : CUBLASLT_EPILOGUE_BIAS;
    OF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
  } else if (g.epilogue == LtEpilogue::kRelu) {
    epi = CUBLASLT_EPILOGUE_RELU;
  } else if (g.epilogue == LtEpilogue::kGeluTanh) {
    epi = CUBLASLT_EPILOGUE_GELU;
  }
  OF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));

  // Leading dimensions (elements) of the row-major operands.
  const int64_t ld_b = g.trans_b ? g.k : g.n;  // B stored [k,n] (ld n) or, transposed, [n,k] (ld k)
  const int64_t ld_a = g.trans_a ? g.m : g.k;  // A stored [m,k] (ld k) or, transposed, [k,m] (ld m)
  const int64_t ld_d = g.n;
  Layout la, lb, ld;
  // First operand: B's memory; second operand: A's memory; C and D: D's memory.
  if (g.trans_b) MakeLayout(la, type, g.k, g.n, ld_b, g.batch, g.stride_b);
  else MakeLayout(la, type, g.n, g.k, ld_b, g.batch, g.stride_b);
  if (g.trans_a) MakeLayout(lb, type, g.m, g.k, ld_a, g.batch, g.stride_a);
  else MakeLayout(lb, type, g.k, g.m, ld_a, g.batch, g.stride_a);
  MakeLayout(ld, type, g.n, g.m, ld_d, g.batch, g.stride_d);

  const uint32_t align_a = OperandAlignment(g.a, ld_a, g.batch, g.stride_a, es);
  const uint32_t align_b = OperandAlignment(g.b, ld_b, g.batch, g.stride_b, es);
  const uint32_t align_d = OperandAlignment(g.d, ld_d, g.batch, g.stride_d, es);

  cublasLtHandle_t handle = Handle(device);
  const PlanKey key{device, static_cast<int>(g.dtype), static_cast<int>(compute), g.trans_a, g.trans_b, g.m, g.n,
                    g.k, g.batch, g.stride_a, g.stride_b, g.stride_d, static_cast<int>(epi), g.bias != nullptr,
                    g.beta != 0.0f, align_a, align_b, align_d};
  cublasLtMatmulHeuristicResult_t result{};
  {
    PlanCache& cache = Plans();
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.plans.find(key);
    if (it != cache.plans.end()) {
      result = it->second;
    } else {
      Preference pref;
      OF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.p));
      const uint64_t ws = kWorkspaceBytes;
      OF_CUBLAS_CHECK(
          cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
      // cuBLASLt's A is our B and its B our A (see above); C and D are both our D.
      const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> aligns[] = {
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_b},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_a},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d}};
      for (const auto& [attr, bytes] : aligns)
        OF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, attr, &bytes, sizeof(bytes)));
      int found = 0;
      const cublasStatus_t st =
          cublasLtMatmulAlgoGetHeuristic(handle, op.d, la.l, lb.l, ld.l, ld.l, pref.p, 1, &result, &found);
      // NOT_SUPPORTED is how the heuristic says "nothing fits": the same clear error as found == 0.
      if (st != CUBLAS_STATUS_NOT_SUPPORTED) OF_CUBLAS_CHECK(st);
      OF_CHECK(st == CUBLAS_STATUS_SUCCESS && found > 0, kUnsupported, "cuBLASLt has no algorithm for a ",
               DTypeName(g.dtype), " GEMM of m=", g.m, " n=", g.n, " k=", g.k, " batch=", g.batch,
               " (operand alignment A ", align_a, " B ", align_b, " D ", align_d, " bytes)");
      if (cache.plans.size() >= kMaxPlans) cache.plans.clear();  // dynamic shapes: stay bounded
      cache.plans.emplace(key, result);
    }
  }
  // The workspace returns to this stream's pool when `ws_storage` dies; stream order keeps the
  // next user behind this GEMM.
  std::shared_ptr<Storage> ws_storage = AllocateDeviceStorage(result.workspaceSize, device, stream);
  OF_CUBLAS_CHECK(cublasLtMatmul(handle, op.d, &g.alpha, g.b, la.l, g.a, lb.l, &g.beta, g.d, ld.l, g.d, ld.l,
                                 &result.algo, ws_storage->data(), result.workspaceSize, stream));
}

namespace {

// The epilogue cuBLASLt can fuse for `act`; anything else runs afterwards as its own pass.
LtEpilogue FusableEpilogue(const ActivationParams& act) {
  if (act.kind == Activation::kRelu) return LtEpilogue::kRelu;
  if (act.kind == Activation::kGelu && act.params[0] == 1.0f) return LtEpilogue::kGeluTanh;  // approximate="tanh"
  return LtEpilogue::kNone;
}

void ApplyRemainingActivation(const ActivationParams& act, LtEpilogue fused, Tensor& y, cudaStream_t s) {
  if (act.kind == Activation::kNone || fused != LtEpilogue::kNone) return;
  LaunchActivationInPlace(y.dtype(), y.raw(), y.numel(), act, s);
}

// MatMul (numpy semantics, batch dims broadcast) and FusedMatMul (+ bias[N] + activation).
class CudaMatMulKernel final : public OpKernel {
 public:
  explicit CudaMatMulKernel(const KernelInitContext& init) : act_(ReadActivation(init.attrs())) {}

  void Compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    OF_REQUIRE(a.dtype() == b.dtype(), ctx.node_desc(), ": A and B dtypes differ");
    // 1-D operands: A [k] is [1,k]; B [k] is [k,1] (the inserted dim is absent from y's shape).
    Shape as = a.shape(), bs = b.shape();
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    OF_REQUIRE(bs[bs.size() - 2] == k, ctx.node_desc(), ": inner dimensions differ (", ShapeToString(a.shape()),
               " x ", ShapeToString(b.shape()), ")");
    const Shape batch_a(as.begin(), as.end() - 2), batch_b(bs.begin(), bs.end() - 2);
    const size_t brank = std::max(batch_a.size(), batch_b.size());
    Shape batch(brank, 1);
    for (size_t i = 0; i < brank; ++i) {
      const int64_t da = i + batch_a.size() >= brank ? batch_a[i + batch_a.size() - brank] : 1;
      const int64_t db = i + batch_b.size() >= brank ? batch_b[i + batch_b.size() - brank] : 1;
      OF_REQUIRE(da == db || da == 1 || db == 1, ctx.node_desc(), ": batch dims do not broadcast");
      batch[i] = std::max(da, db);
    }
    const int64_t nb = NumElements(batch), nba = NumElements(batch_a), nbb = NumElements(batch_b);
    cudaStream_t s = CurrentStream();
    LtGemm g;
    g.dtype = a.dtype();
    g.m = m;
    g.n = n;
    g.k = k;
    g.bias = bias ? bias->raw() : nullptr;
    g.epilogue = FusableEpilogue(act_);
    const size_t es = DTypeSize(a.dtype());
    if (k == 0) {  // an empty sum: zeros (then bias and activation)
      OF_CUDA_CHECK(cudaMemsetAsync(y.raw(), 0, y.nbytes(), s));
      OF_CHECK(bias == nullptr && act_.kind == Activation::kNone, kUnsupported, ctx.node_desc(),
               ": K = 0 with a fused bias/activation on CUDA");
      return;
    }
    if ((nba == nb || nba == 1) && (nbb == nb || nbb == 1)) {
      // Each operand is a single matrix or has every batch (equal products mean equal batch dims
      // up to leading 1s, so the layouts agree): one strided-batched call.
      g.a = a.raw();
      g.b = b.raw();
      g.d = y.raw();
      g.batch = nb;
      g.stride_a = nba == 1 ? 0 : m * k;
      g.stride_b = nbb == 1 ? 0 : k * n;
      g.stride_d = m * n;
      LtMatmul(g, s);
    } else {
      // General broadcasting (e.g. [2,1,m,k] x [3,k,n]): one GEMM per output batch.
      for (int64_t ob = 0; ob < nb; ++ob) {
        int64_t rest = ob, oa = 0, obb = 0, sa = 1, sb = 1;
        for (size_t d = brank; d-- > 0;) {
          const int64_t i = rest % batch[d];
          rest /= batch[d];
          const int64_t ia = d + batch_a.size() >= brank ? d + batch_a.size() - brank : -1;
          const int64_t ib = d + batch_b.size() >= brank ? d + batch_b.size() - brank : -1;
          if (ia >= 0) {
            if (batch_a[ia] != 1) oa += i * sa;
            sa *= batch_a[ia];
          }
          if (ib >= 0) {
            if (batch_b[ib] != 1) obb += i * sb;
            sb *= batch_b[ib];
          }
        }
        g.a = static_cast<const char*>(a.raw()) + oa * m * k * es;
        g.b = static_cast<const char*>(b.raw()) + obb * k * n * es;
        g.d = static_cast<char*>(y.raw()) + ob * m * n * es;
        LtMatmul(g, s);
      }
    }
    ApplyRemainingActivation(act_, g.epilogue, y, s);
  }

 private:
  ActivationParams act_;
};

// Gemm / FusedGemm: Y = alpha * op(A) op(B) + beta * C, C broadcast to [M,N]; then the activation.
class CudaGemmKernel final : public OpKernel {
 public:
  explicit CudaGemmKernel(const KernelInitContext& init)
      : act_(ReadActivation(init.attrs())),
        alpha_(init.attrs().GetFloat("alpha", 1.0f)),
        beta_(init.attrs().GetFloat("beta", 1.0f)),
        trans_a_(init.attrs().GetInt("transA", 0) != 0),
        trans_b_(init.attrs().GetInt("transB", 0) != 0) {}

  void Compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    const Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    Tensor& y = ctx.output(0);
    OF_REQUIRE(a.rank() == 2 && b.rank() == 2, ctx.node_desc(), ": A and B must be 2-D");
    const int64_t m = y.dim(0), n = y.dim(1), k = trans_a_ ? a.dim(0) : a.dim(1);
    cudaStream_t s = CurrentStream();
    LtGemm g;
    g.dtype = a.dtype();
    g.trans_a = trans_a_;
    g.trans_b = trans_b_;
    g.m = m;
    g.n = n;
    g.k = k;
    g.a = a.raw();
    g.b = b.raw();
    g.d = y.raw();
    g.alpha = alpha_;
    g.epilogue = FusableEpilogue(act_);
    const bool use_c = c != nullptr && beta_ != 0.0f;
    const bool c_is_row = use_c && beta_ == 1.0f && c->numel() == n &&
                          (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1));
    if (use_c) OF_REQUIRE(c->dtype() == a.dtype(), ctx.node_desc(), ": C must have A's dtype");
    if (c_is_row && m > 1) {
      g.bias = c->raw();  // the fully connected bias: fused into the epilogue
    } else if (use_c) {
      LaunchBroadcastTo(c->dtype(), c->raw(), c->shape(), y.raw(), y.shape(), s);
      g.beta = beta_;
    }
    if (k == 0) {
      OF_CHECK(!use_c && act_.kind == Activation::kNone, kUnsupported, ctx.node_desc(),
               ": K = 0 with C or an activation on CUDA");
      OF_CUDA_CHECK(cudaMemsetAsync(y.raw(), 0, y.nbytes(), s));
      return;
    }
    LtMatmul(g, s);
    ApplyRemainingActivation(act_, g.epilogue, y, s);
  }

 private:
  ActivationParams act_;
  float alpha_, beta_;
  bool trans_a_, trans_b_;
};

ONEFLOW_CUDA_KERNEL_CLASS(MatMul, CudaMatMulKernel);
ONEFLOW_CUDA_KERNEL_CLASS(FusedMatMul, CudaMatMulKernel);
ONEFLOW_CUDA_KERNEL_CLASS(Gemm, CudaGemmKernel);
ONEFLOW_CUDA_KERNEL_CLASS(FusedGemm, CudaGemmKernel);

}  // namespace
}  // namespace oneflow::cuda
