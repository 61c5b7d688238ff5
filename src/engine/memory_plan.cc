// Greedy-by-size lifetime-aware offset assignment.
#include "engine/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "base/tensor.h"

namespace oneflow {

MemoryPlan PlanMemory(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  struct Placed { size_t offset, end; int first, last; };
  std::vector<Placed> placed;
  for (size_t r : order) {
    const BufferRequest& req = requests[r];
    size_t size = (req.bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    // Intervals already placed whose lifetimes overlap this one, by offset.
    std::vector<Placed> live;
    for (const Placed& p : placed)
      if (p.first <= req.last_step && req.first_step <= p.last) live.push_back(p);
    std::sort(live.begin(), live.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    size_t offset = 0;
    for (const Placed& p : live) {
      if (p.offset >= offset + size) break;  // the gap before p fits
      offset = std::max(offset, p.end);
    }
    plan.offsets[r] = offset;
    placed.push_back({offset, offset + size, req.first_step, req.last_step});
    plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
  }
  return plan;
}

}  // namespace oneflow
