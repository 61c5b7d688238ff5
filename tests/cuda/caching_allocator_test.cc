// The caching allocator's bookkeeping against a fake backend (host memory with a byte budget), so it
// runs on machines without a GPU: size classes, per-stream reuse, stream lifetimes, the
// out-of-memory retry and graph captures, RecordStream, stats.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/error.h"
#include "device/caching_allocator.h"

namespace oneflow {
namespace {

// Hands out fake addresses (never dereferenced, never reused, so "not the same block" is a pointer
// comparison) until `budget` bytes are in use; counts every call. Events complete when the test
// says so (Complete) or when the allocator waits for them (SynchronizeEvent).
class FakeBackend final : public MemoryBackend {
 public:
  explicit FakeBackend(size_t budget) : budget_(budget) {}
  ~FakeBackend() override {
    EXPECT_EQ(live_.size(), 0u) << "the allocator leaked backend blocks";
    EXPECT_EQ(events_.size(), 0u) << "the allocator leaked events";
  }
  void* Allocate(size_t bytes) override {
    ++allocs;
    if (in_use + bytes > budget_) return nullptr;
    void* p = reinterpret_cast<void*>(next_);
    next_ += bytes;
    live_[p] = bytes;
    in_use += bytes;
    return p;
  }
  void Free(void* p) override {
    ++frees;
    ASSERT_EQ(live_.count(p), 1u) << "freed a pointer the backend never gave out";
    in_use -= live_[p];
    live_.erase(p);
  }
  Event RecordEvent(uintptr_t stream) override {
    ++records;
    if (fail_records) return nullptr;
    Event e = reinterpret_cast<Event>(next_event_++);
    events_[e] = EventState{stream, false};
    return e;
  }
  bool EventDone(Event e) override { return state(e).done; }
  void SynchronizeEvent(Event e) override {
    ++syncs;
    state(e).done = true;
  }
  void DestroyEvent(Event e) override {
    state(e);
    events_.erase(e);
  }
  // Completes every event recorded on `stream` so far.
  void Complete(uintptr_t stream) {
    for (auto& [e, st] : events_)
      if (st.stream == stream) st.done = true;
  }
  size_t live_events() const { return events_.size(); }
  bool fail_records = false;
  size_t allocs = 0, frees = 0, in_use = 0, records = 0, syncs = 0;

 private:
  struct EventState {
    uintptr_t stream;
    bool done;
  };
  EventState& state(Event e) {
    auto it = events_.find(e);
    EXPECT_NE(it, events_.end()) << "an event the backend never recorded (or already destroyed)";
    return it == events_.end() ? dummy_ : it->second;
  }
  size_t budget_;
  uintptr_t next_ = 0x10000;
  uintptr_t next_event_ = 1;
  std::map<void*, size_t> live_;
  std::map<Event, EventState> events_;
  EventState dummy_{0, true};
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

// ---- Stream lifetimes.

TEST(StreamRegistry, AReusedHandleGetsANewId) {
  StreamRegistry streams;
  const uintptr_t handle = 0x5000;
  const CachingAllocator::StreamId first = streams.Register(handle);
  EXPECT_NE(first, CachingAllocator::kDefaultStreamId);
  EXPECT_EQ(streams.Find(handle), first);
  streams.Unregister(handle);  // the stream is destroyed...
  EXPECT_FALSE(streams.Find(handle).has_value());
  const CachingAllocator::StreamId second = streams.Register(handle);  // ...and the driver reuses it
  EXPECT_NE(second, first);
  EXPECT_EQ(streams.Find(handle), second);
  EXPECT_EQ(second & CachingAllocator::kExternalStreamIdBit, 0u);
  StreamRegistry other;  // ids are process-wide, not per registry
  EXPECT_NE(other.Register(handle), second);
}

TEST(CachingAllocator, DestroyedStreamsCachedBlocksAreReleasedNotHandedOn) {
  FakeBackend backend(1024 * kMiB);
  StreamRegistry streams;
  CachingAllocator alloc(backend);
  const uintptr_t handle = 0x5000;
  const CachingAllocator::StreamId old_stream = streams.Register(handle);
  void* a = alloc.Allocate(1000, old_stream);
  void* b = alloc.Allocate(3 * kMiB, old_stream);
  alloc.Free(a);
  alloc.Free(b);
  EXPECT_EQ(alloc.stats().cached_bytes, 512u * 2 + 4 * kMiB);
  // What cuda::Stream's destructor does (after synchronizing the stream).
  streams.Unregister(handle);
  alloc.StreamDestroyed(old_stream);
  EXPECT_EQ(backend.frees, 2u);
  EXPECT_EQ(backend.in_use, 0u);
  AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.backend_frees, 2u);
  // A new stream that got the same raw handle gets fresh blocks, not the dead stream's.
  const CachingAllocator::StreamId new_stream = streams.Register(handle);
  void* c = alloc.Allocate(1000, new_stream);
  void* d = alloc.Allocate(3 * kMiB, new_stream);
  EXPECT_NE(c, a);
  EXPECT_NE(d, b);
  EXPECT_EQ(alloc.stats().cache_hits, 0u);
  EXPECT_EQ(backend.allocs, 4u);
  alloc.Free(c);
  alloc.Free(d);
}

TEST(CachingAllocator, OtherStreamsPoolsSurviveAStreamsDestruction) {
  FakeBackend backend(1024 * kMiB);
  CachingAllocator alloc(backend);
  void* a = alloc.Allocate(1000, 1);
  void* b = alloc.Allocate(1000, 2);
  alloc.Free(a);
  alloc.Free(b);
  alloc.StreamDestroyed(1);
  EXPECT_EQ(backend.frees, 1u);
  EXPECT_EQ(alloc.Allocate(1000, 2), b);  // stream 2's pool is intact
  alloc.Free(b);
}

TEST(CachingAllocator, BlockFreedAfterItsStreamDiedGoesBackToTheBackend) {
  FakeBackend backend(1024 * kMiB);
  CachingAllocator alloc(backend);
  void* out = alloc.Allocate(4 * kMiB, 3);  // say, a device output the caller still holds
  alloc.StreamDestroyed(3);
  EXPECT_EQ(backend.frees, 0u);  // still in use: nothing to release yet
  EXPECT_EQ(alloc.stats().allocated_bytes, 4 * kMiB);
  alloc.Free(out);
  EXPECT_EQ(backend.frees, 1u);  // not parked in stream 3's pool, which no one will use
  const AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(backend.in_use, 0u);
}

// ---- Graph captures.

TEST(CachingAllocator, OutOfMemoryDuringCaptureFreesNothingAndSaysWhy) {
  FakeBackend backend(10 * kMiB);
  CachingAllocator alloc(backend);
  void* a = alloc.Allocate(6 * kMiB, 1);
  alloc.Free(a);  // cached: the backend still holds 6 MiB
  alloc.BeginCapture();
  EXPECT_TRUE(alloc.capture_in_progress());
  try {
    alloc.Allocate(8 * kMiB, 2);  // would need the cache emptied: cudaFree during a capture
    FAIL() << "expected kOutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    const std::string what = e.what();
    EXPECT_NE(what.find("out of memory"), std::string::npos) << what;
    EXPECT_NE(what.find("capture is in progress"), std::string::npos) << what;
  }
  EXPECT_EQ(backend.frees, 0u);
  EXPECT_EQ(alloc.ReleaseCached(), 0u);  // an explicit release waits for the capture too
  EXPECT_EQ(backend.frees, 0u);
  EXPECT_EQ(alloc.stats().cached_bytes, 6 * kMiB);
  EXPECT_EQ(alloc.Allocate(6 * kMiB, 1), a);  // the cache still serves the capture
  alloc.Free(a);
  alloc.EndCapture();
  EXPECT_FALSE(alloc.capture_in_progress());
  void* b = alloc.Allocate(8 * kMiB, 2);  // the retry works again: cache emptied, then it fits
  EXPECT_EQ(backend.frees, 1u);
  EXPECT_EQ(alloc.stats().reserved_bytes, 8 * kMiB);
  alloc.Free(b);
}

TEST(CachingAllocator, CapturesNestAndReleasesWaitForTheLastOne) {
  FakeBackend backend(1024 * kMiB);
  CachingAllocator alloc(backend);
  void* cached = alloc.Allocate(kMiB, 1);
  void* held = alloc.Allocate(kMiB, 1);
  alloc.Free(cached);
  alloc.BeginCapture();  // two threads capturing
  alloc.BeginCapture();
  alloc.StreamDestroyed(1);  // a stream destroyed meanwhile: its cache must not be cudaFree'd now
  alloc.Free(held);          // nor a block freed after its stream died
  EXPECT_EQ(backend.frees, 0u);
  EXPECT_EQ(alloc.stats().deferred_release_bytes, 2 * kMiB);
  EXPECT_EQ(alloc.stats().reserved_bytes, 2 * kMiB);
  alloc.EndCapture();
  EXPECT_EQ(backend.frees, 0u);  // one capture is still in progress
  alloc.EndCapture();
  EXPECT_EQ(backend.frees, 2u);  // released once the last capture ended
  EXPECT_EQ(alloc.stats().deferred_release_bytes, 0u);
  EXPECT_EQ(alloc.stats().reserved_bytes, 0u);
  alloc.EndCapture();  // unbalanced: ignored, not an error (it runs from destructors)
  EXPECT_FALSE(alloc.capture_in_progress());
}

// ---- RecordStream.

constexpr uintptr_t kUserStream = 0x9900;

TEST(CachingAllocator, RecordedStreamDelaysReuseUntilItsEventCompletes) {
  FakeBackend backend(1024 * kMiB);
  CachingAllocator alloc(backend);
  void* out = alloc.Allocate(kMiB, 1);
  EXPECT_TRUE(alloc.RecordStream(out, kUserStream));
  EXPECT_TRUE(alloc.RecordStream(out, kUserStream));  // recorded once
  EXPECT_EQ(backend.records, 0u);  // events are recorded when the block is freed, not before
  alloc.Free(out);
  EXPECT_EQ(backend.records, 1u);
  EXPECT_EQ(alloc.stats().pending_bytes, kMiB);
  EXPECT_EQ(alloc.stats().cached_bytes, 0u);
  // The user's stream may still be reading it: the next allocation on stream 1 gets a new block.
  void* next = alloc.Allocate(kMiB, 1);
  EXPECT_NE(next, out);
  alloc.Free(next);
  EXPECT_NE(alloc.Allocate(kMiB, 1), out);  // still pending: `next` again
  backend.Complete(kUserStream);
  void* after = alloc.Allocate(kMiB, 1);
  EXPECT_EQ(after, out);  // reused once the event completed
  EXPECT_EQ(backend.live_events(), 0u);  // and the event was destroyed
  EXPECT_EQ(alloc.stats().pending_bytes, 0u);
  alloc.Free(after);
  alloc.Free(next);
  EXPECT_EQ(backend.records, 1u);  // a reused block starts without recorded streams
}

TEST(CachingAllocator, RecordStreamOfAForeignPointerIsRefused) {
  FakeBackend backend(kMiB);
  CachingAllocator alloc(backend);
  int x = 0;
  EXPECT_FALSE(alloc.RecordStream(&x, kUserStream));
  EXPECT_FALSE(alloc.RecordStream(nullptr, kUserStream));
  void* p = alloc.Allocate(100, 1);
  alloc.Free(p);
  EXPECT_FALSE(alloc.RecordStream(p, kUserStream));  // no longer live
}

TEST(CachingAllocator, OutOfMemoryRetryWaitsForPendingBlocks) {
  FakeBackend backend(10 * kMiB);
  CachingAllocator alloc(backend);
  void* a = alloc.Allocate(6 * kMiB, 1);
  alloc.RecordStream(a, kUserStream);
  alloc.Free(a);  // pending on the user's stream
  void* b = alloc.Allocate(8 * kMiB, 2);  // the retry waits for the event, then frees the block
  EXPECT_EQ(backend.syncs, 1u);
  EXPECT_EQ(backend.frees, 1u);
  EXPECT_EQ(alloc.stats().pending_bytes, 0u);
  alloc.Free(b);
}

TEST(CachingAllocator, PendingBlockOfADestroyedStreamIsReleasedWhenItsEventCompletes) {
  FakeBackend backend(1024 * kMiB);
  CachingAllocator alloc(backend);
  void* a = alloc.Allocate(kMiB, 1);
  alloc.RecordStream(a, kUserStream);
  alloc.Free(a);
  alloc.StreamDestroyed(1);
  EXPECT_EQ(backend.frees, 0u);  // the user's stream may still read it
  backend.Complete(kUserStream);
  void* b = alloc.Allocate(100, 2);  // allocations poll pending blocks
  EXPECT_EQ(backend.frees, 1u);
  EXPECT_EQ(alloc.stats().reserved_bytes, 512u);
  alloc.Free(b);
}

TEST(CachingAllocator, BlockWhoseEventCannotBeRecordedIsNotReused) {
  FakeBackend backend(1024 * kMiB);
  CachingAllocator alloc(backend);
  void* a = alloc.Allocate(kMiB, 1);
  alloc.RecordStream(a, kUserStream);
  backend.fail_records = true;
  alloc.Free(a);
  EXPECT_EQ(backend.frees, 1u);  // nothing would say when the user's stream is done with it
  EXPECT_EQ(alloc.stats().reserved_bytes, 0u);
}

TEST(CachingAllocator, DestructorWaitsForPendingBlocksAndReturnsThem) {
  FakeBackend backend(1024 * kMiB);
  {
    CachingAllocator alloc(backend);
    void* a = alloc.Allocate(kMiB, 1);
    alloc.RecordStream(a, kUserStream);
    alloc.Free(a);
  }
  EXPECT_EQ(backend.syncs, 1u);
  EXPECT_EQ(backend.frees, 1u);  // FakeBackend's destructor checks no block or event leaked
}

}  // namespace
}  // namespace oneflow
