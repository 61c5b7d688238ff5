// The CUDA implementation of RunDevice (device/run_device.h): device memory from the caching
// allocator, copies on the run's own non-blocking stream, deferred device checks.
#pragma once

#include <memory>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "device/run_device.h"

namespace oneflow::cuda {

class CudaRunStream final : public RunStream {
 public:
  explicit CudaRunStream(int device) : stream_(device) {}
  cudaStream_t get() const { return stream_.get(); }
  const Stream& stream() const { return stream_; }

 private:
  Stream stream_;
};

inline cudaStream_t StreamOf(RunStream& s) { return static_cast<CudaRunStream&>(s).get(); }

class CudaRunDevice final : public RunDevice {
 public:
  // kUnsupported "no CUDA device: ..." without one, kInvalidArgument for an index out of range.
  explicit CudaRunDevice(int index);

  DeviceType type() const override { return DeviceType::kCuda; }
  int index() const override { return index_; }
  std::unique_ptr<RunStream> NewStream() override;
  std::unique_ptr<RunScope> EnterRun(RunStream& stream) override;
  void VerifyRun(RunScope& scope, RunStream& stream) override;
  Tensor Empty(DType dtype, const Shape& shape, RunStream& stream) override;
  std::shared_ptr<Storage> AllocateArena(size_t bytes, RunStream& stream) override;
  Tensor ToDevice(const Tensor& host, RunStream& stream) override;
  Tensor ToHost(const Tensor& device, RunStream& stream) override;
  Tensor CopyOnDevice(const Tensor& device, RunStream& stream) override;
  void Synchronize(RunStream& stream) override;
  void SynchronizeNoThrow(RunStream& stream) noexcept override;
  bool IsDeviceFailure(const Error& e) const override { return IsCudaStatusError(e); }

 private:
  int index_;
};

}  // namespace oneflow::cuda
