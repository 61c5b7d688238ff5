// Dtype-agnostic data movement shared by the tensor-manipulation kernels: strided copies
// (Transpose, Slice, Expand, Tile, DepthToSpace) and index helpers for Gather/Scatter-style ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/tensor.h"
#include "base/thread_pool.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
class KernelRegistry;
class KernelContext;

ONEFLOW_CPU_ISA_BEGIN

// Row-major element strides of `shape`.
std::vector<int64_t> ContiguousStrides(const Shape& shape);

// dst (contiguous, row-major over `shape`) = src[sum_k i_k * src_strides[k]]. Strides are in
// elements and may be 0 (broadcast) or negative (reversed slices). Adjacent dims are collapsed
// first; contiguous inner runs are copied with memcpy and an inner-axes swap uses a blocked 2-D
// transpose. `pool` may be null (single-threaded).
void StridedCopy(const void* src, void* dst, const Shape& shape, const std::vector<int64_t>& src_strides,
                 size_t elem_size, ThreadPool* pool);

// dst = transpose(src, perm) where src has shape `in_shape`: out dim k is in dim perm[k].
void TransposeCopy(const void* src, void* dst, const Shape& in_shape, const std::vector<int64_t>& perm,
                   size_t elem_size, ThreadPool* pool);

// Copies one element of `elem_size` bytes (1, 2, 4, 8 or other).
inline void CopyElement(void* dst, const void* src, size_t elem_size);

// Index inputs (int32 or int64) as int64, negative values wrapped by `dim`; any value outside
// [-dim, dim) fails with kRuntime naming `who`.
std::vector<int64_t> ReadIndices(const Tensor& indices, int64_t dim, const std::string& who);
// Index inputs without wrapping (for ops that check per element against varying dims).
std::vector<int64_t> ReadRawIndices(const Tensor& indices, const std::string& who);

ONEFLOW_CPU_ISA_END
}  // namespace oneflow

#include <cstring>

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
inline void CopyElement(void* dst, const void* src, size_t elem_size) {
  switch (elem_size) {
    case 1: *static_cast<uint8_t*>(dst) = *static_cast<const uint8_t*>(src); break;
    case 2: std::memcpy(dst, src, 2); break;
    case 4: std::memcpy(dst, src, 4); break;
    case 8: std::memcpy(dst, src, 8); break;
    default: std::memcpy(dst, src, elem_size);
  }
}
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
