// The caching allocator's bookkeeping (see caching_allocator.h).
#include "device/caching_allocator.h"

#include <algorithm>

#include "base/error.h"

namespace oneflow {

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  ReleaseCachedLocked();
}

size_t CachingAllocator::RoundSize(size_t bytes) {
  const size_t round = bytes <= kSmallLimit ? kSmallRound : kLargeRound;
  OF_CHECK(bytes <= SIZE_MAX - round, kOutOfMemory, "device allocation of ", bytes, " bytes is too large");
  return (bytes + round - 1) / round * round;
}

void* CachingAllocator::Allocate(size_t bytes, StreamId stream) {
  if (bytes == 0) return nullptr;
  const size_t size = RoundSize(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  // Best fit on this stream, but never a block more than twice the request: a small tensor must
  // not pin a huge cached block that a later large request could use.
  auto it = free_.lower_bound({stream, size});
  if (it != free_.end() && it->first.first == stream && it->first.second <= 2 * size) {
    void* p = it->second;
    const size_t got = it->first.second;
    free_.erase(it);
    live_.emplace(p, std::make_pair(stream, got));
    stats_.cached_bytes -= got;
    stats_.allocated_bytes += got;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    ++stats_.cache_hits;
    return p;
  }
  void* p = backend_.Allocate(size);
  if (p == nullptr) {
    ReleaseCachedLocked();  // cached blocks of other sizes and streams may make room
    p = backend_.Allocate(size);
  }
  OF_CHECK(p != nullptr, kOutOfMemory, "device out of memory allocating ", bytes, " bytes (", size,
           " rounded); the allocator holds ", stats_.allocated_bytes, " bytes in use and had ",
           "its cache emptied");
  live_.emplace(p, std::make_pair(stream, size));
  ++stats_.backend_allocs;
  stats_.allocated_bytes += size;
  stats_.reserved_bytes += size;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return p;
}

void CachingAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  OF_CHECK(it != live_.end(), kInternal, "CachingAllocator::Free: pointer ", ptr, " was not allocated here");
  const auto [stream, size] = it->second;
  live_.erase(it);
  free_.emplace(std::make_pair(stream, size), ptr);
  stats_.allocated_bytes -= size;
  stats_.cached_bytes += size;
}

void CachingAllocator::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mu_);
  ReleaseCachedLocked();
}

void CachingAllocator::ReleaseCachedLocked() {
  for (auto& [key, p] : free_) {
    backend_.Free(p);
    stats_.reserved_bytes -= key.second;
  }
  free_.clear();
  stats_.cached_bytes = 0;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace oneflow
