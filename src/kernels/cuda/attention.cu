// CUDA kernel: ai.oneflow FusedAttention, softmax(scale * Q K^T [causal]) V, flash-style: the
// score matrix never reaches global memory. A block takes 16 query rows of one (batch, head) and
// streams K/V through shared memory in tiles of 32 keys; each warp owns 4 query rows and keeps their
// running max, running sum and output accumulator (online softmax) in registers. Lane j scores key j
// of a tile; the probabilities are then broadcast by shuffles while each lane accumulates its own
// output columns. All arithmetic is f32 (f16/bf16 inputs are widened on load); head sizes up to 128.
#include <cmath>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/op_schema.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 4;
constexpr int kBr = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kBc = 32;                     // keys per tile: one per lane
constexpr int kMaxD = 128;                  // head size limit (shared memory: about 40 KiB per block)
constexpr int kCols = kMaxD / 32;           // output columns per lane
constexpr unsigned kFull = 0xffffffffu;

// Grid: x = batch * head, y = blocks of kBr query rows. Q [bh, sq, d], K [bh, sk, d], V [bh, sk, dv].
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) FlashAttentionKernel(const T* __restrict__ q, const T* __restrict__ k,
                                                                   const T* __restrict__ v, T* __restrict__ y, int sq,
                                                                   int sk, int d, int dv, float scale, bool causal) {
  __shared__ float qs[kBr][kMaxD];
  __shared__ float ks[kBc][kMaxD + 1];  // +1: lane j reads row j, so the stride avoids bank conflicts
  __shared__ float vs[kBc][kMaxD];
  const int64_t bh = blockIdx.x;
  const int q0 = blockIdx.y * kBr;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const T* qb = q + bh * sq * d;
  const T* kb = k + bh * sk * d;
  const T* vb = v + bh * sk * dv;

  for (int i = tid; i < kBr * d; i += blockDim.x) {  // the scale is folded into Q
    const int r = i / d, c = i % d;
    qs[r][c] = q0 + r < sq ? Convert<float>(qb[static_cast<int64_t>(q0 + r) * d + c]) * scale : 0.0f;
  }
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kCols];
#pragma unroll
  for (int t = 0; t < kRowsPerWarp; ++t) {
    m[t] = -INFINITY;
    l[t] = 0.0f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[t][c] = 0.0f;
  }
  // Causal (query i sees keys j <= i): this block's last row needs keys below q0 + kBr only.
  const int keys = causal ? min(sk, q0 + kBr) : sk;
  for (int kt = 0; kt < keys; kt += kBc) {
    __syncthreads();  // Q is loaded / the previous tile is consumed
    for (int i = tid; i < kBc * d; i += blockDim.x) {
      const int j = i / d, c = i % d;
      ks[j][c] = kt + j < sk ? Convert<float>(kb[static_cast<int64_t>(kt + j) * d + c]) : 0.0f;
    }
    for (int i = tid; i < kBc * dv; i += blockDim.x) {
      const int j = i / dv, c = i % dv;
      vs[j][c] = kt + j < sk ? Convert<float>(vb[static_cast<int64_t>(kt + j) * dv + c]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kRowsPerWarp; ++t) {
      const int r = warp * kRowsPerWarp + t;
      const int row = q0 + r;
      if (row >= sq) continue;  // warp-uniform
      const int j = kt + lane;
      float s = -INFINITY;
      if (j < sk && (!causal || j <= row)) {
        s = 0.0f;
        for (int c = 0; c < d; ++c) s = fmaf(qs[r][c], ks[lane][c], s);
      }
      const float m_new = fmaxf(m[t], WarpMax(s));
      if (m_new == -INFINITY) continue;  // every key so far masked (warp-uniform)
      const float p = s == -INFINITY ? 0.0f : expf(s - m_new);
      const float alpha = expf(m[t] - m_new);  // 0 on the first tile (m = -inf)
      l[t] = l[t] * alpha + WarpSum(p);
      m[t] = m_new;
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[t][c] *= alpha;
      for (int jj = 0; jj < kBc; ++jj) {
        const float pj = __shfl_sync(kFull, p, jj);
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const int col = lane + 32 * c;
          if (col < dv) acc[t][c] = fmaf(pj, vs[jj][col], acc[t][c]);
        }
      }
    }
  }
#pragma unroll
  for (int t = 0; t < kRowsPerWarp; ++t) {
    const int row = q0 + warp * kRowsPerWarp + t;
    if (row >= sq) continue;
    const float inv = l[t] > 0.0f ? 1.0f / l[t] : 0.0f;
    T* yr = y + (bh * sq + row) * dv;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = lane + 32 * c;
      if (col < dv) yr[col] = Convert<T>(acc[t][c] * inv);
    }
  }
}

void FusedAttentionFn(KernelContext& ctx) {
  const Tensor& q = ctx.input(0);
  const Tensor& k = ctx.input(1);
  const Tensor& v = ctx.input(2);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(q.rank() == 4 && k.rank() == 4 && v.rank() == 4, node, ": Q, K and V must be [B, H, S, D]");
  OF_REQUIRE(q.dim(0) == k.dim(0) && q.dim(1) == k.dim(1) && k.dim(0) == v.dim(0) && k.dim(1) == v.dim(1) &&
                 q.dim(3) == k.dim(3) && k.dim(2) == v.dim(2),
             node, ": Q ", ShapeToString(q.shape()), ", K ", ShapeToString(k.shape()), " and V ",
             ShapeToString(v.shape()), " do not match");
  OF_REQUIRE(k.dtype() == q.dtype() && v.dtype() == q.dtype(), node, ": Q, K and V must share one dtype");
  const int64_t bh = q.dim(0) * q.dim(1), sq = q.dim(2), sk = k.dim(2), d = q.dim(3), dv = v.dim(3);
  if (y.numel() == 0) return;
  OF_REQUIRE(sk > 0, node, ": K and V have no keys");
  OF_CHECK(d <= kMaxD && dv <= kMaxD, kUnsupported, node, ": head sizes above ", kMaxD, " are not supported on CUDA (D ",
           d, ", Dv ", dv, ")");
  OF_CHECK(sq <= INT32_MAX / 2 && sk <= INT32_MAX / 2 && (sq + kBr - 1) / kBr <= 65535 && bh <= INT32_MAX, kUnsupported,
           node, ": sequence or batch too long for the CUDA attention kernel");
  float scale = ctx.attrs().GetFloat("scale", 0.0f);
  if (scale == 0.0f) scale = 1.0f / std::sqrt(static_cast<float>(d));
  const bool causal = ctx.attrs().GetInt("causal", 0) != 0;
  const dim3 grid(static_cast<unsigned>(bh), static_cast<unsigned>((sq + kBr - 1) / kBr));
  cudaStream_t s = CurrentStream();
  DispatchFloat(q.dtype(), node.c_str(), [&](auto tag) {
    using T = decltype(tag);
    FlashAttentionKernel<T><<<grid, kWarps * 32, 0, s>>>(q.data<T>(), k.data<T>(), v.data<T>(), y.data<T>(),
                                                          static_cast<int>(sq), static_cast<int>(sk), static_cast<int>(d),
                                                          static_cast<int>(dv), scale, causal);
  });
  OF_CUDA_CHECK_LAUNCH("FlashAttentionKernel");
}

// What the static types already show the kernel cannot do (f64, head sizes above kMaxD) is refused
// at creation, so placement runs such a node on the CPU kernel from the start instead of paying a
// failed run; shapes known only at run time are still checked by FusedAttentionFn.
std::unique_ptr<OpKernel> MakeFusedAttentionKernel(const KernelInitContext& c) {
  const std::string what = c.node().Describe();
  if (!c.has_input(0)) return std::make_unique<FunctionKernel>(FusedAttentionFn);
  const DType dt = c.input_type(0).dtype;
  OF_CHECK(dt == DType::kFloat32 || dt == DType::kFloat16 || dt == DType::kBFloat16, kUnsupported, what,
           ": dtype ", DTypeName(dt), " is not supported on CUDA");
  for (size_t i : {0, 2}) {
    if (!c.has_input(i)) continue;
    const TensorType& t = c.input_type(i);
    const bool too_big = t.has_rank && t.rank() == 4 && t.dims[3].known() && t.dims[3].value > kMaxD;
    OF_CHECK(!too_big, kUnsupported, what, ": head sizes above ", kMaxD, " are not supported on CUDA (",
             t.ToString(), ")");
  }
  return std::make_unique<FunctionKernel>(FusedAttentionFn);
}
ONEFLOW_KERNEL_FACTORY(FusedAttention, DeviceType::kCuda, MakeFusedAttentionKernel);

}  // namespace
}  // namespace oneflow::cuda
