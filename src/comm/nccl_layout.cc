// Host-side layout logic of the NCCL backend (see nccl_layout.h): segment padding, block copies
// as 2-D copies, NCCL result names.
#include "comm/nccl_layout.h"

#include <algorithm>

namespace oneflow::nccl {

size_t PaddedUnit(const std::vector<size_t>& sizes) {
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

bool AllEqual(const std::vector<size_t>& sizes) {
  return std::all_of(sizes.begin(), sizes.end(), [&](size_t s) { return s == sizes.front(); });
}

std::vector<size_t> CompactOffsets(const std::vector<size_t>& sizes) {
  std::vector<size_t> off(sizes.size() + 1, 0);
  for (size_t i = 0; i < sizes.size(); ++i) off[i + 1] = off[i] + sizes[i];
  return off;
}

std::vector<SegmentCopy> CompactToPadded(const std::vector<size_t>& sizes) {
  const size_t unit = PaddedUnit(sizes);
  const std::vector<size_t> off = CompactOffsets(sizes);
  std::vector<SegmentCopy> copies;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i]) copies.push_back({off[i], i * unit, sizes[i]});
  return copies;
}

std::vector<SegmentCopy> PaddedToCompact(const std::vector<size_t>& sizes) {
  std::vector<SegmentCopy> copies = CompactToPadded(sizes);
  for (SegmentCopy& c : copies) std::swap(c.src, c.dst);
  return copies;
}

void PaddedAllGather(const void* send, void* recv, const std::vector<size_t>& sizes, size_t me, char* scratch,
                     const PaddedCollectiveOps& ops) {
  const size_t unit = PaddedUnit(sizes);
  // In place: this member's segment goes to its slot first, then every slot is filled.
  if (sizes[me]) ops.copy(scratch + me * unit, send, sizes[me]);
  ops.all_gather(scratch, unit);
  for (const SegmentCopy& c : PaddedToCompact(sizes)) ops.copy(static_cast<char*>(recv) + c.dst, scratch + c.src, c.bytes);
}

void PaddedReduceScatter(const void* send, void* recv, const std::vector<size_t>& sizes, size_t me, char* scratch,
                         const PaddedCollectiveOps& ops) {
  const size_t unit = PaddedUnit(sizes);
  // The pad is zeroed so it sums to zeros, never to garbage (NaN, overflow traps in sanitizers).
  ops.zero(scratch, unit * sizes.size());
  for (const SegmentCopy& c : CompactToPadded(sizes))
    ops.copy(scratch + c.dst, static_cast<const char*>(send) + c.src, c.bytes);
  ops.reduce_scatter(scratch, unit);
  if (sizes[me]) ops.copy(recv, scratch + me * unit, sizes[me]);
}

std::vector<Copy2D> PlanBlockCopy(const Shape& src_shape, const std::vector<int64_t>& src_start, const Shape& dst_shape,
                                  const std::vector<int64_t>& dst_start, const Shape& block, size_t elem_size) {
  const size_t rank = block.size();
  OF_REQUIRE(src_shape.size() == rank && dst_shape.size() == rank && src_start.size() == rank &&
                 dst_start.size() == rank,
             "block copy: ranks differ (block ", ShapeToString(block), ", source ", ShapeToString(src_shape),
             ", destination ", ShapeToString(dst_shape), ")");
  for (size_t d = 0; d < rank; ++d)
    OF_REQUIRE(block[d] >= 0 && src_start[d] >= 0 && dst_start[d] >= 0 && src_start[d] + block[d] <= src_shape[d] &&
                   dst_start[d] + block[d] <= dst_shape[d],
               "block copy: block ", ShapeToString(block), " does not fit at dim ", d, " (source ",
               ShapeToString(src_shape), ", destination ", ShapeToString(dst_shape), ")");
  if (NumElements(block) == 0) return {};
  // Byte strides of both tensors.
  std::vector<size_t> ss(rank + 1, elem_size), ds(rank + 1, elem_size);
  for (size_t d = rank; d-- > 0;) {
    ss[d] = ss[d + 1] * static_cast<size_t>(src_shape[d]);
    ds[d] = ds[d + 1] * static_cast<size_t>(dst_shape[d]);
  }
  // Row: dims [k, rank) where every dim after k is whole in all three shapes (contiguous in both).
  size_t k = rank;
  while (k > 0 && (k == rank || (block[k] == src_shape[k] && block[k] == dst_shape[k]))) --k;
  size_t width = elem_size;
  for (size_t d = k; d < rank; ++d) width *= static_cast<size_t>(block[d]);
  // Rows: dim k-1 (when there is one) strided by the two tensors' strides of that dim.
  const bool has_rows = k > 0;
  const size_t row_dim = has_rows ? k - 1 : 0;
  const size_t height = has_rows ? static_cast<size_t>(block[row_dim]) : 1;
  const size_t src_pitch = has_rows ? ss[row_dim + 1] : width;
  const size_t dst_pitch = has_rows ? ds[row_dim + 1] : width;
  // Outer dims [0, row_dim) are looped over, odometer style.
  const size_t outer = has_rows ? row_dim : 0;
  std::vector<int64_t> idx(outer, 0);
  std::vector<Copy2D> copies;
  for (;;) {
    size_t so = 0, dof = 0;
    for (size_t d = 0; d < rank; ++d) {
      int64_t i = d < outer ? idx[d] : 0;
      so += static_cast<size_t>(src_start[d] + i) * ss[d + 1];
      dof += static_cast<size_t>(dst_start[d] + i) * ds[d + 1];
    }
    copies.push_back({so, dof, width, height, src_pitch, dst_pitch});
    size_t d = outer;
    while (d > 0 && ++idx[d - 1] == block[d - 1]) idx[--d] = 0;
    if (d == 0) break;
  }
  return copies;
}

const char* NcclResultName(int result) {
  static const char* const kNames[] = {"ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError",
                                       "ncclInternalError",   "ncclInvalidArgument",    "ncclInvalidUsage",
                                       "ncclRemoteError",     "ncclInProgress"};
  return result >= 0 && result < 8 ? kNames[result] : "unknown ncclResult_t";
}

ErrorCode NcclErrorCode(int result) {
  switch (result) {
    case 0: return ErrorCode::kOk;
    case 4:  // ncclInvalidArgument
    case 5:  // ncclInvalidUsage
      return ErrorCode::kInvalidArgument;
    default: return ErrorCode::kRuntime;
  }
}

std::string GroupText(const std::vector<int>& group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i) s += (i ? "," : "") + std::to_string(group[i]);
  return s + "]";
}

std::string NcclErrorMessage(int rank, const std::string& what, const std::vector<int>& group, int result,
                             const std::string& nccl_text, const std::string& last_error) {
  std::string m = StrCat("rank ", rank, ": ", what, " on group ", GroupText(group), " failed: ", NcclResultName(result),
                         " (", result, ")");
  if (!nccl_text.empty()) m += ": " + nccl_text;
  if (!last_error.empty()) m += "; " + last_error;
  return m;
}

}  // namespace oneflow::nccl
