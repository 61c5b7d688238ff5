// What one run of a graph needs from the device it runs on: memory, copies between that memory
// and the host's, the stream the run's work is ordered on, and the checks kernels leave to read
// after it. The executor has one run loop for every device (engine/executor.cc); the host is the
// device whose memory is the host's, whose copies are no-ops and whose stream is program order.
#pragma once

#include <cstddef>
#include <memory>

#include "base/device_type.h"
#include "base/error.h"
#include "base/tensor.h"

namespace oneflow {

// The queue one run's device work is ordered on (a CUDA stream). Reused across runs, one run at a
// time.
class RunStream {
 public:
  virtual ~RunStream() = default;
};

class RunDevice {
 public:
  virtual ~RunDevice() = default;
  virtual DeviceType type() const = 0;
  virtual int index() const = 0;
  // Whether the device's memory is not the host's: values may then need copies either way.
  bool separate_memory() const { return type() != DeviceType::kCpu; }

  virtual std::unique_ptr<RunStream> NewStream() = 0;
  // While the returned scope lives, this thread's kernels run on this device and on `stream`, and
  // the checks they defer (a device kernel finding a bad index in device data) are collected.
  class RunScope {
   public:
    virtual ~RunScope() = default;
  };
  virtual std::unique_ptr<RunScope> EnterRun(RunStream& stream) = 0;
  // After the stream is synchronized: throws the first deferred check of `scope` that failed.
  virtual void VerifyRun(RunScope& scope, RunStream& stream) = 0;

  // Uninitialized device memory, ordered on `stream`.
  virtual Tensor Empty(DType dtype, const Shape& shape, RunStream& stream) = 0;
  virtual std::shared_ptr<Storage> AllocateArena(size_t bytes, RunStream& stream) = 0;
  // Copies between the host and the device (new memory on the other side); CopyOnDevice makes a
  // device copy of device memory.
  virtual Tensor ToDevice(const Tensor& host, RunStream& stream) = 0;
  virtual Tensor ToHost(const Tensor& device, RunStream& stream) = 0;
  virtual Tensor CopyOnDevice(const Tensor& device, RunStream& stream) = 0;
  virtual void Synchronize(RunStream& stream) = 0;
  // For destructors and unwinding: waits for the stream; an error is cleared, not thrown.
  virtual void SynchronizeNoThrow(RunStream& stream) noexcept = 0;
  // Whether `e` is a failure of the device itself (its runtime, driver or memory), as opposed to
  // a kernel declining a node it cannot run.
  virtual bool IsDeviceFailure(const Error& e) const = 0;
};

// Device `index` of kind `type` (the host is kCpu, index 0): kUnsupported "no CUDA device: ..." where there is none (or the
// build has no CUDA), kInvalidArgument for an index out of range.
std::unique_ptr<RunDevice> OpenRunDevice(DeviceType type, int index);

}  // namespace oneflow
