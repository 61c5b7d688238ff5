// The host-side logic of the NCCL backend and the CUDA Boxing kernel, kept free of CUDA so it is
// built and tested everywhere: padding uneven segments for NCCL's equal-count collectives, cutting
// an n-D block copy into strided 2-D copies (cudaMemcpy2DAsync), and naming NCCL's result codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/tensor.h"

namespace oneflow::nccl {

// One contiguous copy between two buffers, offsets in bytes.
struct SegmentCopy {
  size_t src = 0, dst = 0, bytes = 0;
};

// NCCL's AllGather / ReduceScatter need the same count on every member; uneven splits differ by at
// most one row, so each segment is padded to the largest (`PaddedUnit`) and the collective runs on
// n x unit. These are the copies between the compact layout (segments back to back, in group
// order) and the padded one (segment i at i x unit). Empty segments need no copy.
size_t PaddedUnit(const std::vector<size_t>& sizes);
bool AllEqual(const std::vector<size_t>& sizes);
std::vector<SegmentCopy> CompactToPadded(const std::vector<size_t>& sizes);
std::vector<SegmentCopy> PaddedToCompact(const std::vector<size_t>& sizes);
// Byte offsets of the segments in the compact layout (size n + 1: the last is the total).
std::vector<size_t> CompactOffsets(const std::vector<size_t>& sizes);

// The uneven all-gather / reduce-scatter exactly as the NCCL backend issues them, over the
// primitives it uses, so the sequence and its offsets are tested on the host with emulated ones.
struct PaddedCollectiveOps {
  std::function<void(void* dst, const void* src, size_t bytes)> copy;  // ordered device copies
  std::function<void(void* dst, size_t bytes)> zero;
  // NCCL's equal-count collectives in their in-place form on `buf` (n x unit bytes): all-gather
  // from this member's slot (buf + me*unit) into all slots; reduce-scatter of all slots into it.
  std::function<void(char* buf, size_t unit)> all_gather;
  std::function<void(char* buf, size_t unit)> reduce_scatter;
};
// `sizes` in bytes per member (the reduce-scatter's are multiples of its element size); `scratch`
// holds n x PaddedUnit(sizes) bytes; `me` is this member's index.
void PaddedAllGather(const void* send, void* recv, const std::vector<size_t>& sizes, size_t me, char* scratch,
                     const PaddedCollectiveOps& ops);
void PaddedReduceScatter(const void* send, void* recv, const std::vector<size_t>& sizes, size_t me, char* scratch,
                         const PaddedCollectiveOps& ops);

// A strided 2-D copy: `height` rows of `width` bytes, row r from src + r*src_pitch to
// dst + r*dst_pitch (the arguments of cudaMemcpy2DAsync, offsets relative to the two buffers).
struct Copy2D {
  size_t src = 0, dst = 0, width = 0, height = 0, src_pitch = 0, dst_pitch = 0;
};

// The block of extent `block` at `src_start` in a row-major tensor of `src_shape` copied to
// `dst_start` in one of `dst_shape`, as few 2-D copies as the layout allows: trailing dims that
// are whole in all three shapes merge into the row width, the dim before the last partial one
// becomes the row count, and only the dims above that are looped over (one copy for a boxing
// step, which cuts one axis). Throws kInvalidArgument when the block does not fit.
std::vector<Copy2D> PlanBlockCopy(const Shape& src_shape, const std::vector<int64_t>& src_start, const Shape& dst_shape,
                                  const std::vector<int64_t>& dst_start, const Shape& block, size_t elem_size);

// ncclResult_t by value (the values are NCCL's stable ABI, checked against nccl.h where NCCL is
// built): its name and the ErrorCode it maps to. Invalid argument/usage are our callers' mistakes
// (kInvalidArgument); system, CUDA, internal and remote errors are run-time failures (kRuntime).
const char* NcclResultName(int result);
ErrorCode NcclErrorCode(int result);
// "rank 0: all-reduce on group [0,1] failed: ncclSystemError (2): <NCCL's text>; <last error>".
std::string NcclErrorMessage(int rank, const std::string& what, const std::vector<int>& group, int result,
                             const std::string& nccl_text, const std::string& last_error);
std::string GroupText(const std::vector<int>& group);

}  // namespace oneflow::nccl
