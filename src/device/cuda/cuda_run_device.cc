#include "device/cuda/cuda_run_device.h"

namespace oneflow::cuda {

namespace {

// A run on one device and stream, collecting the kernels' deferred checks.
class CudaRunScope final : public RunDevice::RunScope {
 public:
  CudaRunScope(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  DeviceCheckScope& checks() { return checks_; }

 private:
  DeviceGuard device_;
  StreamScope stream_;
  DeviceCheckScope checks_;
};

}  // namespace

CudaRunDevice::CudaRunDevice(int index) : index_(index) { RequireDevice(index); }

std::unique_ptr<RunStream> CudaRunDevice::NewStream() {
  DeviceGuard guard(index_);
  return std::make_unique<CudaRunStream>(index_);
}

std::unique_ptr<RunDevice::RunScope> CudaRunDevice::EnterRun(RunStream& stream) {
  return std::make_unique<CudaRunScope>(index_, StreamOf(stream));
}

void CudaRunDevice::VerifyRun(RunScope& scope, RunStream& stream) {
  static_cast<CudaRunScope&>(scope).checks().Verify(StreamOf(stream));
}

Tensor CudaRunDevice::Empty(DType dtype, const Shape& shape, RunStream& stream) {
  return EmptyDeviceTensor(dtype, shape, index_, StreamOf(stream));
}

std::shared_ptr<Storage> CudaRunDevice::AllocateArena(size_t bytes, RunStream& stream) {
  return AllocateDeviceStorage(bytes, index_, StreamOf(stream));
}

Tensor CudaRunDevice::ToDevice(const Tensor& host, RunStream& stream) {
  return cuda::ToDevice(host, index_, StreamOf(stream));
}

Tensor CudaRunDevice::ToHost(const Tensor& device, RunStream& stream) { return cuda::ToHost(device, StreamOf(stream)); }

Tensor CudaRunDevice::CopyOnDevice(const Tensor& device, RunStream& stream) {
  Tensor out = EmptyDeviceTensor(device.dtype(), device.shape(), index_, StreamOf(stream));
  CopyAsync(out, device, StreamOf(stream));
  return out;
}

void CudaRunDevice::Synchronize(RunStream& stream) { static_cast<CudaRunStream&>(stream).stream().Synchronize(); }

void CudaRunDevice::SynchronizeNoThrow(RunStream& stream) noexcept {
  static_cast<CudaRunStream&>(stream).stream().SynchronizeNoThrow();
}

}  // namespace oneflow::cuda
