// CUDA kernels of CNNs besides the convolution itself: MaxPool / AveragePool (1-3 spatial dims,
// NCHW and the layout pass's NHWC forms, MaxPool's Indices), GlobalAveragePool / GlobalMaxPool, the
// pools' gradient ops, BatchNormalization (inference and training mode), and the epilogue and bias gradient of the
// cuDNN convolutions (conv_cudnn.cc). f16/bf16 accumulate in f32; each template is instantiated
// once per dtype listed in its dispatch.
#include <cfloat>
#include <vector>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/op_schema.h"
#include "graph/ops/spatial_util.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/nn_cuda.h"

namespace oneflow::cuda {
namespace {

// ---- Windowed pools -----------------------------------------------------------------------------
// Geometry as 3-D (depth, height, width); lower ranks use extent 1 for the missing leading dims.
struct PoolDims {
  int64_t N, C;
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
  bool nhwc;
};

PoolDims MakePoolDims(const PoolGeometry& g, int64_t n, int64_t c, bool nhwc) {
  const size_t r = g.rank();
  OF_CHECK(r >= 1 && r <= 3, kUnsupported, "pooling on CUDA supports 1 to 3 spatial dims, got ", r);
  PoolDims p;
  p.N = n;
  p.C = c;
  p.nhwc = nhwc;
  for (size_t i = 0; i < 3; ++i) {
    const bool real = i + r >= 3;
    const size_t j = i + r - 3;
    p.in[i] = real ? g.in[j] : 1;
    p.out[i] = real ? g.out[j] : 1;
    p.k[i] = real ? g.kernel[j] : 1;
    p.s[i] = real ? g.stride[j] : 1;
    p.d[i] = real ? g.dilation[j] : 1;
    p.pb[i] = real ? g.pad_begin[j] : 0;
    p.pe[i] = real ? g.pad_end[j] : 0;
  }
  return p;
}

// One thread per output element. kMax: the largest input tap (NaN-ignoring like the CPU kernel),
// 0 for a window entirely in the padding; Indices get the flat NCHW position of the first maximum.
// Average: the sum over the taps inside the input divided by that count, or (count_include_pad) by
// the taps inside the input plus its explicit padding.
template <typename T, bool kMax>
__global__ void PoolKernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices, PoolDims p,
                           bool include_pad, int64_t total) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t in_plane = p.in[0] * p.in[1] * p.in[2];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    int64_t rest = i, c, o[3];
    if (p.nhwc) {
      c = rest % p.C; rest /= p.C;
      o[2] = rest % p.out[2]; rest /= p.out[2];
      o[1] = rest % p.out[1]; rest /= p.out[1];
      o[0] = rest % p.out[0]; rest /= p.out[0];
    } else {
      o[2] = rest % p.out[2]; rest /= p.out[2];
      o[1] = rest % p.out[1]; rest /= p.out[1];
      o[0] = rest % p.out[0]; rest /= p.out[0];
      c = rest % p.C; rest /= p.C;
    }
    const int64_t n = rest;
    // Element (pos) of plane (n, c) is at base + pos * step.
    const int64_t base = p.nhwc ? n * in_plane * p.C + c : (n * p.C + c) * in_plane;
    const int64_t step = p.nhwc ? p.C : 1;
    float acc = kMax ? -FLT_MAX : 0.0f;
    int64_t valid = 0, padded = 0, best = -1;
    for (int64_t kd = 0; kd < p.k[0]; ++kd) {
      const int64_t id = o[0] * p.s[0] - p.pb[0] + kd * p.d[0];
      for (int64_t kh = 0; kh < p.k[1]; ++kh) {
        const int64_t ih = o[1] * p.s[1] - p.pb[1] + kh * p.d[1];
        for (int64_t kw = 0; kw < p.k[2]; ++kw) {
          const int64_t iw = o[2] * p.s[2] - p.pb[2] + kw * p.d[2];
          if (id < p.in[0] + p.pe[0] && ih < p.in[1] + p.pe[1] && iw < p.in[2] + p.pe[2]) ++padded;
          if (id < 0 || id >= p.in[0] || ih < 0 || ih >= p.in[1] || iw < 0 || iw >= p.in[2]) continue;
          ++valid;
          const int64_t pos = (id * p.in[1] + ih) * p.in[2] + iw;
          const float v = Convert<float>(x[base + pos * step]);
          if (kMax) {
            if (best < 0) best = pos;
            if (v > acc) {
              acc = v;
              best = pos;
            }
          } else {
            acc += v;
          }
        }
      }
    }
    float out;
    if (kMax) {
      out = valid > 0 ? acc : 0.0f;
    } else {
      const int64_t count = include_pad ? padded : valid;
      out = count > 0 ? acc / static_cast<float>(count) : 0.0f;
    }
    y[i] = Convert<T>(out);
    if (indices != nullptr) indices[i] = (n * p.C + c) * in_plane + (best < 0 ? 0 : best);
  }
}

void PoolFn(KernelContext& ctx, bool max, bool nhwc) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(x.rank() >= 3, ctx.node_desc(), ": input must be [N, C, D1, ...], got ", ShapeToString(x.shape()));
  const int64_t r = x.rank();
  std::vector<int64_t> in = nhwc ? std::vector<int64_t>(x.shape().begin() + 1, x.shape().end() - 1)
                                 : std::vector<int64_t>(x.shape().begin() + 2, x.shape().end());
  const PoolGeometry g = ComputePoolGeometry(ctx.attrs(), in, ctx.node_desc(), false);
  const PoolDims p = MakePoolDims(g, x.dim(0), nhwc ? x.dim(r - 1) : x.dim(1), nhwc);
  int64_t* indices = nullptr;
  if (max && ctx.has_output(1)) {
    OF_CHECK(ctx.attrs().GetInt("storage_order", 0) == 0, kUnsupported, ctx.node_desc(),
             ": Indices with storage_order 1 are not supported on CUDA");
    indices = ctx.output(1).data<int64_t>();
  }
  const bool include_pad = !max && ctx.attrs().GetInt("count_include_pad", 0) != 0;
  const int64_t total = y.numel();
  if (total == 0) return;
  cudaStream_t s = CurrentStream();
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (max) PoolKernel<T, true><<<GridFor(total), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), indices, p, false, total);
    else PoolKernel<T, false><<<GridFor(total), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), nullptr, p, include_pad, total);
  });
  OF_CUDA_CHECK_LAUNCH("PoolKernel");
}

void MaxPoolFn(KernelContext& ctx) { PoolFn(ctx, true, false); }
ONEFLOW_CUDA_KERNEL(MaxPool, MaxPoolFn);
void AveragePoolFn(KernelContext& ctx) { PoolFn(ctx, false, false); }
ONEFLOW_CUDA_KERNEL(AveragePool, AveragePoolFn);
void NhwcMaxPoolFn(KernelContext& ctx) { PoolFn(ctx, true, true); }
ONEFLOW_CUDA_KERNEL(NhwcMaxPool, NhwcMaxPoolFn);
void NhwcAveragePoolFn(KernelContext& ctx) { PoolFn(ctx, false, true); }
ONEFLOW_CUDA_KERNEL(NhwcAveragePool, NhwcAveragePoolFn);

// ---- Global pools -------------------------------------------------------------------------------
// NCHW: one block per (n, c) plane, a block reduction over the contiguous plane.
template <typename T, bool kMax>
__global__ void GlobalPoolPlaneKernel(const T* __restrict__ x, T* __restrict__ y, int64_t plane) {
  __shared__ float partial[kThreads];
  const T* px = x + static_cast<int64_t>(blockIdx.x) * plane;
  float acc = kMax ? -FLT_MAX : 0.0f;
  for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) {
    const float v = Convert<float>(px[i]);
    acc = kMax ? (v > acc ? v : acc) : acc + v;
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      const float o = partial[threadIdx.x + w];
      partial[threadIdx.x] = kMax ? fmaxf(partial[threadIdx.x], o) : partial[threadIdx.x] + o;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = Convert<T>(kMax ? partial[0] : partial[0] / static_cast<float>(plane));
}

// NHWC: one thread per (n, c); neighbouring threads read neighbouring channels (coalesced).
template <typename T>
__global__ void GlobalAvgNhwcKernel(const T* __restrict__ x, T* __restrict__ y, int64_t N, int64_t plane, int64_t C) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < N * C; i += stride) {
    const int64_t n = i / C, c = i % C;
    const T* px = x + n * plane * C + c;
    float acc = 0.0f;
    for (int64_t j = 0; j < plane; ++j) acc += Convert<float>(px[j * C]);
    y[i] = Convert<T>(acc / static_cast<float>(plane));
  }
}

void GlobalPoolFn(KernelContext& ctx, bool max) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(x.rank() >= 3, ctx.node_desc(), ": input must be [N, C, D1, ...], got ", ShapeToString(x.shape()));
  const int64_t planes = x.dim(0) * x.dim(1);
  if (planes == 0) return;
  const int64_t plane = x.numel() / planes;
  OF_REQUIRE(plane > 0, ctx.node_desc(), ": empty spatial dims");
  OF_CHECK(planes <= INT32_MAX, kUnsupported, ctx.node_desc(), ": too many planes for CUDA");
  cudaStream_t s = CurrentStream();
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (max) GlobalPoolPlaneKernel<T, true><<<static_cast<unsigned>(planes), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), plane);
    else GlobalPoolPlaneKernel<T, false><<<static_cast<unsigned>(planes), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), plane);
  });
  OF_CUDA_CHECK_LAUNCH("GlobalPoolPlaneKernel");
}

void GlobalAveragePoolFn(KernelContext& ctx) { GlobalPoolFn(ctx, false); }
ONEFLOW_CUDA_KERNEL(GlobalAveragePool, GlobalAveragePoolFn);
void GlobalMaxPoolFn(KernelContext& ctx) { GlobalPoolFn(ctx, true); }
ONEFLOW_CUDA_KERNEL(GlobalMaxPool, GlobalMaxPoolFn);

void NhwcGlobalAveragePoolFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(x.rank() == 4, ctx.node_desc(), ": input must be [N, H, W, C], got ", ShapeToString(x.shape()));
  const int64_t N = x.dim(0), C = x.dim(3), plane = x.dim(1) * x.dim(2);
  if (N * C == 0) return;
  OF_REQUIRE(plane > 0, ctx.node_desc(), ": empty spatial dims");
  cudaStream_t s = CurrentStream();
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    GlobalAvgNhwcKernel<T><<<GridFor(N * C), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), N, plane, C);
  });
  OF_CUDA_CHECK_LAUNCH("GlobalAvgNhwcKernel");
}
ONEFLOW_CUDA_KERNEL(NhwcGlobalAveragePool, NhwcGlobalAveragePoolFn);

// ---- Pool gradients --------------------------------------------------------------------------------
// Gathered per input element (deterministic, no atomics): every output window covering the element
// contributes dY / divisor (average; the forward's divisor) or dY when the element is the window's
// first maximum, recomputed from X with the forward's rule (max; a window missing the input entirely
// passes no gradient). NCHW only.
template <typename T, bool kMax>
__global__ void PoolGradKernel(const T* __restrict__ dy, const T* __restrict__ x, T* __restrict__ dx, PoolDims p,
                               bool include_pad, int64_t total) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t in_plane = p.in[0] * p.in[1] * p.in[2], out_plane = p.out[0] * p.out[1] * p.out[2];
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t pos = i % in_plane, plane = i / in_plane;
    const int64_t ip[3] = {pos / (p.in[1] * p.in[2]), (pos / p.in[2]) % p.in[1], pos % p.in[2]};
    const T* xp = x + plane * in_plane;
    const T* dyp = dy + plane * out_plane;
    float acc = 0.0f;
    for (int64_t ka = 0; ka < p.k[0]; ++ka) {
      const int64_t ta = ip[0] + p.pb[0] - ka * p.d[0];
      if (ta < 0 || ta % p.s[0] != 0 || ta / p.s[0] >= p.out[0]) continue;
      const int64_t od = ta / p.s[0];
      for (int64_t kb = 0; kb < p.k[1]; ++kb) {
        const int64_t tb = ip[1] + p.pb[1] - kb * p.d[1];
        if (tb < 0 || tb % p.s[1] != 0 || tb / p.s[1] >= p.out[1]) continue;
        const int64_t oh = tb / p.s[1];
        for (int64_t kc = 0; kc < p.k[2]; ++kc) {
          const int64_t tc = ip[2] + p.pb[2] - kc * p.d[2];
          if (tc < 0 || tc % p.s[2] != 0 || tc / p.s[2] >= p.out[2]) continue;
          const int64_t ow = tc / p.s[2];
          const int64_t o[3] = {od, oh, ow};
          const float g = Convert<float>(dyp[(od * p.out[1] + oh) * p.out[2] + ow]);
          if (kMax) {
            float best_v = -FLT_MAX;
            int64_t best = -1;
            for (int64_t a = 0; a < p.k[0]; ++a) {
              const int64_t id = o[0] * p.s[0] - p.pb[0] + a * p.d[0];
              if (id < 0 || id >= p.in[0]) continue;
              for (int64_t b = 0; b < p.k[1]; ++b) {
                const int64_t ih = o[1] * p.s[1] - p.pb[1] + b * p.d[1];
                if (ih < 0 || ih >= p.in[1]) continue;
                for (int64_t c = 0; c < p.k[2]; ++c) {
                  const int64_t iw = o[2] * p.s[2] - p.pb[2] + c * p.d[2];
                  if (iw < 0 || iw >= p.in[2]) continue;
                  const int64_t q = (id * p.in[1] + ih) * p.in[2] + iw;
                  const float v = Convert<float>(xp[q]);
                  if (best < 0) best = q;
                  if (v > best_v) {
                    best_v = v;
                    best = q;
                  }
                }
              }
            }
            if (best == pos) acc += g;
          } else {
            int64_t count = 1;
            for (int dim = 0; dim < 3; ++dim) {
              int64_t valid = 0, padded = 0;
              for (int64_t t = 0; t < p.k[dim]; ++t) {
                const int64_t q = o[dim] * p.s[dim] - p.pb[dim] + t * p.d[dim];
                valid += q >= 0 && q < p.in[dim];
                padded += q < p.in[dim] + p.pe[dim];
              }
              count *= include_pad ? padded : valid;
            }
            if (count > 0) acc += g / static_cast<float>(count);
          }
        }
      }
    }
    dx[i] = Convert<T>(acc);
  }
}

void PoolGradFn(KernelContext& ctx, bool max) {
  const Tensor& dy = ctx.input(0);
  Tensor& dx = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(dx.rank() >= 3, node, ": the forward input must be [N, C, D1, ...], got ", ShapeToString(dx.shape()));
  const std::vector<int64_t> in(dx.shape().begin() + 2, dx.shape().end());
  const PoolGeometry g = ComputePoolGeometry(ctx.attrs(), in, node, false);
  Shape want{dx.dim(0), dx.dim(1)};
  want.insert(want.end(), g.out.begin(), g.out.end());
  OF_REQUIRE(dy.shape() == want, node, ": dY ", ShapeToString(dy.shape()), " is not the pool's output shape ",
             ShapeToString(want));
  const PoolDims p = MakePoolDims(g, dx.dim(0), dx.dim(1), false);
  const bool include_pad = !max && ctx.attrs().GetInt("count_include_pad", 0) != 0;
  const int64_t total = dx.numel();
  if (total == 0) return;
  cudaStream_t s = CurrentStream();
  DispatchFloat(dx.dtype(), node.c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (max) {
      OF_REQUIRE(ctx.input(1).dtype() == dy.dtype() && ctx.input(1).shape() == dx.shape(), node,
                 ": X must have dX's shape and dY's dtype");
      PoolGradKernel<T, true><<<GridFor(total), kThreads, 0, s>>>(dy.data<T>(), ctx.input(1).data<T>(), dx.data<T>(), p,
                                                                  false, total);
    } else {
      PoolGradKernel<T, false><<<GridFor(total), kThreads, 0, s>>>(dy.data<T>(), nullptr, dx.data<T>(), p, include_pad,
                                                                   total);
    }
  });
  OF_CUDA_CHECK_LAUNCH("PoolGradKernel");
}

void MaxPoolGradFn(KernelContext& ctx) { PoolGradFn(ctx, true); }
ONEFLOW_CUDA_KERNEL(MaxPoolGrad, MaxPoolGradFn);
void AveragePoolGradFn(KernelContext& ctx) { PoolGradFn(ctx, false); }
ONEFLOW_CUDA_KERNEL(AveragePoolGrad, AveragePoolGradFn);

// GlobalAveragePoolGrad: dX = dY[plane] / plane size everywhere.
template <typename T>
__global__ void GlobalAvgGradKernel(const T* __restrict__ dy, T* __restrict__ dx, int64_t plane, int64_t total) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride)
    dx[i] = Convert<T>(Convert<float>(dy[i / plane]) / static_cast<float>(plane));
}

// GlobalMaxPoolGrad: one block per plane finds the first maximum (ties to the lower index) and
// writes the plane: dY there, 0 elsewhere.
template <typename T>
__global__ void GlobalMaxGradKernel(const T* __restrict__ dy, const T* __restrict__ x, T* __restrict__ dx,
                                    int64_t plane) {
  __shared__ float best_v[kThreads];
  __shared__ int64_t best_i[kThreads];
  const T* xp = x + static_cast<int64_t>(blockIdx.x) * plane;
  T* dxp = dx + static_cast<int64_t>(blockIdx.x) * plane;
  float bv = -FLT_MAX;
  int64_t bi = -1;
  for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) {
    const float v = Convert<float>(xp[i]);
    if (v > bv) {
      bv = v;
      bi = i;
    }
  }
  best_v[threadIdx.x] = bv;
  best_i[threadIdx.x] = bi;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      const float ov = best_v[threadIdx.x + w];
      const int64_t oi = best_i[threadIdx.x + w];
      const bool take = oi >= 0 && (best_i[threadIdx.x] < 0 || ov > best_v[threadIdx.x] ||
                                    (ov == best_v[threadIdx.x] && oi < best_i[threadIdx.x]));
      if (take) {
        best_v[threadIdx.x] = ov;
        best_i[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  const int64_t at = best_i[0] < 0 ? 0 : best_i[0];
  const T g = dy[blockIdx.x];
  for (int64_t i = threadIdx.x; i < plane; i += blockDim.x) dxp[i] = i == at ? g : Convert<T>(0.0f);
}

void GlobalPoolGradFn(KernelContext& ctx, bool max) {
  const Tensor& dy = ctx.input(0);
  Tensor& dx = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(dx.rank() >= 3, node, ": the forward input must be [N, C, D1, ...], got ", ShapeToString(dx.shape()));
  const int64_t planes = dx.dim(0) * dx.dim(1);
  OF_REQUIRE(dy.numel() == planes, node, ": dY must hold one value per (n, c) plane");
  if (dx.numel() == 0) return;
  const int64_t plane = dx.numel() / planes;
  OF_CHECK(planes <= INT32_MAX, kUnsupported, node, ": too many planes for CUDA");
  cudaStream_t s = CurrentStream();
  DispatchFloat(dx.dtype(), node.c_str(), [&](auto tag) {
    using T = decltype(tag);
    if (max) {
      OF_REQUIRE(ctx.input(1).dtype() == dy.dtype() && ctx.input(1).shape() == dx.shape(), node,
                 ": X must have dX's shape and dY's dtype");
      GlobalMaxGradKernel<T><<<static_cast<unsigned>(planes), kThreads, 0, s>>>(dy.data<T>(), ctx.input(1).data<T>(),
                                                                               dx.data<T>(), plane);
    } else {
      GlobalAvgGradKernel<T><<<GridFor(dx.numel()), kThreads, 0, s>>>(dy.data<T>(), dx.data<T>(), plane, dx.numel());
    }
  });
  OF_CUDA_CHECK_LAUNCH("GlobalPoolGradKernel");
}

void GlobalAveragePoolGradFn(KernelContext& ctx) { GlobalPoolGradFn(ctx, false); }
ONEFLOW_CUDA_KERNEL(GlobalAveragePoolGrad, GlobalAveragePoolGradFn);
void GlobalMaxPoolGradFn(KernelContext& ctx) { GlobalPoolGradFn(ctx, true); }
ONEFLOW_CUDA_KERNEL(GlobalMaxPoolGrad, GlobalMaxPoolGradFn);

// ---- BatchNormalization -------------------------------------------------------------------------
// y = (x - mean[c]) * scale[c] / sqrt(var[c] + eps) + B[c]; parameters are f32 or X's dtype.
template <typename T, typename P>
__global__ void BatchNormKernel(const T* __restrict__ x, T* __restrict__ y, const P* __restrict__ scale,
                                const P* __restrict__ bias, const P* __restrict__ mean, const P* __restrict__ var,
                                float eps, int64_t C, int64_t inner, int64_t total) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = (i / inner) % C;
    const float a = Convert<float>(scale[c]) * rsqrtf(Convert<float>(var[c]) + eps);
    y[i] = Convert<T>((Convert<float>(x[i]) - Convert<float>(mean[c])) * a + Convert<float>(bias[c]));
  }
}

// Training mode, pass 1: one block per channel computes the batch mean and biased variance over
// (N, spatial) in two passes (f32), stores them in `stats` [2C] and, when asked, the running
// statistics input * momentum + batch * (1 - momentum) in the parameters' dtype.
template <typename T, typename P>
__global__ void BatchStatsKernel(const T* __restrict__ x, float* __restrict__ stats, const P* __restrict__ in_mean,
                                 const P* __restrict__ in_var, P* __restrict__ run_mean, P* __restrict__ run_var,
                                 float momentum, int64_t N, int64_t C, int64_t inner) {
  __shared__ float partial[kThreads];
  const int64_t c = blockIdx.x, count = N * inner;
  auto block_sum = [&](float v) {
    partial[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
      __syncthreads();
    }
    const float total = partial[0];
    __syncthreads();  // partial is reused by the next sum
    return total;
  };
  float acc = 0.0f;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x)
    acc += Convert<float>(x[((j / inner) * C + c) * inner + j % inner]);
  const float mean = block_sum(acc) / static_cast<float>(count);
  acc = 0.0f;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const float d = Convert<float>(x[((j / inner) * C + c) * inner + j % inner]) - mean;
    acc += d * d;
  }
  const float var = block_sum(acc) / static_cast<float>(count);
  if (threadIdx.x == 0) {
    stats[c] = mean;
    stats[C + c] = var;
    if (run_mean) run_mean[c] = Convert<P>(Convert<float>(in_mean[c]) * momentum + mean * (1.0f - momentum));
    if (run_var) run_var[c] = Convert<P>(Convert<float>(in_var[c]) * momentum + var * (1.0f - momentum));
  }
}

// Training mode, pass 2: y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + B[c] with the batch's stats.
template <typename T, typename P>
__global__ void BatchNormTrainKernel(const T* __restrict__ x, T* __restrict__ y, const P* __restrict__ scale,
                                     const P* __restrict__ bias, const float* __restrict__ stats, float eps, int64_t C,
                                     int64_t inner, int64_t total) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t c = (i / inner) % C;
    const float a = Convert<float>(scale[c]) * rsqrtf(stats[C + c] + eps);
    y[i] = Convert<T>((Convert<float>(x[i]) - stats[c]) * a + Convert<float>(bias[c]));
  }
}

void BatchNormFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const bool training = ctx.attrs().GetInt("training_mode", 0) != 0;
  OF_REQUIRE(training || (!ctx.has_output(1) && !ctx.has_output(2)), ctx.node_desc(),
             ": running statistics outputs need training_mode 1");
  OF_REQUIRE(x.rank() >= 2, ctx.node_desc(), ": X must have rank >= 2, got ", ShapeToString(x.shape()));
  const int64_t C = x.dim(1);
  const DType pdt = ctx.input(1).dtype();
  for (size_t i = 1; i < 5; ++i) {
    OF_REQUIRE(ctx.input(i).numel() == C, ctx.node_desc(), ": parameter input ", i, " must have C = ", C, " elements");
    OF_REQUIRE(ctx.input(i).dtype() == pdt, ctx.node_desc(), ": the four parameters must share one dtype");
  }
  OF_CHECK(pdt == x.dtype() || pdt == DType::kFloat32, kUnsupported, ctx.node_desc(), ": parameters of dtype ",
           DTypeName(pdt), " with X of dtype ", DTypeName(x.dtype()), " on CUDA");
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_output(i))
      OF_REQUIRE(ctx.output(i).dtype() == pdt && ctx.output(i).numel() == C, ctx.node_desc(), ": output ", i,
                 " must be [C] of the parameters' dtype");
  const int64_t total = x.numel();
  if (total == 0 || C == 0) return;
  const int64_t inner = total / (x.dim(0) * C);
  const float eps = ctx.attrs().GetFloat("epsilon", 1e-5f);
  const float momentum = ctx.attrs().GetFloat("momentum", 0.9f);
  OF_CHECK(C <= INT32_MAX, kUnsupported, ctx.node_desc(), ": too many channels for CUDA");
  cudaStream_t s = CurrentStream();
  int device = 0;
  OF_CUDA_CHECK(cudaGetDevice(&device));
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    auto launch = [&](auto ptag) {
      using P = decltype(ptag);
      const P* scale = ctx.input(1).data<P>();
      const P* bias = ctx.input(2).data<P>();
      const P* mean = ctx.input(3).data<P>();
      const P* var = ctx.input(4).data<P>();
      if (!training) {
        BatchNormKernel<T, P><<<GridFor(total), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), scale, bias, mean, var, eps,
                                                                  C, inner, total);
        return;
      }
      // The statistics buffer returns to this stream's pool when `stats` dies, after both launches.
      std::shared_ptr<Storage> stats = AllocateDeviceStorage(2 * static_cast<size_t>(C) * sizeof(float), device, s);
      float* st = static_cast<float*>(stats->data());
      BatchStatsKernel<T, P><<<static_cast<unsigned>(C), kThreads, 0, s>>>(
          x.data<T>(), st, mean, var, ctx.has_output(1) ? ctx.output(1).data<P>() : nullptr,
          ctx.has_output(2) ? ctx.output(2).data<P>() : nullptr, momentum, x.dim(0), C, inner);
      OF_CUDA_CHECK_LAUNCH("BatchStatsKernel");
      BatchNormTrainKernel<T, P><<<GridFor(total), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), scale, bias, st, eps, C,
                                                                     inner, total);
    };
    if (pdt == DType::kFloat32) launch(float{});
    else launch(T{});
  });
  OF_CUDA_CHECK_LAUNCH("BatchNormKernel");
}
ONEFLOW_CUDA_KERNEL(BatchNormalization, BatchNormFn);

// ---- Convolution epilogue and bias gradient -----------------------------------------------------
// y = y + bias[c] + z, then Relu when asked; channel c of element i is (i / inner) % C (NCHW) or
// i % C (NHWC, inner = 1).
template <typename T>
__global__ void ConvEpilogueKernel(T* __restrict__ y, const T* __restrict__ bias, const T* __restrict__ z,
                                   int64_t C, int64_t inner, bool relu, int64_t total) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    float v = Convert<float>(y[i]);
    if (bias != nullptr) v += Convert<float>(bias[(i / inner) % C]);
    if (z != nullptr) v += Convert<float>(z[i]);
    if (relu) v = v > 0.0f ? v : 0.0f;
    y[i] = Convert<T>(v);
  }
}

// dB[c] = sum of dY over every axis but 1: one block per channel, f32 accumulation.
template <typename T>
__global__ void ConvBiasGradKernel(const T* __restrict__ dy, T* __restrict__ db, int64_t N, int64_t C, int64_t inner) {
  __shared__ float partial[kThreads];
  const int64_t c = blockIdx.x;
  float acc = 0.0f;
  for (int64_t j = threadIdx.x; j < N * inner; j += blockDim.x) {
    const int64_t n = j / inner, k = j % inner;
    acc += Convert<float>(dy[(n * C + c) * inner + k]);
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] = Convert<T>(partial[0]);
}

void ConvGradBiasFn(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  Tensor& db = ctx.output(0);
  OF_REQUIRE(dy.rank() >= 2, ctx.node_desc(), ": dY must have rank >= 2");
  const int64_t N = dy.dim(0), C = dy.dim(1);
  if (C == 0) return;
  const int64_t inner = N * C > 0 ? dy.numel() / (N * C) : 0;
  OF_CHECK(C <= INT32_MAX, kUnsupported, ctx.node_desc(), ": too many channels for CUDA");
  cudaStream_t s = CurrentStream();
  DispatchFloat(dy.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    ConvBiasGradKernel<T><<<static_cast<unsigned>(C), kThreads, 0, s>>>(dy.data<T>(), db.data<T>(), N, C, inner);
  });
  OF_CUDA_CHECK_LAUNCH("ConvBiasGradKernel");
}
ONEFLOW_CUDA_KERNEL(ConvGradBias, ConvGradBiasFn);

}  // namespace

void LaunchConvEpilogue(DType dt, void* y, const void* bias, const void* z, int64_t total, int64_t channels,
                        int64_t inner, bool relu, cudaStream_t stream) {
  if (total == 0 || (bias == nullptr && z == nullptr && !relu)) return;
  DispatchFloat(dt, "Conv epilogue", [&](auto tag) {
    using T = decltype(tag);
    ConvEpilogueKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), static_cast<const T*>(z), channels, inner, relu, total);
  });
  OF_CUDA_CHECK_LAUNCH("ConvEpilogueKernel");
}

}  // namespace oneflow::cuda

