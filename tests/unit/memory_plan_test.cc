// Memory planner: overlapping lifetimes never share bytes; disjoint ones reuse them.
#include "engine/memory_plan.h"

#include <gtest/gtest.h>

namespace oneflow {
namespace {

bool Overlap(size_t a, size_t as, size_t b, size_t bs) { return a < b + bs && b < a + as; }

TEST(MemoryPlan, DisjointLifetimesReuseBytes) {
  MemoryPlan p = PlanMemory({{1000, 0, 1}, {1000, 2, 3}});
  EXPECT_EQ(p.offsets[0], p.offsets[1]);
  EXPECT_EQ(p.arena_bytes, 1024u);
}

TEST(MemoryPlan, OverlappingLifetimesNeverAlias) {
  std::vector<BufferRequest> reqs;
  for (int i = 0; i < 40; ++i) reqs.push_back({static_cast<size_t>(64 * (1 + (i * 7919) % 13)), i % 9, i % 9 + i % 5});
  MemoryPlan p = PlanMemory(reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % 64, 0u);
    EXPECT_LE(p.offsets[i] + reqs[i].bytes, p.arena_bytes);
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      bool live_together = reqs[i].first_step <= reqs[j].last_step && reqs[j].first_step <= reqs[i].last_step;
      if (live_together) {
        EXPECT_FALSE(Overlap(p.offsets[i], reqs[i].bytes, p.offsets[j], reqs[j].bytes)) << i << "," << j;
      }
    }
  }
}

}  // namespace
}  // namespace oneflow
