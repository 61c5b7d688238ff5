// CUDA kernels of the elementwise gradient ops (graph/ops/grad_ops.cc): the activation derivatives,
// ReduceSumToShape (bias and broadcast gradients) and Sum (gradient accumulation). f16/bf16 compute
// in f32; the op is chosen at run time inside one kernel per dtype, so each template is
// instantiated three times in all. Sums run in a fixed order (no atomics): results are deterministic.
#include <algorithm>
#include <cmath>
#include <vector>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/op_schema.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/unary_math.cuh"

namespace oneflow::cuda {
namespace {

// op < 0: ShrinkGrad (p = bias, lambd); otherwise a unary row's Bwd (unary_math.cuh).
__device__ __forceinline__ float ApplyGrad(const UnaryArgs& a, float d, float s) {
  if (a.op < 0) return s < -a.p[1] || s > a.p[1] ? d : 0.0f;
  return EvalUnaryGrad(a, d, s);
}

template <typename T>
__global__ void ActivationGradKernel(const T* __restrict__ dy, const T* __restrict__ s, T* __restrict__ dx, int64_t n,
                                     UnaryArgs p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    dx[i] = Convert<T>(ApplyGrad(p, Convert<float>(dy[i]), Convert<float>(s[i])));
}

void LaunchActivationGrad(KernelContext& ctx, const UnaryArgs& p) {
  const Tensor& dy = ctx.input(0);
  const Tensor& s = ctx.input(1);
  OF_REQUIRE(dy.shape() == s.shape() && dy.dtype() == s.dtype(), ctx.node_desc(), ": dY ", ShapeToString(dy.shape()),
             " and the saved value ", ShapeToString(s.shape()), " differ");
  const int64_t n = dy.numel();
  if (n == 0) return;
  cudaStream_t st = CurrentStream();
  DispatchFloat(dy.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    ActivationGradKernel<T><<<GridFor(n), kThreads, 0, st>>>(dy.data<T>(), s.data<T>(), ctx.output(0).data<T>(), n, p);
  });
  OF_CUDA_CHECK_LAUNCH("ActivationGradKernel");
}

// <Op>Grad of a unary row, with the forward op's attributes.
template <UnaryOpId kId>
void DerivativeFn(KernelContext& ctx) {
  LaunchActivationGrad(ctx, RowArgs(kId, ctx.attrs(), ctx.node_desc()));
}

// Every standalone unary row with a derivative runs DerivativeFn for its <Op>Grad.
void RegisterDerivatives(KernelRegistry& r) {
#define OF_REGISTER_DERIVATIVE(Op)                                                    \
  if constexpr (unary::Op::kStandalone && unary::Op::kGrad != unary::GradFrom::kNone) \
    r.RegisterFn(OpId::k##Op##Grad, DerivativeFn<UnaryOpId::k##Op>, DeviceType::kCuda);
  ONEFLOW_UNARY_OPS(OF_REGISTER_DERIVATIVE)
#undef OF_REGISTER_DERIVATIVE
}
ONEFLOW_KERNEL_TABLE(RegisterDerivatives);

void ShrinkGradFn(KernelContext& ctx) {
  UnaryArgs p;
  p.op = -1;
  p.p[0] = ctx.attrs().GetFloat("bias");
  p.p[1] = ctx.attrs().GetFloat("lambd");
  LaunchActivationGrad(ctx, p);
}
ONEFLOW_CUDA_KERNEL(ShrinkGrad, ShrinkGradFn);

// ---- ReduceSumToShape ---------------------------------------------------------------------------
// X viewed as alternating groups of kept and summed dims. Three layouts:
//   columns [R, C] -> [C] (bias gradients): blocks of 32 columns x 8 row lanes, rows split across
//     gridDim.y chunks whose f32 partials a second kernel adds in chunk order;
//   rows    [C, R] -> [C]: a block per output row;
//   anything else: a thread per output element walking the summed index space.
constexpr int kColTile = 32, kRowLanes = 8, kMaxRowChunks = 64;

// partial[chunk, c] = sum of x[r, c] over the chunk's rows.
template <typename T>
__global__ void ColumnPartialKernel(const T* __restrict__ x, float* __restrict__ partial, int64_t rows, int64_t cols,
                                    int64_t rows_per_chunk) {
  __shared__ float tile[kRowLanes][kColTile];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = min(rows, r0 + rows_per_chunk);
  float acc = 0.0f;
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) acc += Convert<float>(x[r * cols + c]);
  tile[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float s = 0.0f;
    for (int k = 0; k < kRowLanes; ++k) s += tile[k][threadIdx.x];
    partial[static_cast<int64_t>(blockIdx.y) * cols + c] = s;
  }
}

template <typename T>
__global__ void ColumnFinishKernel(const float* __restrict__ partial, T* __restrict__ y, int64_t chunks, int64_t cols) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += stride) {
    float s = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) s += partial[k * cols + c];
    y[c] = Convert<T>(s);
  }
}

template <typename T>
__global__ void RowSumKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {
  const T* row = x + static_cast<int64_t>(blockIdx.x) * n;
  float acc = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += Convert<float>(row[i]);
  acc = BlockSum(acc);
  if (threadIdx.x == 0) y[blockIdx.x] = Convert<T>(acc);
}

template <typename T>
__global__ void GenericSumKernel(const T* __restrict__ x, T* __restrict__ y, int64_t nout, ReduceMap m) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < nout; o += stride) {
    const int64_t base = m.KeptOffset(o);
    float acc = 0.0f;
    for (int64_t r = 0; r < m.rcount; ++r) acc += Convert<float>(x[base + m.ReducedOffset(r)]);
    y[o] = Convert<T>(acc);
  }
}

void ReduceSumToShapeFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Shape& xs = x.shape();
  const Shape& ys = y.shape();  // allocated from the shape input by the executor
  OF_REQUIRE(ys.size() <= xs.size(), ctx.node_desc(), ": cannot sum ", ShapeToString(xs), " to the larger rank ",
             ShapeToString(ys));
  const size_t off = xs.size() - ys.size();
  // Merged groups: (dim, summed?) with adjacent dims of the same kind multiplied together.
  std::vector<std::pair<int64_t, bool>> groups;
  for (size_t d = 0; d < xs.size(); ++d) {
    const int64_t yd = d < off ? 1 : ys[d - off];
    OF_REQUIRE(yd == xs[d] || yd == 1, ctx.node_desc(), ": ", ShapeToString(xs), " is not a broadcast of ",
               ShapeToString(ys));
    if (xs[d] == 1) continue;
    const bool summed = yd == 1;
    if (!groups.empty() && groups.back().second == summed) groups.back().first *= xs[d];
    else groups.emplace_back(xs[d], summed);
  }
  cudaStream_t st = CurrentStream();
  const int64_t nout = y.numel();
  if (nout == 0) return;
  if (x.numel() == 0) {
    OF_CUDA_CHECK(cudaMemsetAsync(y.raw(), 0, y.nbytes(), st));
    return;
  }
  OF_CHECK(groups.size() <= static_cast<size_t>(kMaxRank), kUnsupported, ctx.node_desc(), ": rank > ", kMaxRank);
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    const bool any_summed = std::any_of(groups.begin(), groups.end(), [](auto& g) { return g.second; });
    if (!any_summed) {
      OF_CUDA_CHECK(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, st));
    } else if (groups.size() == 2 && groups[0].second) {
      const int64_t rows = groups[0].first, cols = groups[1].first;
      // Enough row chunks to give every SM work, each at least 64 rows.
      const int64_t col_blocks = (cols + kColTile - 1) / kColTile;
      int64_t chunks = std::min<int64_t>({kMaxRowChunks, (rows + 63) / 64, std::max<int64_t>(1, 512 / col_blocks)});
      chunks = std::max<int64_t>(1, chunks);
      const int64_t per = (rows + chunks - 1) / chunks;
      chunks = (rows + per - 1) / per;
      Tensor partial = EmptyDeviceTensor(DType::kFloat32, {chunks, cols}, CurrentDevice(), st);
      ColumnPartialKernel<T><<<dim3(static_cast<unsigned>(col_blocks), static_cast<unsigned>(chunks)),
                               dim3(kColTile, kRowLanes), 0, st>>>(x.data<T>(), partial.data<float>(), rows, cols, per);
      ColumnFinishKernel<T><<<GridFor(cols), kThreads, 0, st>>>(partial.data<float>(), y.data<T>(), chunks, cols);
    } else if (groups.size() <= 2 && groups.back().second && nout <= INT32_MAX) {
      RowSumKernel<T><<<static_cast<unsigned>(nout), kThreads, 0, st>>>(x.data<T>(), y.data<T>(), groups.back().first);
    } else {
      ReduceMap m;
      int64_t stride = 1;
      for (size_t k = groups.size(); k-- > 0;) {
        const auto [dim, summed] = groups[k];
        if (summed) {
          m.rdims[m.nr] = dim;
          m.rstrides[m.nr++] = stride;
          m.rcount *= dim;
        } else {
          m.kdims[m.nk] = dim;
          m.kstrides[m.nk++] = stride;
        }
        stride *= dim;
      }
      // Collected innermost first: reverse to outermost-first as the kernel walks them.
      std::reverse(m.rdims, m.rdims + m.nr);
      std::reverse(m.rstrides, m.rstrides + m.nr);
      std::reverse(m.kdims, m.kdims + m.nk);
      std::reverse(m.kstrides, m.kstrides + m.nk);
      GenericSumKernel<T><<<GridFor(nout), kThreads, 0, st>>>(x.data<T>(), y.data<T>(), nout, m);
    }
  });
  OF_CUDA_CHECK_LAUNCH(op::kReduceSumToShape);
}
ONEFLOW_CUDA_KERNEL(ReduceSumToShape, ReduceSumToShapeFn);

// ---- Sum (variadic, numpy broadcasting) ----------------------------------------------------------
constexpr int kSumInputs = 8;  // inputs per pass; more are added in further passes over Y

struct SumInputs {
  const void* ptr[kSumInputs];
  int64_t strides[kSumInputs][kMaxRank];  // 0 on broadcast dims
  int count = 0;
  int rank = 0;
  int64_t dims[kMaxRank];
  bool same_shape = true;  // every input has Y's shape: no index arithmetic
  bool accumulate = false;  // add to Y (a later pass)
};

template <typename T>
__global__ void SumKernel(T* __restrict__ y, int64_t n, SumInputs in) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float acc = in.accumulate ? Convert<float>(y[i]) : 0.0f;
    if (in.same_shape) {
      for (int k = 0; k < in.count; ++k) acc += Convert<float>(static_cast<const T*>(in.ptr[k])[i]);
    } else {
      for (int k = 0; k < in.count; ++k) {
        int64_t off = 0, rest = i;
        for (int d = in.rank - 1; d >= 0; --d) {
          off += (rest % in.dims[d]) * in.strides[k][d];
          rest /= in.dims[d];
        }
        acc += Convert<float>(static_cast<const T*>(in.ptr[k])[off]);
      }
    }
    y[i] = Convert<T>(acc);
  }
}

void SumFn(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const Shape& ys = y.shape();
  const int64_t n = y.numel();
  if (n == 0) return;
  OF_CHECK(ys.size() <= static_cast<size_t>(kMaxRank), kUnsupported, ctx.node_desc(), ": rank > ", kMaxRank);
  cudaStream_t st = CurrentStream();
  const size_t num = ctx.num_inputs();
  for (size_t first = 0; first < num; first += kSumInputs) {
    SumInputs in;
    in.rank = static_cast<int>(ys.size());
    for (int d = 0; d < in.rank; ++d) in.dims[d] = ys[static_cast<size_t>(d)];
    in.accumulate = first > 0;
    for (size_t k = first; k < std::min(num, first + kSumInputs); ++k) {
      const Tensor& t = ctx.input(k);
      OF_REQUIRE(t.dtype() == y.dtype(), ctx.node_desc(), ": input ", k, " is ", DTypeName(t.dtype()));
      const BroadcastMap m = MakeBroadcastMap(ys, t.shape(), Shape{});
      in.same_shape &= t.shape() == ys;
      for (int d = 0; d < in.rank; ++d) in.strides[in.count][d] = m.strides[0][d];
      in.ptr[in.count++] = t.raw();
    }
    DispatchFloat(y.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
      using T = decltype(tag);
      SumKernel<T><<<GridFor(n), kThreads, 0, st>>>(y.data<T>(), n, in);
    });
    OF_CUDA_CHECK_LAUNCH("SumKernel");
  }
}
ONEFLOW_CUDA_KERNEL(Sum, SumFn);

}  // namespace
}  // namespace oneflow::cuda
