// CUDA reductions (ReduceSum/Mean/Max/Min), Softmax/LogSoftmax and LayerNormalization. Rows that are
// contiguous (the reduced axes at the end) get a block each with warp-shuffle reductions; other
// layouts get a thread per output element, which stays coalesced because neighbouring threads
// own neighbouring outputs. Accumulation is always in f32.
#include <cmath>
#include <vector>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/infer_util.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow::cuda {
namespace {

enum ReduceOp : int { kSum, kMean, kMax, kMin };

__device__ __forceinline__ float Combine(int op, float a, float b) {
  return op == kMax ? fmaxf(a, b) : op == kMin ? fminf(a, b) : a + b;
}
__device__ __forceinline__ float Identity(int op) {
  return op == kMax ? -INFINITY : op == kMin ? INFINITY : 0.0f;
}

// Reduces v across the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float BlockReduce(int op, float v) {
  __shared__ float smem[32];
  for (int o = 16; o > 0; o >>= 1) v = Combine(op, v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // smem may still be read by a previous call
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? smem[threadIdx.x] : Identity(op);
  if (warp == 0) {
    for (int o = 16; o > 0; o >>= 1) v = Combine(op, v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) smem[0] = v;
  }
  __syncthreads();
  return smem[0];
}

// ---- Reduce -----------------------------------------------------------------------------------
template <typename T>
__global__ void ReduceRowsKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, int op) {
  const T* row = x + static_cast<int64_t>(blockIdx.x) * n;
  float acc = Identity(op);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = Combine(op, acc, Convert<float>(row[i]));
  acc = BlockReduce(op, acc);
  if (threadIdx.x == 0) y[blockIdx.x] = Convert<T>(op == kMean ? acc / static_cast<float>(n) : acc);
}

template <typename T>
__global__ void ReduceGenericKernel(const T* __restrict__ x, T* __restrict__ y, int64_t nout, int op, ReduceMap m) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < nout; o += stride) {
    const int64_t base = m.KeptOffset(o);
    float acc = Identity(op);
    for (int64_t r = 0; r < m.rcount; ++r) acc = Combine(op, acc, Convert<float>(x[base + m.ReducedOffset(r)]));
    y[o] = Convert<T>(op == kMean ? acc / static_cast<float>(m.rcount) : acc);
  }
}

class ReduceKernel final : public OpKernel {
 public:
  ReduceKernel(const KernelInitContext& init, int op) : op_(op) {
    if (init.attrs().has("axes")) {
      axes_ = init.attrs().GetInts("axes");
    } else if (init.has_input(1)) {
      const Tensor* axes = init.constant_input(1);
      OF_CHECK(axes != nullptr, kUnsupported, init.node().Describe(), ": on CUDA the axes input must be a constant");
      axes_ = axes->ToInt64Vector();  // constants live on the host
    }
    noop_ = axes_.empty() && init.attrs().GetInt("noop_with_empty_axes", 0) != 0;
  }

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    cudaStream_t s = CurrentStream();
    if (noop_) {
      if (x.nbytes()) OF_CUDA_CHECK(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, s));
      return;
    }
    const int64_t rank = x.rank();
    OF_CHECK(rank <= kMaxRank, kUnsupported, ctx.node_desc(), ": rank ", rank, " > ", kMaxRank, " on CUDA");
    std::vector<bool> reduced(static_cast<size_t>(rank), axes_.empty());
    for (int64_t a : axes_) reduced[static_cast<size_t>(NormalizeAxis(a, rank))] = true;
    // Row layout: every reduced axis after every kept one.
    ReduceMap m;
    bool suffix = true, seen_kept = false;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t dim = x.dim(d);
      if (reduced[static_cast<size_t>(d)]) {
        if (seen_kept && dim != 1) suffix = false;
      } else if (dim != 1) {
        seen_kept = true;
      }
    }
    int64_t stride = 1, strides[kMaxRank];
    for (int64_t d = rank - 1; d >= 0; --d) {
      strides[d] = stride;
      stride *= x.dim(d);
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[static_cast<size_t>(d)]) {
        m.rdims[m.nr] = x.dim(d);
        m.rstrides[m.nr++] = strides[d];
        m.rcount *= x.dim(d);
      } else {
        m.kdims[m.nk] = x.dim(d);
        m.kstrides[m.nk++] = strides[d];
      }
    }
    const int64_t nout = y.numel();
    if (nout == 0) return;
    DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
      using T = decltype(tag);
      if (suffix && m.rcount > 0 && nout <= INT32_MAX) {
        ReduceRowsKernel<T><<<static_cast<unsigned>(nout), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), m.rcount, op_);
      } else {
        ReduceGenericKernel<T><<<GridFor(nout), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), nout, op_, m);
      }
    });
    OF_CUDA_CHECK_LAUNCH("ReduceKernel");
  }

 private:
  int op_;
  std::vector<int64_t> axes_;
  bool noop_ = false;
};

// ---- Softmax / LogSoftmax over [outer, n, inner] -----------------------------------------------
template <typename T, bool kLog>
__global__ void SoftmaxRowsKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  const int64_t off = static_cast<int64_t>(blockIdx.x) * n;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, Convert<float>(x[off + i]));
  mx = BlockReduce(kMax, mx);
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += expf(Convert<float>(x[off + i]) - mx);
  sum = BlockReduce(kSum, sum);
  const float log_sum = logf(sum), inv = 1.0f / sum;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = Convert<float>(x[off + i]) - mx;
    y[off + i] = Convert<T>(kLog ? v - log_sum : expf(v) * inv);
  }
}

template <typename T, bool kLog>
__global__ void SoftmaxStridedKernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t n,
                                     int64_t inner) {
  const int64_t total = outer * inner, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += stride) {
    const int64_t base = (t / inner) * n * inner + t % inner;
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t i = 0; i < n; ++i) mx = fmaxf(mx, Convert<float>(x[base + i * inner]));
    for (int64_t i = 0; i < n; ++i) sum += expf(Convert<float>(x[base + i * inner]) - mx);
    const float log_sum = logf(sum), inv = 1.0f / sum;
    for (int64_t i = 0; i < n; ++i) {
      const float v = Convert<float>(x[base + i * inner]) - mx;
      y[base + i * inner] = Convert<T>(kLog ? v - log_sum : expf(v) * inv);
    }
  }
}

template <bool kLog>
void SoftmaxFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.numel() == 0) return;
  const int64_t rank = x.rank();
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis", ctx.opset() >= 13 ? -1 : 1), rank);
  // Before opset 13 the op flattens to 2-D at `axis`; from 13 on it normalizes along one axis.
  const int64_t outer = ShapeProduct(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t n = ctx.opset() >= 13 ? x.dim(axis) : ShapeProduct(x.shape(), static_cast<size_t>(axis), x.shape().size());
  const int64_t inner = x.numel() / (outer * n);
  cudaStream_t s = CurrentStream();
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (inner == 1 && outer <= INT32_MAX) {
      SoftmaxRowsKernel<T, kLog><<<static_cast<unsigned>(outer), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), n);
    } else {
      SoftmaxStridedKernel<T, kLog><<<GridFor(outer * inner), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), outer, n, inner);
    }
  });
  OF_CUDA_CHECK_LAUNCH("SoftmaxKernel");
}
ONEFLOW_CUDA_KERNEL(Softmax, SoftmaxFn<false>);
ONEFLOW_CUDA_KERNEL(LogSoftmax, SoftmaxFn<true>);

// ---- LayerNormalization: rows of n = prod(shape[axis:]) ----------------------------------------
template <typename T>
__global__ void LayerNormKernel(const T* __restrict__ x, const T* __restrict__ scale, const T* __restrict__ bias,
                                T* __restrict__ y, float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                int64_t n, float eps) {
  const int64_t off = static_cast<int64_t>(blockIdx.x) * n;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += Convert<float>(x[off + i]);
  const float mean = BlockReduce(kSum, sum) / static_cast<float>(n);
  float sq = 0.0f;  // two passes: the variance of centred values does not cancel catastrophically
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float d = Convert<float>(x[off + i]) - mean;
    sq += d * d;
  }
  const float rstd = rsqrtf(BlockReduce(kSum, sq) / static_cast<float>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = (Convert<float>(x[off + i]) - mean) * rstd * Convert<float>(scale[i]);
    if (bias) v += Convert<float>(bias[i]);
    y[off + i] = Convert<T>(v);
  }
  if (threadIdx.x == 0) {
    if (mean_out) mean_out[blockIdx.x] = mean;
    if (rstd_out) rstd_out[blockIdx.x] = rstd;
  }
}

void LayerNormFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  const int64_t rank = x.rank();
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), rank);
  const int64_t rows = ShapeProduct(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t n = ShapeProduct(x.shape(), static_cast<size_t>(axis), x.shape().size());
  OF_CHECK(scale.numel() == n && (!bias || bias->numel() == n), kUnsupported, ctx.node_desc(),
           ": on CUDA Scale and B must cover the whole normalized shape (", n, " elements)");
  OF_REQUIRE(scale.dtype() == x.dtype() && (!bias || bias->dtype() == x.dtype()), ctx.node_desc(),
             ": Scale and B must have X's dtype");
  float* stats[2] = {nullptr, nullptr};
  for (size_t k = 1; k <= 2; ++k) {
    if (!ctx.has_output(k)) continue;
    OF_CHECK(ctx.output(k).dtype() == DType::kFloat32, kUnsupported, ctx.node_desc(),
             ": on CUDA Mean/InvStdDev must be float32 (stash_type 1)");
    stats[k - 1] = ctx.output(k).data<float>();
  }
  if (rows == 0 || n == 0) return;
  OF_CHECK(rows <= INT32_MAX, kUnsupported, ctx.node_desc(), ": too many rows for the CUDA kernel");
  const float eps = ctx.attrs().GetFloat("epsilon", 1e-5f);
  cudaStream_t s = CurrentStream();
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    LayerNormKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
        x.data<T>(), scale.data<T>(), bias ? bias->data<T>() : nullptr, y.data<T>(), stats[0], stats[1], n, eps);
  });
  OF_CUDA_CHECK_LAUNCH("LayerNormKernel");
}
ONEFLOW_CUDA_KERNEL(LayerNormalization, LayerNormFn);

template <int kOp>
std::unique_ptr<OpKernel> MakeReduceKernel(const KernelInitContext& c) {
  return std::make_unique<ReduceKernel>(c, kOp);
}
ONEFLOW_KERNEL_FACTORY(ReduceSum, DeviceType::kCuda, MakeReduceKernel<kSum>);
ONEFLOW_KERNEL_FACTORY(ReduceMean, DeviceType::kCuda, MakeReduceKernel<kMean>);
ONEFLOW_KERNEL_FACTORY(ReduceMax, DeviceType::kCuda, MakeReduceKernel<kMax>);
ONEFLOW_KERNEL_FACTORY(ReduceMin, DeviceType::kCuda, MakeReduceKernel<kMin>);

}  // namespace
}  // namespace oneflow::cuda
