// The caching allocator's bookkeeping (see caching_allocator.h).
#include "device/caching_allocator.h"

#include <algorithm>

#include "base/error.h"

namespace oneflow {

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  captures_ = 0;  // nothing can be capturing any more once the allocator goes away
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
  if (!pending_.empty()) ProcessPendingLocked(/*wait=*/false);
  // Best fit on this stream, but never a block more than twice the request: a small tensor must
  // not pin a huge cached block that a later large request could use.
  auto it = free_.lower_bound({stream, size});
  if (it != free_.end() && it->first.first == stream && it->first.second <= 2 * size) {
    void* p = it->second;
    const size_t got = it->first.second;
    free_.erase(it);
    live_.emplace(p, LiveBlock{stream, got, false, {}});
    stats_.cached_bytes -= got;
    stats_.allocated_bytes += got;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    ++stats_.cache_hits;
    return p;
  }
  void* p = backend_.Allocate(size);
  if (p == nullptr) {
    // Emptying the cache means cudaFree, which synchronizes the device: during a capture (on any
    // thread) that is illegal and would invalidate the capture, and a capture's blocks must stay.
    // So fail now, saying why; the capturing executor falls back to eager runs, and an eager
    // caller can retry once the capture ended.
    OF_CHECK(captures_ == 0, kOutOfMemory, "device out of memory allocating ", bytes, " bytes (", size,
             " rounded) while a CUDA graph capture is in progress on this device: the allocator holds ",
             stats_.allocated_bytes, " bytes in use and ", stats_.cached_bytes + stats_.pending_bytes,
             " bytes cached, which it cannot return to the device until the capture ends (cudaFree "
             "would invalidate the capture)");
    ReleaseCachedLocked();  // cached blocks of other sizes and streams may make room
    p = backend_.Allocate(size);
  }
  OF_CHECK(p != nullptr, kOutOfMemory, "device out of memory allocating ", bytes, " bytes (", size,
           " rounded); the allocator holds ", stats_.allocated_bytes, " bytes in use and had ",
           "its cache emptied");
  live_.emplace(p, LiveBlock{stream, size, false, {}});
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
  LiveBlock block = std::move(it->second);
  live_.erase(it);
  stats_.allocated_bytes -= block.size;
  if (block.stream_destroyed) {
    // No stream will allocate from this block's pool again. The backend's Free waits for any work
    // still using it (cudaFree synchronizes the device), including RecordStream's streams.
    ReleaseBlockLocked(ptr, block.size);
    return;
  }
  if (!block.used_on.empty()) {
    PendingBlock pending{ptr, block.stream, block.size, false, {}};
    bool recorded = true;
    for (uintptr_t s : block.used_on) {
      MemoryBackend::Event e = backend_.RecordEvent(s);
      if (e == nullptr) {
        recorded = false;
        break;
      }
      pending.events.push_back(e);
    }
    if (!recorded) {
      // Without an event nothing says when the other stream is done with the block: not reusable.
      for (MemoryBackend::Event e : pending.events) backend_.DestroyEvent(e);
      ReleaseBlockLocked(ptr, block.size);
      return;
    }
    pending_.push_back(std::move(pending));
    stats_.pending_bytes += block.size;
    return;
  }
  free_.emplace(std::make_pair(block.stream, block.size), ptr);
  stats_.cached_bytes += block.size;
}

bool CachingAllocator::RecordStream(void* ptr, uintptr_t stream) {
  if (ptr == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  std::vector<uintptr_t>& used_on = it->second.used_on;
  if (std::find(used_on.begin(), used_on.end(), stream) == used_on.end()) used_on.push_back(stream);
  return true;
}

void CachingAllocator::StreamDestroyed(StreamId stream) {
  std::lock_guard<std::mutex> lock(mu_);
  // Its cached blocks: released rather than kept, since no stream will ask for this id again. The
  // stream's work is complete (the caller's contract), and the backend's Free waits anyway.
  auto first = free_.lower_bound({stream, 0});
  auto last = free_.upper_bound({stream, SIZE_MAX});
  for (auto it = first; it != last; ++it) {
    stats_.cached_bytes -= it->first.second;
    ReleaseBlockLocked(it->second, it->first.second);
  }
  free_.erase(first, last);
  // Blocks still in use (say, device outputs held by a caller) or waiting for events are released
  // when freed / when their events completed, instead of entering a pool no one will use.
  for (auto& [p, block] : live_)
    if (block.stream == stream) block.stream_destroyed = true;
  for (PendingBlock& block : pending_)
    if (block.stream == stream) block.stream_destroyed = true;
}

void CachingAllocator::BeginCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  ++captures_;
}

void CachingAllocator::EndCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (captures_ > 0) --captures_;
  if (captures_ == 0) ReleaseDeferredLocked();
}

bool CachingAllocator::capture_in_progress() const {
  std::lock_guard<std::mutex> lock(mu_);
  return captures_ > 0;
}

size_t CachingAllocator::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mu_);
  return ReleaseCachedLocked();
}

void CachingAllocator::ProcessPendingLocked(bool wait) {
  size_t kept = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    PendingBlock& block = pending_[i];
    bool done = true;
    for (MemoryBackend::Event e : block.events) {
      if (wait) backend_.SynchronizeEvent(e);
      else if (!backend_.EventDone(e)) {
        done = false;
        break;
      }
    }
    if (!done) {
      if (kept != i) pending_[kept] = std::move(block);
      ++kept;
      continue;
    }
    for (MemoryBackend::Event e : block.events) backend_.DestroyEvent(e);
    stats_.pending_bytes -= block.size;
    if (block.stream_destroyed) {
      ReleaseBlockLocked(block.ptr, block.size);
    } else {
      // Every stream that used the block is past that use; its own stream orders the next user.
      free_.emplace(std::make_pair(block.stream, block.size), block.ptr);
      stats_.cached_bytes += block.size;
    }
  }
  pending_.resize(kept);
}

void CachingAllocator::ReleaseBlockLocked(void* ptr, size_t size) {
  if (captures_ > 0) {
    deferred_release_.emplace_back(ptr, size);
    stats_.deferred_release_bytes += size;
    return;
  }
  backend_.Free(ptr);
  ++stats_.backend_frees;
  stats_.reserved_bytes -= size;
}

void CachingAllocator::ReleaseDeferredLocked() {
  for (auto& [p, size] : deferred_release_) {
    backend_.Free(p);
    ++stats_.backend_frees;
    stats_.reserved_bytes -= size;
  }
  deferred_release_.clear();
  stats_.deferred_release_bytes = 0;
}

size_t CachingAllocator::ReleaseCachedLocked() {
  if (captures_ > 0) return 0;  // see BeginCapture: no cudaFree while a capture is in progress
  const size_t before = stats_.reserved_bytes;
  // Pending blocks first: waiting for their events turns them into cached blocks (or releases
  // those whose stream died). Waiting is fine here, cudaFree below synchronizes the device anyway.
  ProcessPendingLocked(/*wait=*/true);
  ReleaseDeferredLocked();
  for (auto& [key, p] : free_) {
    backend_.Free(p);
    ++stats_.backend_frees;
    stats_.reserved_bytes -= key.second;
  }
  free_.clear();
  stats_.cached_bytes = 0;
  return before - stats_.reserved_bytes;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::atomic<CachingAllocator::StreamId> StreamRegistry::next_id_{CachingAllocator::kDefaultStreamId + 1};

CachingAllocator::StreamId StreamRegistry::Register(uintptr_t handle) {
  const CachingAllocator::StreamId id = next_id_.fetch_add(1, std::memory_order_relaxed);
  // 2^63 streams would take centuries at a million streams a second; this only guards the invariant.
  OF_CHECK(id < CachingAllocator::kExternalStreamIdBit, kInternal, "stream ids exhausted");
  std::lock_guard<std::mutex> lock(mu_);
  ids_[handle] = id;
  return id;
}

void StreamRegistry::Unregister(uintptr_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  ids_.erase(handle);
}

std::optional<CachingAllocator::StreamId> StreamRegistry::Find(uintptr_t handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(handle);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace oneflow
