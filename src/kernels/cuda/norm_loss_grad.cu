// CUDA kernels of the normalization and loss ops training needs: SoftmaxGrad / LogSoftmaxGrad,
// LayerNormalizationGrad, SoftmaxCrossEntropyLoss and SoftmaxCrossEntropyLossGrad. Statistics and
// sums are in f32 with fixed-order reductions (no atomics), so results are deterministic. The
// formulas are those of kernels/cpu/norm_grad.cc and kernels/cpu/loss.cc.
#include <cmath>
#include <string>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow::cuda {
namespace {

// log(sum_k exp(row[k * stride])) over k < c, computed by one warp (`lane` = the thread's lane);
// max-shifted so large logits do not overflow. Every lane gets the result.
template <typename T>
__device__ float WarpLogSumExp(const T* row, int64_t c, int64_t stride, int lane) {
  float m = -INFINITY;
  for (int64_t k = lane; k < c; k += 32) m = fmaxf(m, Convert<float>(row[k * stride]));
  m = WarpMax(m);
  float s = 0.0f;
  for (int64_t k = lane; k < c; k += 32) s += expf(Convert<float>(row[k * stride]) - m);
  return m + logf(WarpSum(s));
}

// ---- SoftmaxGrad: dx = y (dy - sum(dy y));  LogSoftmaxGrad: dx = dy - exp(y) sum(dy) ------------
template <typename T, bool kLog>
__global__ void SoftmaxGradRowsKernel(const T* __restrict__ dy, const T* __restrict__ y, T* __restrict__ dx, int64_t n) {
  const int64_t off = static_cast<int64_t>(blockIdx.x) * n;
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    s += kLog ? Convert<float>(dy[off + i]) : Convert<float>(dy[off + i]) * Convert<float>(y[off + i]);
  s = BlockSum(s);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float g = Convert<float>(dy[off + i]), v = Convert<float>(y[off + i]);
    dx[off + i] = Convert<T>(kLog ? g - expf(v) * s : v * (g - s));
  }
}

template <typename T, bool kLog>
__global__ void SoftmaxGradStridedKernel(const T* __restrict__ dy, const T* __restrict__ y, T* __restrict__ dx,
                                         int64_t outer, int64_t n, int64_t inner) {
  const int64_t total = outer * inner, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += stride) {
    const int64_t base = (t / inner) * n * inner + t % inner;
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = base + i * inner;
      s += kLog ? Convert<float>(dy[k]) : Convert<float>(dy[k]) * Convert<float>(y[k]);
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = base + i * inner;
      const float g = Convert<float>(dy[k]), v = Convert<float>(y[k]);
      dx[k] = Convert<T>(kLog ? g - expf(v) * s : v * (g - s));
    }
  }
}

template <bool kLog>
void SoftmaxGradFn(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& y = ctx.input(1);
  OF_REQUIRE(dy.shape() == y.shape() && dy.dtype() == y.dtype(), ctx.node_desc(), ": dY ", ShapeToString(dy.shape()),
             " and Y ", ShapeToString(y.shape()), " differ");
  if (y.numel() == 0) return;
  int64_t outer = 1, n = 1, inner = 1;
  if (y.rank() > 0) {
    const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis", -1), y.rank());
    outer = ShapeProduct(y.shape(), 0, static_cast<size_t>(axis));
    n = y.dim(axis);
    inner = ShapeProduct(y.shape(), static_cast<size_t>(axis) + 1, y.shape().size());
  }
  cudaStream_t st = CurrentStream();
  DispatchFloat(y.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.output(0).data<T>();
    if (inner == 1 && outer <= INT32_MAX) {
      SoftmaxGradRowsKernel<T, kLog><<<static_cast<unsigned>(outer), kThreads, 0, st>>>(dy.data<T>(), y.data<T>(), out, n);
    } else {
      SoftmaxGradStridedKernel<T, kLog><<<GridFor(outer * inner), kThreads, 0, st>>>(dy.data<T>(), y.data<T>(), out, outer,
                                                                                     n, inner);
    }
  });
  OF_CUDA_CHECK_LAUNCH(op::kSoftmaxGrad);
}
ONEFLOW_CUDA_KERNEL(SoftmaxGrad, SoftmaxGradFn<false>);
ONEFLOW_CUDA_KERNEL(LogSoftmaxGrad, SoftmaxGradFn<true>);

// ---- LayerNormalizationGrad over [rows, n] -----------------------------------------------------
// dx = inv (g - mean(g) - xhat mean(g xhat)) with g = dy * scale; a block per row, which also
// writes the row's mean and inv_std for the dScale/dB column sums (two passes, fixed order).
template <typename T>
__global__ void LayerNormGradRowsKernel(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ scale,
                                        const float* __restrict__ mean_in, const float* __restrict__ inv_in,
                                        T* __restrict__ dx, float2* __restrict__ stats, int64_t n, float eps) {
  const int64_t r = blockIdx.x, off = r * n;
  float mean, inv;
  if (mean_in) {
    mean = mean_in[r];
    inv = inv_in[r];
  } else {
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += Convert<float>(x[off + i]);
    mean = BlockSum(s) / static_cast<float>(n);
    float q = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float d = Convert<float>(x[off + i]) - mean;
      q += d * d;
    }
    inv = rsqrtf(BlockSum(q) / static_cast<float>(n) + eps);
  }
  float sg = 0.0f, sgx = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float g = Convert<float>(dy[off + i]) * Convert<float>(scale[i]);
    sg += g;
    sgx += g * (Convert<float>(x[off + i]) - mean) * inv;
  }
  sg = BlockSum(sg) / static_cast<float>(n);
  sgx = BlockSum(sgx) / static_cast<float>(n);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float g = Convert<float>(dy[off + i]) * Convert<float>(scale[i]);
    const float xhat = (Convert<float>(x[off + i]) - mean) * inv;
    dx[off + i] = Convert<T>(inv * (g - sg - xhat * sgx));
  }
  if (threadIdx.x == 0) stats[r] = make_float2(mean, inv);
}

constexpr int kColTile = 32, kRowLanes = 8;

// partial[chunk, {0,1}, c] = sums over the chunk's rows of dy*xhat and dy.
template <typename T>
__global__ void LayerNormParamPartialKernel(const T* __restrict__ dy, const T* __restrict__ x,
                                            const float2* __restrict__ stats, float* __restrict__ partial, int64_t rows,
                                            int64_t n, int64_t rows_per_chunk) {
  __shared__ float ts[kRowLanes][kColTile], tb[kRowLanes][kColTile];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk, r1 = min(rows, r0 + rows_per_chunk);
  float as = 0.0f, ab = 0.0f;
  if (c < n)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) {
      const float2 st = stats[r];
      const float g = Convert<float>(dy[r * n + c]);
      as += g * (Convert<float>(x[r * n + c]) - st.x) * st.y;
      ab += g;
    }
  ts[threadIdx.y][threadIdx.x] = as;
  tb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && c < n) {
    float s = 0.0f, b = 0.0f;
    for (int k = 0; k < kRowLanes; ++k) {
      s += ts[k][threadIdx.x];
      b += tb[k][threadIdx.x];
    }
    partial[(static_cast<int64_t>(blockIdx.y) * 2) * n + c] = s;
    partial[(static_cast<int64_t>(blockIdx.y) * 2 + 1) * n + c] = b;
  }
}

template <typename T>
__global__ void LayerNormParamFinishKernel(const float* __restrict__ partial, T* __restrict__ dscale, T* __restrict__ dbias,
                                           int64_t chunks, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < n; c += stride) {
    float s = 0.0f, b = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) {
      s += partial[(2 * k) * n + c];
      b += partial[(2 * k + 1) * n + c];
    }
    if (dscale) dscale[c] = Convert<T>(s);
    if (dbias) dbias[c] = Convert<T>(b);
  }
}

void LayerNormGradFn(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  OF_REQUIRE(x.shape() == dy.shape() && x.dtype() == dy.dtype() && scale.dtype() == dy.dtype(), ctx.node_desc(),
             ": dY ", ShapeToString(dy.shape()), " ", DTypeName(dy.dtype()), ", X ", ShapeToString(x.shape()), " ",
             DTypeName(x.dtype()), " and Scale ", DTypeName(scale.dtype()), " must agree");
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  const int64_t rows = ShapeProduct(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t n = ShapeProduct(x.shape(), static_cast<size_t>(axis), x.shape().size());
  // Scale must cover the normalized shape (a broadcast Scale would need a fold into its shape).
  OF_CHECK(scale.numel() == n, kUnsupported, ctx.node_desc(), ": on CUDA Scale must have the normalized shape's ", n,
           " elements, got ", ShapeToString(scale.shape()));
  if (x.numel() == 0) return;
  // Saved statistics (the CUDA LayerNormalization writes them in f32) are used when present.
  const bool saved = ctx.has_input(3) && ctx.has_input(4) && ctx.input(3).dtype() == DType::kFloat32 &&
                     ctx.input(4).dtype() == DType::kFloat32;
  if (saved)
    for (size_t i = 3; i <= 4; ++i)
      OF_REQUIRE(ctx.input(i).numel() == rows, ctx.node_desc(), ": input ", i, " must hold one value per row (", rows, ")");
  OF_CHECK(rows <= INT32_MAX, kUnsupported, ctx.node_desc(), ": too many rows");
  const float eps = ctx.attrs().GetFloat("epsilon");
  Tensor* dscale = ctx.has_output(1) ? &ctx.output(1) : nullptr;
  Tensor* dbias = ctx.has_output(2) ? &ctx.output(2) : nullptr;
  cudaStream_t st = CurrentStream();
  const int dev = CurrentDevice();
  Tensor stats = EmptyDeviceTensor(DType::kFloat32, {rows, 2}, dev, st);
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    float2* pst = reinterpret_cast<float2*>(stats.data<float>());
    LayerNormGradRowsKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, st>>>(
        dy.data<T>(), x.data<T>(), scale.data<T>(), saved ? ctx.input(3).data<float>() : nullptr,
        saved ? ctx.input(4).data<float>() : nullptr, ctx.output(0).data<T>(), pst, n, eps);
    OF_CUDA_CHECK_LAUNCH("LayerNormGradRowsKernel");
    if (!dscale && !dbias) return;
    const int64_t col_blocks = (n + kColTile - 1) / kColTile;
    int64_t chunks = std::max<int64_t>(1, std::min<int64_t>({64, (rows + 63) / 64, std::max<int64_t>(1, 512 / col_blocks)}));
    const int64_t per = (rows + chunks - 1) / chunks;
    chunks = (rows + per - 1) / per;
    Tensor partial = EmptyDeviceTensor(DType::kFloat32, {chunks, 2, n}, dev, st);
    LayerNormParamPartialKernel<T><<<dim3(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks)),
                                     dim3(kColTile, kRowLanes), 0, st>>>(dy.data<T>(), x.data<T>(), pst,
                                                                         partial.data<float>(), rows, n, per);
    LayerNormParamFinishKernel<T><<<GridFor(n), kThreads, 0, st>>>(
        partial.data<float>(), dscale ? dscale->data<T>() : nullptr, dbias ? dbias->data<T>() : nullptr, chunks, n);
    OF_CUDA_CHECK_LAUNCH("LayerNormParam");
  });
}
ONEFLOW_CUDA_KERNEL(LayerNormalizationGrad, LayerNormGradFn);

// ---- SoftmaxCrossEntropyLoss (+ Grad) over (N, C, D) --------------------------------------------
// A warp per position (i, j): log-sum-exp over the C classes (stride D). Per-position losses and
// weights go to an f32 workspace; one block reduces them in a fixed order, the mean's division by
// the weight sum included: the loss never leaves the device. A bad label (outside [0, C), not
// ignore_index) sets a flag in device memory that is checked after the run (cuda::DeferDeviceCheck):
// reading it right after the launch made every run wait mid-way and kept graphs from being captured.
struct SceLayout {
  int64_t n = 0, c = 0, d = 0;
  int reduction = 2;  // 0 none, 1 sum, 2 mean
  bool has_ignore = false;
  int64_t ignore = 0;
};

template <typename L>
__device__ __forceinline__ float PositionWeight(const SceLayout& l, const L* labels, const float* weights, int64_t p,
                                                int64_t* label_out, int* bad) {
  const int64_t k = static_cast<int64_t>(labels[p]);
  *label_out = k;
  if (l.has_ignore && k == l.ignore) return 0.0f;
  if (k < 0 || k >= l.c) {
    atomicExch(bad, 1);  // a flag, not a sum: the value written is the same from every thread
    return 0.0f;
  }
  return weights ? weights[k] : 1.0f;
}

template <typename T, typename L>
__global__ void ScePositionsKernel(const T* __restrict__ x, const L* __restrict__ labels,
                                   const float* __restrict__ weights, T* __restrict__ log_prob,
                                   float* __restrict__ loss_w, int* bad, SceLayout l) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; p < l.n * l.d; p += warps) {
    const int64_t i = p / l.d, j = p % l.d;
    const T* row = x + i * l.c * l.d + j;
    const float lse = WarpLogSumExp(row, l.c, l.d, lane);
    if (log_prob)
      for (int64_t k = lane; k < l.c; k += 32)
        log_prob[i * l.c * l.d + k * l.d + j] = Convert<T>(Convert<float>(row[k * l.d]) - lse);
    if (lane == 0) {
      int64_t label;
      const float w = PositionWeight(l, labels, weights, p, &label, bad);
      loss_w[2 * p] = w == 0.0f ? 0.0f : -(Convert<float>(row[label * l.d]) - lse) * w;
      loss_w[2 * p + 1] = w;
    }
  }
}

// out[0] = sum of losses (or / sum of weights for the mean); `wsum` gets the weight sum.
template <typename T>
__global__ void SceReduceKernel(const float* __restrict__ loss_w, int64_t positions, int reduction, T* __restrict__ out,
                                float* __restrict__ wsum) {
  float s = 0.0f, w = 0.0f;
  for (int64_t p = threadIdx.x; p < positions; p += blockDim.x) {
    s += loss_w[2 * p];
    w += loss_w[2 * p + 1];
  }
  s = BlockSum(s);
  w = BlockSum(w);
  if (threadIdx.x == 0) {
    if (out) out[0] = Convert<T>(reduction == 1 ? s : s / w);  // mean over nothing: 0/0 = NaN, as ONNX
    if (wsum) wsum[0] = w;
  }
}

template <typename T>
__global__ void SceCopyNoneKernel(const float* __restrict__ loss_w, T* __restrict__ out, int64_t positions) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < positions; p += stride)
    out[p] = Convert<T>(loss_w[2 * p]);
}

// dx[i, k, j] = g w (softmax[i, k, j] - [k == label]), g the upstream gradient of the position.
template <typename T, typename L>
__global__ void SceGradKernel(const T* __restrict__ dloss, const T* __restrict__ x, const L* __restrict__ labels,
                              const float* __restrict__ weights, const float* __restrict__ wsum, T* __restrict__ dx,
                              int* bad, SceLayout l) {
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int lane = threadIdx.x & 31;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; p < l.n * l.d; p += warps) {
    const int64_t i = p / l.d, j = p % l.d;
    const T* row = x + i * l.c * l.d + j;
    T* drow = dx + i * l.c * l.d + j;
    int64_t label;
    const float w = PositionWeight(l, labels, weights, p, &label, bad);
    const float g = l.reduction == 0 ? Convert<float>(dloss[p])
                    : l.reduction == 1 ? Convert<float>(dloss[0])
                                       : Convert<float>(dloss[0]) / wsum[0];
    const float gw = g * w;
    if (gw == 0.0f) {
      for (int64_t k = lane; k < l.c; k += 32) drow[k * l.d] = Convert<T>(0.0f);
      continue;
    }
    const float lse = WarpLogSumExp(row, l.c, l.d, lane);
    for (int64_t k = lane; k < l.c; k += 32) {
      const float v = gw * expf(Convert<float>(row[k * l.d]) - lse);
      drow[k * l.d] = Convert<T>(k == label ? v - gw : v);
    }
  }
}

SceLayout MakeSceLayout(KernelContext& ctx, const Shape& xs, const Tensor& labels, const Tensor* weights) {
  SceLayout l;
  const std::string& who = ctx.node_desc();
  OF_REQUIRE(xs.size() >= 2, who, ": the input must have shape (N, C, ...), got ", ShapeToString(xs));
  l.n = xs[0];
  l.c = xs[1];
  l.d = ShapeProduct(xs, 2, xs.size());
  Shape want{xs[0]};
  want.insert(want.end(), xs.begin() + 2, xs.end());
  OF_REQUIRE(labels.shape() == want, who, ": labels have shape ", ShapeToString(labels.shape()), ", expected ",
             ShapeToString(want));
  OF_REQUIRE(labels.dtype() == DType::kInt64 || labels.dtype() == DType::kInt32, who, ": labels must be int32/int64");
  if (weights)
    OF_REQUIRE(weights->rank() == 1 && weights->dim(0) == l.c && weights->dtype() == DType::kFloat32, who,
               ": on CUDA weights must be float32 of shape [", l.c, "], got ", DTypeName(weights->dtype()),
               ShapeToString(weights->shape()));
  const std::string& red = ctx.attrs().GetString("reduction");
  l.reduction = red == "none" ? 0 : red == "sum" ? 1 : 2;
  l.has_ignore = ctx.attrs().has("ignore_index");
  l.ignore = l.has_ignore ? ctx.attrs().GetInt("ignore_index") : 0;
  return l;
}

// The bad-label flag is read after the run (inside a session: once its stream is done anyway;
// called directly: at once), not here: the host must not wait on the device mid-run.
void CheckLabels(KernelContext& ctx, const Tensor& flag, cudaStream_t st, int64_t c) {
  DeferDeviceCheck(flag, ErrorCode::kInvalidArgument,
                   StrCat(ctx.node_desc(), ": a label is outside [0, ", c, ") and is not ignore_index"), st);
}

template <typename Fn>
void DispatchLabels(DType dt, Fn&& fn) {
  if (dt == DType::kInt32) fn(int32_t{});
  else fn(int64_t{});
}

unsigned WarpGrid(int64_t positions) {
  const int64_t warps_per_block = kThreads / 32;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((positions + warps_per_block - 1) / warps_per_block, 65535)));
}

void SceFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& labels = ctx.input(1);
  const Tensor* weights = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const SceLayout l = MakeSceLayout(ctx, x.shape(), labels, weights);
  const int64_t positions = l.n * l.d;
  cudaStream_t st = CurrentStream();
  const int dev = CurrentDevice();
  Tensor work = EmptyDeviceTensor(DType::kFloat32, {std::max<int64_t>(1, positions), 2}, dev, st);
  Tensor flag = EmptyDeviceTensor(DType::kInt32, {1}, dev, st);
  OF_CUDA_CHECK(cudaMemsetAsync(flag.raw(), 0, sizeof(int), st));
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    T* log_prob = ctx.has_output(1) ? ctx.output(1).data<T>() : nullptr;
    DispatchLabels(labels.dtype(), [&](auto ltag) {
      using L = decltype(ltag);
      if (positions > 0)
        ScePositionsKernel<T, L><<<WarpGrid(positions), kThreads, 0, st>>>(
            x.data<T>(), labels.data<L>(), weights ? weights->data<float>() : nullptr, log_prob, work.data<float>(),
            flag.data<int>(), l);
    });
    if (l.reduction == 0) {
      if (positions > 0)
        SceCopyNoneKernel<T><<<GridFor(positions), kThreads, 0, st>>>(work.data<float>(), ctx.output(0).data<T>(), positions);
    } else {
      SceReduceKernel<T><<<1, 1024, 0, st>>>(work.data<float>(), positions, l.reduction, ctx.output(0).data<T>(), nullptr);
    }
  });
  OF_CUDA_CHECK_LAUNCH(op::kSoftmaxCrossEntropyLoss);
  CheckLabels(ctx, flag, st, l.c);
}
ONEFLOW_CUDA_KERNEL(SoftmaxCrossEntropyLoss, SceFn);

void SceGradFn(KernelContext& ctx) {
  const Tensor& dloss = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& labels = ctx.input(2);
  const Tensor* weights = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const SceLayout l = MakeSceLayout(ctx, x.shape(), labels, weights);
  const int64_t positions = l.n * l.d;
  OF_REQUIRE(dloss.numel() == (l.reduction == 0 ? positions : 1) && dloss.dtype() == x.dtype(), ctx.node_desc(),
             ": dloss has ", dloss.numel(), " elements of ", DTypeName(dloss.dtype()));
  if (positions == 0) return;
  cudaStream_t st = CurrentStream();
  const int dev = CurrentDevice();
  Tensor flag = EmptyDeviceTensor(DType::kInt32, {1}, dev, st);
  Tensor wsum = EmptyDeviceTensor(DType::kFloat32, {1}, dev, st);
  OF_CUDA_CHECK(cudaMemsetAsync(flag.raw(), 0, sizeof(int), st));
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    DispatchLabels(labels.dtype(), [&](auto ltag) {
      using L = decltype(ltag);
      const float* w = weights ? weights->data<float>() : nullptr;
      if (l.reduction == 2) {
        // The mean's denominator: the weight sum over every position, computed first.
        Tensor work = EmptyDeviceTensor(DType::kFloat32, {positions, 2}, dev, st);
        ScePositionsKernel<T, L><<<WarpGrid(positions), kThreads, 0, st>>>(x.data<T>(), labels.data<L>(), w, nullptr,
                                                                          work.data<float>(), flag.data<int>(), l);
        SceReduceKernel<T><<<1, 1024, 0, st>>>(work.data<float>(), positions, l.reduction, nullptr, wsum.data<float>());
      }
      SceGradKernel<T, L><<<WarpGrid(positions), kThreads, 0, st>>>(dloss.data<T>(), x.data<T>(), labels.data<L>(), w,
                                                                     wsum.data<float>(), ctx.output(0).data<T>(),
                                                                     flag.data<int>(), l);
    });
  });
  OF_CUDA_CHECK_LAUNCH(op::kSoftmaxCrossEntropyLossGrad);
  CheckLabels(ctx, flag, st, l.c);
}
ONEFLOW_CUDA_KERNEL(SoftmaxCrossEntropyLossGrad, SceGradFn);

}  // namespace
}  // namespace oneflow::cuda

