#include "device/run_device.h"

#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_run_device.h"
#endif

namespace oneflow {

namespace {

class HostStream final : public RunStream {};

class HostRunDevice final : public RunDevice {
 public:
  DeviceType type() const override { return DeviceType::kCpu; }
  int index() const override { return 0; }
  std::unique_ptr<RunStream> NewStream() override { return std::make_unique<HostStream>(); }
  std::unique_ptr<RunScope> EnterRun(RunStream&) override { return std::make_unique<RunScope>(); }
  void VerifyRun(RunScope&, RunStream&) override {}
  Tensor Empty(DType dtype, const Shape& shape, RunStream&) override { return Tensor::Uninitialized(dtype, shape); }
  std::shared_ptr<Storage> AllocateArena(size_t bytes, RunStream&) override { return Storage::AllocateUninitialized(bytes); }
  Tensor ToDevice(const Tensor& host, RunStream&) override { return host; }
  Tensor ToHost(const Tensor& t, RunStream&) override { return t; }
  Tensor CopyOnDevice(const Tensor& t, RunStream&) override { return t.Clone(); }
  void Synchronize(RunStream&) override {}
  void SynchronizeNoThrow(RunStream&) noexcept override {}
  bool IsDeviceFailure(const Error&) const override { return false; }
};

}  // namespace

std::unique_ptr<RunDevice> OpenRunDevice(DeviceType type, int index) {
  switch (type) {
    case DeviceType::kCpu:
      OF_REQUIRE(index == 0, "CPU device index must be 0, got ", index);
      return std::make_unique<HostRunDevice>();
    case DeviceType::kCuda:
#ifdef ONEFLOW_HAVE_CUDA
      return std::make_unique<cuda::CudaRunDevice>(index);
#else
      Fail(ErrorCode::kUnsupported, "no CUDA device: liboneflow was built without CUDA (ONEFLOW_WITH_CUDA=OFF)");
#endif
  }
  Fail(ErrorCode::kInvalidArgument, "unknown device type ", static_cast<int>(type));
}

}  // namespace oneflow
