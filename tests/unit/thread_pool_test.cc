// ThreadPool: every index is visited exactly once, across many regions and concurrent callers.
#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace oneflow {
namespace {

TEST(ThreadPool, CoversEachIndexOnce) {
  ThreadPool pool(3);
  for (int64_t n : {1, 7, 1000, 100000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    pool.ParallelFor(n, 1000.0, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
}

TEST(ThreadPool, ManyRegionsFromConcurrentCallers) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  auto work = [&] {
    for (int r = 0; r < 300; ++r)
      pool.ParallelFor(64, 100000.0, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2 * 300 * 64);
}

}  // namespace
}  // namespace oneflow
