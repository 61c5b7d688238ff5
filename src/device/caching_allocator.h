// A stream-ordered caching allocator for device memory, written against an abstract backend so its
// bookkeeping (size classes, per-stream reuse, stream lifetimes, out-of-memory retry, graph
// captures, blocks used on other streams, statistics) is testable on a machine without a GPU. The
// CUDA backend (cudaMalloc/cudaFree, cudaEvent*) lives in device/cuda/cuda_device.cc.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace oneflow {

// Where the allocator's memory comes from. Allocate returns nullptr when the memory is exhausted
// (the allocator then empties its cache and retries once); other failures throw.
//
// Free must not throw (it runs from destructors) and must be safe while work queued before the call
// may still use the block: the allocator returns blocks whose last users it cannot track (their
// stream was destroyed, an event could not be recorded) straight to the backend. cudaFree
// synchronizes the device before it frees, which is what makes that safe for CUDA.
//
// Events serve CachingAllocator::RecordStream. A stream is the backend's raw handle (a
// cudaStream_t as an integer). None of the event calls may throw; RecordEvent returns nullptr when
// it cannot record (the block is then returned to the backend instead of being reused), EventDone
// reports an event whose query fails as done (a failed device runs nothing any more).
class MemoryBackend {
 public:
  using Event = void*;
  virtual ~MemoryBackend() = default;
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  // An event completing once the work queued on `stream` so far has completed.
  virtual Event RecordEvent(uintptr_t stream) = 0;
  virtual bool EventDone(Event event) = 0;
  virtual void SynchronizeEvent(Event event) = 0;
  virtual void DestroyEvent(Event event) = 0;
};

struct AllocatorStats {
  size_t allocated_bytes = 0;         // handed out and not yet freed (block sizes, rounded)
  size_t cached_bytes = 0;            // freed by callers, kept for reuse on their stream
  size_t pending_bytes = 0;           // freed, but waiting for events on streams that used them
  size_t deferred_release_bytes = 0;  // to go back to the backend once no graph capture runs
  size_t reserved_bytes = 0;          // all of the above: everything held from the backend
  size_t peak_allocated_bytes = 0;    // the high-water mark of allocated_bytes
  size_t backend_allocs = 0;          // calls to MemoryBackend::Allocate that succeeded
  size_t backend_frees = 0;           // calls to MemoryBackend::Free
  size_t cache_hits = 0;              // allocations served from the cache
};

// Blocks are tagged with the stream they were allocated for. A freed block goes back to that
// stream's pool and is reused only by later allocations on the same stream: work queued on one
// stream runs in order, so the next user cannot start before the previous user's kernels finished.
// Using a block on another stream requires the caller to order the streams (an event) before Free,
// or to declare the other stream with RecordStream.
//
// Streams are named by StreamId, which must never be reused for another stream: the pool of a
// destroyed stream is not safe for a new one, whose work is not ordered after the old one's (a raw
// cudaStream_t is reused by the driver, hence StreamRegistry below). Thread-safe.
class CachingAllocator {
 public:
  using StreamId = uint64_t;
  // The legacy default stream (0): it lives as long as the device, so it keeps one fixed id.
  static constexpr StreamId kDefaultStreamId = 0;
  // Ids with this bit set are the driver's own stream ids (cudaStreamGetId, unique for the life of
  // the program) for streams this layer did not create; StreamRegistry's ids stay below it.
  static constexpr StreamId kExternalStreamIdBit = StreamId{1} << 63;
  // Requests up to this size are rounded to kSmallRound; larger ones to kLargeRound, so cached
  // blocks fit a range of later requests.
  static constexpr size_t kSmallLimit = size_t{1} << 20;
  static constexpr size_t kSmallRound = 512;
  static constexpr size_t kLargeRound = size_t{2} << 20;

  explicit CachingAllocator(MemoryBackend& backend) : backend_(backend) {}
  // Returns every cached, pending and deferred block (waiting for pending blocks' events); blocks
  // still allocated are leaked (reported by stats).
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  static size_t RoundSize(size_t bytes);

  // Never returns nullptr for bytes > 0; throws Error(kOutOfMemory) naming the request and the
  // allocator's state when the backend is exhausted even after the cache was emptied, or at once
  // (naming the capture) when it is exhausted while a graph capture is in progress.
  // Zero bytes returns nullptr.
  void* Allocate(size_t bytes, StreamId stream);
  // `ptr` must come from Allocate (nullptr is ignored); a foreign pointer throws kInternal.
  void Free(void* ptr);

  // Declares that work queued on the backend stream `stream` (a raw handle) uses the live block
  // `ptr`, as torch's record_stream: when the block is freed, an event is recorded on `stream` and
  // the block is reused only after that event completed. `stream` must still exist when the block
  // is freed. Returns false (and does nothing) when `ptr` is not a live block of this allocator.
  bool RecordStream(void* ptr, uintptr_t stream);

  // `stream` was destroyed; every piece of work queued on it has completed (the caller
  // synchronized it). Its cached blocks go back to the backend, and blocks still allocated on it go
  // back to the backend when freed, never into a pool no stream will use again. Nothing may be
  // allocated on `stream` afterwards.
  void StreamDestroyed(StreamId stream);

  // A graph capture is in progress on this device between BeginCapture and EndCapture (counted:
  // captures on several threads nest). Meanwhile nothing is returned to the backend: cudaFree
  // synchronizes the device, which is illegal during a capture and invalidates it. Blocks that must
  // go back (a destroyed stream's, blocks freed after their stream died) are held and released by
  // the EndCapture that ends the last capture. BeginCapture must be called before the capture
  // starts (cudaStreamBeginCapture), EndCapture after it ended (cudaStreamEndCapture).
  void BeginCapture();
  void EndCapture();  // never throws (called from destructors)
  bool capture_in_progress() const;

  // Returns every cached block (and pending one, after waiting for its events) to the backend, and
  // the number of bytes returned. Returns nothing while a graph capture is in progress.
  size_t ReleaseCached();
  AllocatorStats stats() const;

 private:
  struct LiveBlock {
    StreamId stream;
    size_t size;
    bool stream_destroyed = false;
    std::vector<uintptr_t> used_on;  // RecordStream's streams
  };
  struct PendingBlock {
    void* ptr;
    StreamId stream;
    size_t size;
    bool stream_destroyed;
    std::vector<MemoryBackend::Event> events;
  };

  // Moves pending blocks whose events completed (all of them when `wait`) to their stream's pool.
  void ProcessPendingLocked(bool wait);
  // A block no stream will reuse: to the backend now, or after the last capture ended.
  void ReleaseBlockLocked(void* ptr, size_t size);
  size_t ReleaseCachedLocked();
  void ReleaseDeferredLocked();

  MemoryBackend& backend_;
  mutable std::mutex mu_;
  // Free blocks by (stream, size) for best-fit lookup.
  std::multimap<std::pair<StreamId, size_t>, void*> free_;
  std::unordered_map<void*, LiveBlock> live_;
  std::vector<PendingBlock> pending_;
  std::vector<std::pair<void*, size_t>> deferred_release_;
  int captures_ = 0;
  AllocatorStats stats_;
};

// Maps the raw stream handles of streams we create to StreamIds that are never reused, so a stream
// created later with the same handle (the driver reuses them) does not inherit the old stream's pool.
// Thread-safe.
class StreamRegistry {
 public:
  // A new id for a newly created stream with this handle (replacing any stale entry for it).
  CachingAllocator::StreamId Register(uintptr_t handle);
  // Forgets the handle; call it before the stream is destroyed, i.e. before the handle can be reused.
  void Unregister(uintptr_t handle);
  std::optional<CachingAllocator::StreamId> Find(uintptr_t handle) const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, CachingAllocator::StreamId> ids_;
  // Process-wide, so no two registries (or a registry re-created) hand out one id twice. Starts
  // after kDefaultStreamId.
  static std::atomic<CachingAllocator::StreamId> next_id_;
};

}  // namespace oneflow
