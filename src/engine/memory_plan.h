// Static memory planning: place intermediate tensors in one arena, reusing bytes of tensors whose
// lifetimes do not overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace oneflow {

struct BufferRequest {
  size_t bytes = 0;
  int first_step = 0;  // step that writes it
  int last_step = 0;   // last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per request, 64-byte aligned
  size_t arena_bytes = 0;       // the planned peak
};

// Greedy by size (largest first), each placed at the lowest offset free for its whole lifetime:
// the strategy of TFLite's arena planner, near-optimal on inference graphs and deterministic.
MemoryPlan PlanMemory(const std::vector<BufferRequest>& requests);

}  // namespace oneflow
