// CUDA Transpose: any permutation up to rank 8, one thread per output element (writes coalesced),
// dispatched on element size so each dtype shares one instantiation.
#include <string>
#include <vector>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/infer_util.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/nn_cuda.h"

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

// Builds the map of x (shape x_shape) permuted by perm and launches the copy.
void Permute(DType dt, const void* x, const Shape& x_shape, const std::vector<int64_t>& perm, void* y,
             cudaStream_t s, const std::string& what) {
  const int64_t rank = static_cast<int64_t>(x_shape.size());
  OF_CHECK(rank <= kMaxRank, kUnsupported, what, ": rank ", rank, " > ", kMaxRank, " on CUDA");
  OF_REQUIRE(static_cast<int64_t>(perm.size()) == rank, what, ": perm has ", perm.size(), " entries for rank ", rank);
  int64_t in_strides[kMaxRank];
  int64_t stride = 1, n = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= x_shape[static_cast<size_t>(d)];
    n *= x_shape[static_cast<size_t>(d)];
  }
  PermuteMap m;
  m.rank = static_cast<int>(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t p = NormalizeAxis(perm[static_cast<size_t>(d)], rank, "perm");
    m.out_dims[d] = x_shape[static_cast<size_t>(p)];
    m.in_strides[d] = in_strides[p];
  }
  if (n == 0) return;
  const bool known = DispatchBits(DTypeSize(dt), [&](auto tag) {
    using U = decltype(tag);
    TransposeKernel<U><<<GridFor(n), kThreads, 0, s>>>(static_cast<const U*>(x), static_cast<U*>(y), n, m);
  });
  if (!known) Fail(ErrorCode::kUnsupported, what, ": dtype ", DTypeName(dt), " on CUDA");
  OF_CUDA_CHECK_LAUNCH("TransposeKernel");
}

void TransposeFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> perm;
  if (ctx.attrs().has("perm")) perm = ctx.attrs().GetInts("perm");
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);  // ONNX default: reverse the axes
  Permute(x.dtype(), x.raw(), x.shape(), perm, ctx.output(0).raw(), CurrentStream(), ctx.node_desc());
}
ONEFLOW_CUDA_KERNEL(Transpose, TransposeFn);

}  // namespace

void LaunchTranspose(DType dt, const void* x, const Shape& x_shape, const std::vector<int64_t>& perm, void* y,
                     cudaStream_t stream) {
  Permute(dt, x, x_shape, perm, y, stream, op::kTranspose);
}

}  // namespace oneflow::cuda

