// The device side of a TrainingSession that runs on a CUDA device: the session's stream, the fused
// multi-tensor optimizer, and the copies and in-place updates of parameters, gradients and optimizer
// state kept in device memory. Free of CUDA headers, so training_session.cc compiles in every build;
// without CUDA, constructing one fails with kUnsupported "built without CUDA".
//
// Ordering contract (docs/training.md, "Training on a CUDA device"): every call that changes device
// memory either synchronizes the session's stream itself or is followed by Synchronize() before the
// session call returns, so that between session calls no device work is pending. The executors run
// on streams of their own and read parameters as device feeds; they rely on exactly that.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/tensor.h"
#include "train/optimizer.h"

namespace oneflow::train {

class TrainingDevice {
 public:
  // CUDA device `index`. Throws kUnsupported "training on CUDA: liboneflow was built without CUDA"
  // or "no CUDA device: <reason>", kInvalidArgument for an index out of range.
  TrainingDevice(int index, const OptimizerConfig& optimizer);
  ~TrainingDevice();
  TrainingDevice(const TrainingDevice&) = delete;
  TrainingDevice& operator=(const TrainingDevice&) = delete;

  int index() const { return index_; }

  // A new device tensor holding `host`'s bytes (the copy is complete on return).
  Tensor Upload(const Tensor& host);
  // A new host tensor holding `dev`'s bytes (synchronizes the stream first, so earlier updates show).
  Tensor Download(const Tensor& dev);
  // Overwrites device tensor `dev` with host tensor `host` (same size; complete on return).
  void Overwrite(const Tensor& dev, const Tensor& host);
  // A new device tensor holding a copy of device tensor `dev` (asynchronous on the stream).
  Tensor Clone(const Tensor& dev);
  // acc += add, both f32 device tensors of one size (asynchronous on the stream).
  void Accumulate(const Tensor& acc, const Tensor& add);

  // The global gradient norm over the slots' device gradients (synchronizes: the host reads it).
  GradientNorm Norm(const std::vector<ParamSlot*>& params);
  // The fused multi-tensor update of every slot (asynchronous on the stream).
  void Update(const std::vector<ParamSlot*>& params, float lr, float grad_scale, int64_t step);

  // Waits for everything queued on the session's stream.
  void Synchronize();

 private:
  struct Impl;
  int index_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oneflow::train
