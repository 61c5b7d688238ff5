// Copies along one axis, shared by the engine's kernels that cut tensors into pieces and join them
// again (Scan's slices and stacked outputs, SplitToSequence, ConcatFromSequence). Row-major: along
// `axis` a tensor is `outer` rows of `extent * inner` bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "base/tensor.h"

namespace oneflow {

// Elements `[begin, end)` of `x` along `axis`, in a tensor of their own (the axis kept, of extent
// end - begin).
Tensor SliceAlong(const Tensor& x, int64_t axis, int64_t begin, int64_t end);

// Writes `parts` one after another along `axis` of `out`: each part has out's shape except along
// the axis, and their extents there sum to out's (the caller checks both).
void ConcatAlong(const std::vector<Tensor>& parts, int64_t axis, Tensor& out);

}  // namespace oneflow
