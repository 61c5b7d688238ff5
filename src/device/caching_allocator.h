// A stream-ordered caching allocator for device memory, written against an abstract backend so its
// bookkeeping (size classes, per-stream reuse, out-of-memory retry, statistics) is testable on a
// machine without a GPU. The CUDA backend (cudaMalloc/cudaFree) lives in device/cuda/cuda_device.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace oneflow {

// Where the allocator's memory comes from. Allocate returns nullptr when the memory is exhausted
// (the allocator then empties its cache and retries once); other failures throw.
class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
};

struct AllocatorStats {
  size_t allocated_bytes = 0;       // handed out and not yet freed (block sizes, rounded)
  size_t cached_bytes = 0;          // freed by callers, kept for reuse
  size_t reserved_bytes = 0;        // allocated + cached: everything held from the backend
  size_t peak_allocated_bytes = 0;  // the high-water mark of allocated_bytes
  size_t backend_allocs = 0;        // calls to MemoryBackend::Allocate that succeeded
  size_t cache_hits = 0;            // allocations served from the cache
};

// Blocks are tagged with the stream they were allocated for. A freed block goes back to that
// stream's pool and is reused only by later allocations on the same stream: work queued on one
// stream runs in order, so the next user cannot start before the previous user's kernels finished.
// Using a block on another stream requires the caller to order the streams (an event) before Free.
// Thread-safe.
class CachingAllocator {
 public:
  using StreamId = uintptr_t;
  // Requests up to this size are rounded to kSmallRound; larger ones to kLargeRound, so cached
  // blocks fit a range of later requests.
  static constexpr size_t kSmallLimit = size_t{1} << 20;
  static constexpr size_t kSmallRound = 512;
  static constexpr size_t kLargeRound = size_t{2} << 20;

  explicit CachingAllocator(MemoryBackend& backend) : backend_(backend) {}
  ~CachingAllocator();  // returns every cached block; blocks still allocated are leaked (reported by stats)
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  static size_t RoundSize(size_t bytes);

  // Never returns nullptr for bytes > 0; throws Error(kOutOfMemory) naming the request and the
  // allocator's state when the backend is exhausted even after the cache was emptied.
  // Zero bytes returns nullptr.
  void* Allocate(size_t bytes, StreamId stream);
  // `ptr` must come from Allocate (nullptr is ignored); a foreign pointer throws kInternal.
  void Free(void* ptr);
  // Returns every cached block to the backend.
  void ReleaseCached();
  AllocatorStats stats() const;

 private:
  void ReleaseCachedLocked();

  MemoryBackend& backend_;
  mutable std::mutex mu_;
  // Free blocks by (stream, size) for best-fit lookup.
  std::multimap<std::pair<StreamId, size_t>, void*> free_;
  // Live blocks: pointer -> (stream, size).
  std::unordered_map<void*, std::pair<StreamId, size_t>> live_;
  AllocatorStats stats_;
};

}  // namespace oneflow
