// CUDA kernels: the launchers that several kernel files share.
// Kernels run on cuda::CurrentStream() with inputs and outputs in device memory of the current device.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "base/tensor.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"

namespace oneflow {

namespace cuda {

// The unary activations the fused MatMul/Gemm epilogues may need after cuBLASLt (codes of
// kernels/cpu/elementwise_util.h's Activation): applied in place to `n` elements of dtype `dt`.
void LaunchActivationInPlace(DType dt, void* data, int64_t n, const ActivationParams& act, cudaStream_t stream);
// dst (shape dst_shape) = src broadcast numpy-style from src_shape; same dtype.
void LaunchBroadcastTo(DType dt, const void* src, const Shape& src_shape, void* dst, const Shape& dst_shape,
                       cudaStream_t stream);

}  // namespace cuda
}  // namespace oneflow
