// Launchers shared between the CUDA convolution (conv_cudnn.cc, host code on cuDNN) and the CUDA
// kernel files that implement its extra passes (nn.cu, transpose.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "base/tensor.h"

namespace oneflow::cuda {

// In place on `total` elements of y (f32/f16/bf16): y += bias[channel] (when bias is not null),
// y += z[i] (when z is not null), then Relu when `relu`. The channel of element i is
// (i / inner) % channels: inner = the spatial size for NCHW, 1 for channels-last.
void LaunchConvEpilogue(DType dt, void* y, const void* bias, const void* z, int64_t total, int64_t channels,
                        int64_t inner, bool relu, cudaStream_t stream);

// y = x transposed by `perm` (rank <= 8, element size 1/2/4/8 bytes): y's dim d is x's dim perm[d].
void LaunchTranspose(DType dt, const void* x, const Shape& x_shape, const std::vector<int64_t>& perm, void* y,
                     cudaStream_t stream);

}  // namespace oneflow::cuda
