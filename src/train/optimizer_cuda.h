// The optimizer step for parameters that live on a CUDA device: one fused multi-tensor launch
// updates every parameter (SGD with momentum/Nesterov/weight decay, Adam, AdamW; the rules and
// rounding of train/optimizer.h's ApplyUpdate), and the global gradient norm is summed on the
// device. Built only with ONEFLOW_HAVE_CUDA (train/optimizer_cuda.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "train/optimizer.h"

namespace oneflow::train {

// Holds the chunk table (every parameter cut into fixed 64 Ki-element chunks: pointers to value,
// gradient and state, and the extent) in device memory. The table is rebuilt only when the
// parameters' buffers change, so a training loop uploads it once. Not thread-safe; one per session.
class CudaMultiTensorOptimizer {
 public:
  explicit CudaMultiTensorOptimizer(const OptimizerConfig& config);
  ~CudaMultiTensorOptimizer();
  CudaMultiTensorOptimizer(const CudaMultiTensorOptimizer&) = delete;
  CudaMultiTensorOptimizer& operator=(const CudaMultiTensorOptimizer&) = delete;

  // The L2 norm over every gradient: per-chunk sums of squares in double, added in chunk order
  // (deterministic), read back to the host (the clipping scale and the NaN/Inf skip need it
  // there: one synchronization of `stream`). `finite` is false when any gradient holds NaN/Inf.
  GradientNorm GlobalGradientNorm(const std::vector<ParamSlot*>& params, cudaStream_t stream);

  // ApplyUpdate on the device: one launch over all chunks, asynchronous on `stream`. Every tensor
  // of every slot must be f32 device memory of the current device (value, grad and state shaped
  // alike; OptimizerStateNames(config) state tensors). Element results equal the CPU's: the same
  // scalars (ComputeUpdateScalars), separate multiplies and adds (no FMA contraction), IEEE
  // division and square root.
  void ApplyUpdate(const std::vector<ParamSlot*>& params, float lr, float grad_scale, int64_t step,
                   cudaStream_t stream);

  const OptimizerConfig& config() const { return config_; }

 private:
  struct Table;
  void Prepare(const std::vector<ParamSlot*>& params, cudaStream_t stream);

  OptimizerConfig config_;
  std::unique_ptr<Table> table_;
};

// acc[i] += add[i] for i < n (f32 device memory of the current device), asynchronous on `stream`:
// gradient accumulation over several backward runs before one step.
void AccumulateGradient(float* acc, const float* add, int64_t n, cudaStream_t stream);

}  // namespace oneflow::train
