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

// An owned non-blocking stream on one device.
class Stream {
 public:
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  void Synchronize() const;

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

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
// Page-locked host memory (cudaHostAlloc), freed with cudaFreeHost: the staging buffers of
// asynchronous copies.
std::shared_ptr<Storage> AllocatePinnedStorage(size_t bytes);
Tensor EmptyPinnedTensor(DType dtype, const Shape& shape);

// Asynchronous copies on `stream` (unified addressing tells host from device). Host memory must be
// pinned for the copy to overlap with the host; `dst` and `src` must have the same dtype and size.
void CopyAsync(const Tensor& dst, const Tensor& src, cudaStream_t stream);
// Host tensor -> new device tensor: staged through pinned memory so the host may reuse `host` on
// return; the copy completes in stream order.
Tensor ToDevice(const Tensor& host, int device, cudaStream_t stream);
// Device tensor -> new (pageable) host tensor; synchronizes `stream`.
Tensor ToHost(const Tensor& dev, cudaStream_t stream);

}  // namespace oneflow::cuda
