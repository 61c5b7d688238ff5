// The caching allocator's bookkeeping against a fake backend (host memory with a byte budget), so it
// runs on machines without a GPU: size classes, per-stream reuse, the out-of-memory retry, stats.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "base/error.h"
#include "device/caching_allocator.h"

namespace oneflow {
namespace {

// Hands out malloc'd blocks until `budget` bytes are in use; counts every call.
class FakeBackend final : public MemoryBackend {
 public:
  explicit FakeBackend(size_t budget) : budget_(budget) {}
  ~FakeBackend() override { EXPECT_EQ(live_.size(), 0u) << "the allocator leaked backend blocks"; }
  void* Allocate(size_t bytes) override {
    ++allocs;
    if (in_use + bytes > budget_) return nullptr;
    void* p = std::malloc(bytes);
    live_.insert(p);
    sizes_[p] = bytes;
    in_use += bytes;
    return p;
  }
  void Free(void* p) override {
    ++frees;
    ASSERT_EQ(live_.count(p), 1u) << "freed a pointer the backend never gave out";
    in_use -= sizes_[p];
    live_.erase(p);
    std::free(p);
  }
  size_t allocs = 0, frees = 0, in_use = 0;

 private:
  size_t budget_;
  std::set<void*> live_;
  std::map<void*, size_t> sizes_;
};

constexpr size_t kMiB = size_t{1} << 20;

TEST(CachingAllocator, RoundsSmallTo512AndLargeTo2MiB) {
  EXPECT_EQ(CachingAllocator::RoundSize(1), 512u);
  EXPECT_EQ(CachingAllocator::RoundSize(512), 512u);
  EXPECT_EQ(CachingAllocator::RoundSize(513), 1024u);
  EXPECT_EQ(CachingAllocator::RoundSize(kMiB), kMiB);
  EXPECT_EQ(CachingAllocator::RoundSize(kMiB + 1), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::RoundSize(5 * kMiB), 6 * kMiB);
}

TEST(CachingAllocator, ReusesFreedBlockOnSameStreamOnly) {
  FakeBackend backend(1024 * kMiB);
  {
    CachingAllocator alloc(backend);
    void* a = alloc.Allocate(1000, /*stream=*/1);
    alloc.Free(a);
    void* b = alloc.Allocate(900, 1);  // same size class, same stream: the cached block
    EXPECT_EQ(a, b);
    EXPECT_EQ(backend.allocs, 1u);
    EXPECT_EQ(alloc.stats().cache_hits, 1u);
    alloc.Free(b);
    void* c = alloc.Allocate(1000, /*stream=*/2);  // another stream must not get stream 1's block
    EXPECT_NE(c, a);
    EXPECT_EQ(backend.allocs, 2u);
    alloc.Free(c);
    const AllocatorStats s = alloc.stats();
    EXPECT_EQ(s.allocated_bytes, 0u);
    EXPECT_EQ(s.cached_bytes, 2 * 1024u);
    EXPECT_EQ(s.reserved_bytes, 2 * 1024u);
    EXPECT_EQ(s.peak_allocated_bytes, 1024u);
  }
  EXPECT_EQ(backend.frees, 2u);  // the destructor returned both cached blocks
  EXPECT_EQ(backend.in_use, 0u);
}

TEST(CachingAllocator, DoesNotServeSmallRequestFromHugeBlock) {
  FakeBackend backend(1024 * kMiB);
  CachingAllocator alloc(backend);
  void* big = alloc.Allocate(64 * kMiB, 7);
  alloc.Free(big);
  void* small = alloc.Allocate(4 * kMiB, 7);  // 64 MiB > 2 x 4 MiB: a fresh block
  EXPECT_NE(small, big);
  void* fits = alloc.Allocate(40 * kMiB, 7);  // 64 MiB <= 2 x 40 MiB: the cached block
  EXPECT_EQ(fits, big);
  alloc.Free(small);
  alloc.Free(fits);
}

TEST(CachingAllocator, EmptiesCacheAndRetriesWhenBackendIsFull) {
  FakeBackend backend(10 * kMiB);
  CachingAllocator alloc(backend);
  void* a = alloc.Allocate(6 * kMiB, 1);
  alloc.Free(a);  // cached: the backend still holds 6 MiB
  void* b = alloc.Allocate(8 * kMiB, 2);  // fails once, the cache is emptied, then fits
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(backend.frees, 1u);
  EXPECT_EQ(alloc.stats().cached_bytes, 0u);
  EXPECT_EQ(alloc.stats().reserved_bytes, 8 * kMiB);
  alloc.Free(b);
}

TEST(CachingAllocator, OutOfMemoryIsAnErrorNotACrash) {
  FakeBackend backend(4 * kMiB);
  CachingAllocator alloc(backend);
  try {
    alloc.Allocate(16 * kMiB, 1);
    FAIL() << "expected kOutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(alloc.stats().allocated_bytes, 0u);
}

TEST(CachingAllocator, ForeignPointerAndZeroBytes) {
  FakeBackend backend(kMiB);
  CachingAllocator alloc(backend);
  EXPECT_EQ(alloc.Allocate(0, 1), nullptr);
  alloc.Free(nullptr);  // ignored
  int x = 0;
  try {
    alloc.Free(&x);
    FAIL() << "expected kInternal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

}  // namespace
}  // namespace oneflow
