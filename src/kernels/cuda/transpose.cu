// CUDA Transpose: any permutation up to rank 8, one thread per output element (writes coalesced),
// dispatched on element size so each dtype shares one instantiation.
#include <vector>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/infer_util.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow::cuda {
namespace {

struct PermuteMap {
  int rank = 0;
  int64_t out_dims[kMaxRank];
  int64_t in_strides[kMaxRank];  // input stride of output dim d
};

template <typename U>
__global__ void TransposeKernel(const U* __restrict__ x, U* __restrict__ y, int64_t n, PermuteMap m) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t off = 0, rest = i;
    for (int d = m.rank - 1; d >= 0; --d) {
      off += (rest % m.out_dims[d]) * m.in_strides[d];
      rest /= m.out_dims[d];
    }
    y[i] = x[off];
  }
}

void TransposeFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t rank = x.rank();
  OF_CHECK(rank <= kMaxRank, kUnsupported, ctx.node_desc(), ": rank ", rank, " > ", kMaxRank, " on CUDA");
  std::vector<int64_t> perm;
  if (ctx.attrs().has("perm")) perm = ctx.attrs().GetInts("perm");
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);  // ONNX default: reverse the axes
  OF_REQUIRE(static_cast<int64_t>(perm.size()) == rank, ctx.node_desc(), ": perm has ", perm.size(),
             " entries for rank ", rank);
  int64_t in_strides[kMaxRank];
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= x.dim(d);
  }
  PermuteMap m;
  m.rank = static_cast<int>(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t p = NormalizeAxis(perm[static_cast<size_t>(d)], rank, "perm");
    m.out_dims[d] = x.dim(p);
    m.in_strides[d] = in_strides[p];
  }
  const int64_t n = x.numel();
  if (n == 0) return;
  cudaStream_t s = CurrentStream();
  switch (DTypeSize(x.dtype())) {
    case 1: TransposeKernel<uint8_t><<<GridFor(n), kThreads, 0, s>>>(x.data<uint8_t>(), y.data<uint8_t>(), n, m); break;
    case 2: TransposeKernel<uint16_t><<<GridFor(n), kThreads, 0, s>>>(x.data<uint16_t>(), y.data<uint16_t>(), n, m); break;
    case 4: TransposeKernel<uint32_t><<<GridFor(n), kThreads, 0, s>>>(x.data<uint32_t>(), y.data<uint32_t>(), n, m); break;
    case 8: TransposeKernel<uint64_t><<<GridFor(n), kThreads, 0, s>>>(x.data<uint64_t>(), y.data<uint64_t>(), n, m); break;
    default: Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": dtype ", DTypeName(x.dtype()), " on CUDA");
  }
  OF_CUDA_CHECK_LAUNCH("TransposeKernel");
}

}  // namespace
}  // namespace oneflow::cuda

namespace oneflow {

void RegisterCudaTransposeKernels(KernelRegistry& r) { cuda::RegisterCudaFn(r, "Transpose", cuda::TransposeFn); }

}  // namespace oneflow
