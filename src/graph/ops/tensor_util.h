// Shape arithmetic shared by the tensor-op schemas (static/runtime inference) and their CPU
// kernels, so both sides agree on how Slice, Split and Pad arguments are normalized.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/tensor.h"

namespace oneflow {

class OpRegistry;
class InferContext;

// One axis of a Slice after clamping: output element i reads input index start + i * step.
struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

// Normalizes Slice's starts/ends/axes/steps against `dims` (all known). `axes` and `steps` may be
// empty (defaults). Throws kInvalidArgument (message prefixed by `who`) on bad arguments.
std::vector<SliceAxis> ComputeSlice(const Shape& dims, const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                                    const std::vector<int64_t>& steps, const std::string& who);

// Split sizes along an axis of size `dim` into `num_outputs` parts when no explicit split is
// given: ceil-sized chunks, the last one smaller (opset 18), never negative.
std::vector<int64_t> EvenSplitSizes(int64_t dim, int64_t num_outputs);

// Pad's pads (+ optional axes) expanded to per-dim (begin, end) pairs of length 2*rank.
std::vector<int64_t> ExpandPads(int64_t rank, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes,
                                const std::string& who);

// Sub-registrations of the tensor op family (called from RegisterTensorOps).
void RegisterIndexOps(OpRegistry& r);  // ops/index_ops.cc: Gather/Scatter family, OneHot, NonZero, ...

}  // namespace oneflow

namespace oneflow {

// Unique over the slices of `x` along `axis` (or over all elements when axis < 0, i.e. absent).
struct UniqueResult {
  std::vector<int64_t> first;    // input slice index of each unique slice, in output order
  std::vector<int64_t> inverse;  // for each input slice, its position in the output
  std::vector<int64_t> counts;   // occurrences of each unique slice
};
UniqueResult ComputeUnique(const Tensor& x, int64_t axis, bool sorted);

// Number of non-zero elements (NonZero) and of true entries among the first `limit` (Compress).
int64_t CountNonZero(const Tensor& x);

}  // namespace oneflow
