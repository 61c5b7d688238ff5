// TrainingDevice: the CUDA side of a training session (see training_device.h). Without CUDA every
// constructor call reports that the library was built without it.
#include "train/training_device.h"

#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#include "train/optimizer_cuda.h"
#endif

namespace oneflow::train {

#ifndef ONEFLOW_HAVE_CUDA

struct TrainingDevice::Impl {};

TrainingDevice::TrainingDevice(int index, const OptimizerConfig&) : index_(index) {
  Fail(ErrorCode::kUnsupported,
       "training on CUDA: liboneflow was built without CUDA (ONEFLOW_WITH_CUDA=OFF); use the CPU device");
}
TrainingDevice::~TrainingDevice() = default;
Tensor TrainingDevice::Upload(const Tensor&) { Fail(ErrorCode::kInternal, "built without CUDA"); }
Tensor TrainingDevice::Download(const Tensor&) { Fail(ErrorCode::kInternal, "built without CUDA"); }
void TrainingDevice::Overwrite(const Tensor&, const Tensor&) { Fail(ErrorCode::kInternal, "built without CUDA"); }
Tensor TrainingDevice::Clone(const Tensor&) { Fail(ErrorCode::kInternal, "built without CUDA"); }
void TrainingDevice::Accumulate(const Tensor&, const Tensor&) { Fail(ErrorCode::kInternal, "built without CUDA"); }
GradientNorm TrainingDevice::Norm(const std::vector<ParamSlot*>&) { Fail(ErrorCode::kInternal, "built without CUDA"); }
void TrainingDevice::Update(const std::vector<ParamSlot*>&, float, float, int64_t) {
  Fail(ErrorCode::kInternal, "built without CUDA");
}
void TrainingDevice::Synchronize() {}

#else  // ONEFLOW_HAVE_CUDA

struct TrainingDevice::Impl {
  Impl(int index, const OptimizerConfig& optimizer) : stream(index), optimizer(optimizer) {}
  // Declared first so it is destroyed last: blocks allocated on it return to its pool.
  cuda::Stream stream;
  CudaMultiTensorOptimizer optimizer;
};

// Every device call runs with the session's device current (the caller's thread may use another).
TrainingDevice::TrainingDevice(int index, const OptimizerConfig& optimizer) : index_(index) {
  cuda::RequireDevice(index);  // kUnsupported "no CUDA device: ..." / kInvalidArgument for the index
  cuda::DeviceGuard guard(index);
  impl_ = std::make_unique<Impl>(index, optimizer);
}

TrainingDevice::~TrainingDevice() {
  if (!impl_) return;
  cuda::DeviceGuard guard(index_);
  impl_->stream.SynchronizeNoThrow();
  impl_.reset();
}

Tensor TrainingDevice::Upload(const Tensor& host) {
  cuda::DeviceGuard guard(index_);
  Tensor dev = cuda::ToDevice(host, index_, impl_->stream.get());
  impl_->stream.Synchronize();
  return dev;
}

Tensor TrainingDevice::Download(const Tensor& dev) {
  cuda::DeviceGuard guard(index_);
  return cuda::ToHost(dev, impl_->stream.get());  // synchronizes the stream
}

void TrainingDevice::Overwrite(const Tensor& dev, const Tensor& host) {
  cuda::DeviceGuard guard(index_);
  // Staged through pinned memory by ToDevice; the temporary is released only after the sync below.
  Tensor staged = cuda::ToDevice(host, index_, impl_->stream.get());
  cuda::CopyAsync(dev, staged, impl_->stream.get());
  impl_->stream.Synchronize();
}

Tensor TrainingDevice::Clone(const Tensor& dev) {
  cuda::DeviceGuard guard(index_);
  Tensor out = cuda::EmptyDeviceTensor(dev.dtype(), dev.shape(), index_, impl_->stream.get());
  cuda::CopyAsync(out, dev, impl_->stream.get());
  return out;
}

void TrainingDevice::Accumulate(const Tensor& acc, const Tensor& add) {
  OF_CHECK(acc.dtype() == DType::kFloat32 && add.dtype() == DType::kFloat32 && acc.numel() == add.numel(), kInternal,
           "gradient accumulation on CUDA needs two f32 tensors of one size");
  cuda::DeviceGuard guard(index_);
  AccumulateGradient(acc.data<float>(), add.data<float>(), acc.numel(), impl_->stream.get());
}

GradientNorm TrainingDevice::Norm(const std::vector<ParamSlot*>& params) {
  cuda::DeviceGuard guard(index_);
  return impl_->optimizer.GlobalGradientNorm(params, impl_->stream.get());
}

void TrainingDevice::Update(const std::vector<ParamSlot*>& params, float lr, float grad_scale, int64_t step) {
  cuda::DeviceGuard guard(index_);
  impl_->optimizer.ApplyUpdate(params, lr, grad_scale, step, impl_->stream.get());
}

void TrainingDevice::Synchronize() {
  cuda::DeviceGuard guard(index_);
  impl_->stream.Synchronize();
}

#endif  // ONEFLOW_HAVE_CUDA

}  // namespace oneflow::train
