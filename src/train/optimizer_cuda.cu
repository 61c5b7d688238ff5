// CudaMultiTensorOptimizer: the chunk table, the fused update kernel and the device gradient norm.
#include "train/optimizer_cuda.h"

#include <algorithm>
#include <cmath>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"

namespace oneflow::train {

namespace {

constexpr int64_t kChunk = 65536;  // elements per chunk (one block each): fixed, so sums are deterministic
constexpr int kThreads = 256;

struct ChunkEntry {
  float* p;
  const float* g;
  float* s0;  // momentum buffer (SGD) or exp_avg (Adam/AdamW); null when unused
  float* s1;  // exp_avg_sq (Adam/AdamW)
  int64_t begin, end;
};

enum Kind : int { kSgdPlain, kSgdMomentum, kSgdNesterov, kAdam, kAdamW };

// Round-to-nearest intrinsics keep every multiply and add separate (no FMA contraction), as the
// CPU loops are written; division and square root are IEEE.
__device__ __forceinline__ float Mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float Add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float Sub(float a, float b) { return __fsub_rn(a, b); }

__global__ void UpdateKernel(const ChunkEntry* __restrict__ table, int kind, UpdateScalars s) {
  const ChunkEntry c = table[blockIdx.x];
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    const float g = c.g[i];
    if (kind <= kSgdNesterov) {
      const float p = c.p[i];
      const float d = Add(Mul(g, s.scale), Mul(s.wd, p));
      float u = d;
      if (kind != kSgdPlain) {
        const float m = s.first ? d : Add(Mul(s.momentum, c.s0[i]), Mul(s.dampening_c, d));
        c.s0[i] = m;
        u = kind == kSgdNesterov ? Add(d, Mul(s.momentum, m)) : m;
      }
      c.p[i] = Sub(p, Mul(s.lr, u));
    } else {
      const bool adamw = kind == kAdamW;
      const float pi = Mul(c.p[i], adamw ? s.decay : 1.0f);
      const float gi = Add(Mul(g, s.scale), Mul(adamw ? 0.0f : s.wd, pi));
      const float mi = Add(Mul(s.b1, c.s0[i]), Mul(s.c1, gi));
      const float vi = Add(Mul(s.b2, c.s1[i]), Mul(s.c2, Mul(gi, gi)));
      const float denom = Add(__fdiv_rn(__fsqrt_rn(vi), s.bc2_sqrt), s.eps);
      c.s0[i] = mi;
      c.s1[i] = vi;
      c.p[i] = Sub(pi, Mul(s.step_size, __fdiv_rn(mi, denom)));
    }
  }
}

// partial[chunk] = sum of g^2 over the chunk, in double.
__global__ void SumSquaresKernel(const ChunkEntry* __restrict__ table, double* __restrict__ partial) {
  __shared__ double smem[kThreads];
  const ChunkEntry c = table[blockIdx.x];
  double acc = 0.0;
  for (int64_t i = c.begin + threadIdx.x; i < c.end; i += blockDim.x) {
    const double v = c.g[i];
    acc += v * v;
  }
  smem[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) smem[threadIdx.x] += smem[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = smem[0];
}

// out[0] = the partials added in a fixed tree order.
__global__ void SumPartialsKernel(const double* __restrict__ partial, int64_t n, double* __restrict__ out) {
  __shared__ double smem[kThreads];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
  smem[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) smem[threadIdx.x] += smem[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = smem[0];
}

__global__ void AccumulateKernel(float* __restrict__ acc, const float* __restrict__ add, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    acc[i] = Add(acc[i], add[i]);
}

}  // namespace

void AccumulateGradient(float* acc, const float* add, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, 65536);
  AccumulateKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(acc, add, n);
  OF_CUDA_CHECK_LAUNCH("AccumulateGradient");
}

struct CudaMultiTensorOptimizer::Table {
  std::vector<ChunkEntry> host;  // what the device copy holds
  Tensor device;                 // the ChunkEntry array
  Tensor partial;                // chunks + 1 doubles: per-chunk sums, then the total
  int device_index = -1;
};

CudaMultiTensorOptimizer::CudaMultiTensorOptimizer(const OptimizerConfig& config)
    : config_(config), table_(std::make_unique<Table>()) {
  ValidateOptimizerConfig(config);
}

CudaMultiTensorOptimizer::~CudaMultiTensorOptimizer() = default;

void CudaMultiTensorOptimizer::Prepare(const std::vector<ParamSlot*>& params, cudaStream_t stream) {
  const size_t nstate = OptimizerStateNames(config_).size();
  std::vector<ChunkEntry> entries;
  for (size_t k = 0; k < params.size(); ++k) {
    ParamSlot& p = *params[k];
    OF_REQUIRE(p.value.dtype() == DType::kFloat32 && p.grad.dtype() == DType::kFloat32 &&
                   p.grad.numel() == p.value.numel() && p.state.size() == nstate,
               "CUDA optimizer: parameter ", k, " must be f32 with an f32 gradient of its size and ", nstate,
               " state tensors");
    for (const Tensor& t : p.state)
      OF_REQUIRE(t.dtype() == DType::kFloat32 && t.numel() == p.value.numel(), "CUDA optimizer: state of parameter ",
                 k, " must be f32 shaped like it");
    const int64_t n = p.value.numel();
    for (int64_t b = 0; b < n; b += kChunk)
      entries.push_back({p.value.data<float>(), p.grad.data<float>(), nstate > 0 ? p.state[0].data<float>() : nullptr,
                         nstate > 1 ? p.state[1].data<float>() : nullptr, b, std::min(n, b + kChunk)});
  }
  const int dev = cuda::CurrentDevice();
  Table& t = *table_;
  const bool same = dev == t.device_index && entries.size() == t.host.size() &&
                    std::equal(entries.begin(), entries.end(), t.host.begin(), [](const ChunkEntry& a, const ChunkEntry& b) {
                      return a.p == b.p && a.g == b.g && a.s0 == b.s0 && a.s1 == b.s1 && a.begin == b.begin &&
                             a.end == b.end;
                    });
  if (same) return;
  t.host = std::move(entries);
  t.device_index = dev;
  const int64_t count = static_cast<int64_t>(t.host.size());
  t.device = cuda::EmptyDeviceTensor(DType::kUInt8, {std::max<int64_t>(1, count) * static_cast<int64_t>(sizeof(ChunkEntry))},
                                     dev, stream);
  t.partial = cuda::EmptyDeviceTensor(DType::kFloat64, {count + 1}, dev, stream);
  // Staged before the call returns (pageable memory), so `host` may change later.
  cuda::CopyBytesToDeviceAsync(t.device.raw(), t.host.data(), static_cast<size_t>(count) * sizeof(ChunkEntry), stream);
}

GradientNorm CudaMultiTensorOptimizer::GlobalGradientNorm(const std::vector<ParamSlot*>& params, cudaStream_t stream) {
  Prepare(params, stream);
  Table& t = *table_;
  const int64_t count = static_cast<int64_t>(t.host.size());
  GradientNorm r;
  if (count == 0) return r;
  OF_CHECK(count <= INT32_MAX, kUnsupported, "CUDA optimizer: too many chunks");
  const ChunkEntry* table = reinterpret_cast<const ChunkEntry*>(t.device.raw());
  double* partial = t.partial.data<double>();
  SumSquaresKernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(table, partial);
  SumPartialsKernel<<<1, kThreads, 0, stream>>>(partial, count, partial + count);
  OF_CUDA_CHECK_LAUNCH("GradientNorm");
  double total = 0.0;
  cuda::CopyBytesToHost(&total, partial + count, sizeof(double), stream);
  r.finite = std::isfinite(total);
  r.norm = std::sqrt(total);
  return r;
}

void CudaMultiTensorOptimizer::ApplyUpdate(const std::vector<ParamSlot*>& params, float lr, float grad_scale,
                                           int64_t step, cudaStream_t stream) {
  Prepare(params, stream);
  const int64_t count = static_cast<int64_t>(table_->host.size());
  if (count == 0) return;
  OF_CHECK(count <= INT32_MAX, kUnsupported, "CUDA optimizer: too many chunks");
  const UpdateScalars s = ComputeUpdateScalars(config_, lr, grad_scale, step);
  int kind = kAdam;
  if (config_.kind == OptimizerKind::kAdamW) kind = kAdamW;
  if (config_.kind == OptimizerKind::kSgd)
    kind = config_.momentum == 0.0f ? kSgdPlain : config_.nesterov ? kSgdNesterov : kSgdMomentum;
  UpdateKernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(
      reinterpret_cast<const ChunkEntry*>(table_->device.raw()), kind, s);
  OF_CUDA_CHECK_LAUNCH("MultiTensorUpdate");
}

}  // namespace oneflow::train
