// The CUDA device layer: device enumeration and selection, streams and events, device memory from
// the caching allocator (dynamic tensors and the static memory plan's arena), pinned host staging
// and asynchronous copies. Every failure is an oneflow::Error (see cuda_check.h).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "device/caching_allocator.h"

namespace oneflow::cuda {

// Number of usable CUDA devices; 0 when there is none, no driver, or the driver is too old, with
// the runtime's explanation in *why_none (when given). Never throws.
int DeviceCount(std::string* why_none = nullptr);
// Throws kUnsupported "no CUDA device: <reason>" when there is none, kInvalidArgument when
// `index` is out of range.
void RequireDevice(int index);

struct DeviceProps {
  std::string name;
  int major = 0, minor = 0;  // compute capability
  size_t total_memory = 0;
  int multiprocessors = 0;
  size_t l2_bytes = 0;
  size_t max_shared_per_block_optin = 0;
};
DeviceProps GetDeviceProps(int index);

// Throws kInvalidArgument unless `data` is memory of CUDA device `index` (device or managed), so
// that a host pointer from a caller is refused instead of faulting in a kernel.
void RequireDevicePointer(const void* data, int index);

// Makes `index` current for this thread; restores the previous device on destruction.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// An owned non-blocking stream on one device. Each gets an allocator stream id of its own, never
// reused in the process (the driver does reuse cudaStream_t handles): device memory allocated for
// one stream is never handed to a later stream that happens to get the same handle.
// The destructor synchronizes the stream, then releases the blocks cached in its pool; blocks still
// allocated on it go back to the device when freed (see CachingAllocator::StreamDestroyed).
class Stream {
 public:
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  CachingAllocator::StreamId id() const { return id_; }
  void Synchronize() const;
  // For destructors: waits for the stream's work; an error is cleared, not thrown.
  void SynchronizeNoThrow() const noexcept;

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  CachingAllocator::StreamId id_ = CachingAllocator::kDefaultStreamId;
};

// The caching allocator's id for `stream`: the cuda::Stream's own id; kDefaultStreamId for the
// legacy default stream (nullptr, cudaStreamLegacy); for any other stream (a caller's, or
// cudaStreamPerThread) the driver's id (cudaStreamGetId, unique for the life of the program) with
// CachingAllocator::kExternalStreamIdBit set. The pool of such an external stream is not released
// when the stream is destroyed (nothing tells us); its blocks stay cached until ReleaseCached or an
// out-of-memory retry. Never reused for another stream either way.
CachingAllocator::StreamId AllocatorStreamId(cudaStream_t stream);

class Event {
 public:
  explicit Event(bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void Record(cudaStream_t stream);
  void Wait(cudaStream_t stream) const;  // `stream` waits for the recorded work (no host block)
  void Synchronize() const;
  bool Done() const;
  float ElapsedMs(const Event& start) const;  // both must be timing events, recorded and done
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// The stream CUDA kernels launch on for this thread (set by whoever runs them: the executor, a
// test); the legacy default stream (0) when unset.
cudaStream_t CurrentStream();
void SetCurrentStream(cudaStream_t stream);
// Sets the current stream for a scope.
class StreamScope {
 public:
  explicit StreamScope(cudaStream_t stream) : previous_(CurrentStream()) { SetCurrentStream(stream); }
  ~StreamScope() { SetCurrentStream(previous_); }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  cudaStream_t previous_;
};

// The caching allocator of device `index` (created on first use, lives for the process).
CachingAllocator& DeviceAllocator(int index);

// Marks a CUDA graph capture on `device` for the scope's lifetime (see
// CachingAllocator::BeginCapture): while any capture is in progress the device's allocator returns
// nothing to the device (its out-of-memory retry fails with kOutOfMemory naming the capture instead
// of calling cudaFree, which would invalidate the capture), and the pinned staging pool frees no
// buffer (cudaFreeHost synchronizes too). Construct it before cudaStreamBeginCapture and let it go
// after cudaStreamEndCapture.
class CaptureScope {
 public:
  explicit CaptureScope(int device);
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  CachingAllocator& allocator_;
};

// Device memory for `bytes` on `device`, ordered on `stream`: returned to the allocator's pool for
// that stream when the last tensor viewing it is destroyed. The static memory plan's arena is one
// such storage; its tensors view it at their planned offsets (Tensor(dtype, shape, storage, offset)).
std::shared_ptr<Storage> AllocateDeviceStorage(size_t bytes, int device, cudaStream_t stream);
// While a KeepAllocations scope is active on a thread, every AllocateDeviceStorage of that thread
// is also appended to `keep`. A CUDA graph bakes the addresses its kernels use (workspaces, outputs)
// into the graph; holding them here keeps them from returning to the pool (or being cudaFree'd by an
// out-of-memory retry) for as long as the graph may replay.
class KeepAllocations {
 public:
  explicit KeepAllocations(std::vector<std::shared_ptr<Storage>>* keep);
  ~KeepAllocations();
  KeepAllocations(const KeepAllocations&) = delete;
  KeepAllocations& operator=(const KeepAllocations&) = delete;

 private:
  std::vector<std::shared_ptr<Storage>>* previous_;
};
// An uninitialized device tensor.
Tensor EmptyDeviceTensor(DType dtype, const Shape& shape, int device, cudaStream_t stream);
// torch's record_stream: declares that work queued on `stream` (any stream, e.g. the caller's own)
// uses `t`'s device memory. When the memory is freed (the last tensor viewing it is destroyed), an
// event is recorded on `stream`, and the allocator hands the block out again only once that event
// completed -- so work the caller queued on `stream` before letting the tensor go still reads valid
// data, even though the block belongs to another stream's pool. `stream` must still exist when the
// memory is freed. (A stream of another device cannot take our event: the block then goes back to
// the device with cudaFree, which waits for all work.) Without RecordStream, a device tensor used on
// a stream other than the one it was allocated for must be ordered before its release by the caller
// (synchronize `stream`, or make the allocation's stream wait for an event on it). Memory not from
// the device allocators (borrowed device memory, host tensors, empty tensors) is left alone: the
// caller owns it. The contract for a run's device outputs: docs/cuda.md, "Device memory: pools,
// streams and the caller's contract".
void RecordStream(const Tensor& t, cudaStream_t stream);
// Page-locked host memory (cudaHostAlloc), freed with cudaFreeHost: the staging buffers of
// asynchronous copies.
std::shared_ptr<Storage> AllocatePinnedStorage(size_t bytes);
Tensor EmptyPinnedTensor(DType dtype, const Shape& shape);

// Asynchronous copies on `stream` (unified addressing tells host from device). Host memory must be
// pinned for the copy to overlap with the host; `dst` and `src` must have the same dtype and size.
void CopyAsync(const Tensor& dst, const Tensor& src, cudaStream_t stream);
// Raw bytes: host to device on `stream` (from pageable memory the runtime stages the bytes before
// returning, so the source may change afterwards), and device to host, waiting for `stream`.
void CopyBytesToDeviceAsync(void* device_dst, const void* host_src, size_t bytes, cudaStream_t stream);
void CopyBytesToHost(void* host_dst, const void* device_src, size_t bytes, cudaStream_t stream);
// The device current on this thread.
int CurrentDevice();
// Host tensor -> new device tensor: staged through pinned memory so the host may reuse `host` on
// return; the copy completes in stream order.
Tensor ToDevice(const Tensor& host, int device, cudaStream_t stream);
// Device tensor -> new (pageable) host tensor; synchronizes `stream`.
Tensor ToHost(const Tensor& dev, cudaStream_t stream);

}  // namespace oneflow::cuda
