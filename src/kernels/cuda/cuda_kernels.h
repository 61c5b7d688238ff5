// CUDA kernels: one registration function per family, and the launchers that several families share.
// Kernels run on cuda::CurrentStream() with inputs and outputs in device memory of the current device.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "base/tensor.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"

namespace oneflow {

void RegisterCudaElementwiseKernels(KernelRegistry& r);  // cuda/elementwise.cu (unary, binary, Cast)
void RegisterCudaReductionKernels(KernelRegistry& r);    // cuda/reduce_norm.cu (Reduce*, Softmax, LayerNorm)
void RegisterCudaTransposeKernels(KernelRegistry& r);    // cuda/transpose.cu
void RegisterCudaMatMulKernels(KernelRegistry& r);       // cuda/matmul_cublaslt.cc
void RegisterCudaGradKernels(KernelRegistry& r);         // cuda/grad.cu (activation grads, ReduceSumToShape, Sum)
void RegisterCudaNormLossGradKernels(KernelRegistry& r); // cuda/norm_loss_grad.cu (Softmax/LayerNorm grads, SCE loss)
void RegisterCudaBoxingKernels(KernelRegistry& r);       // cuda/boxing.cc (ai.oneflow Boxing)
void RegisterCudaNnKernels(KernelRegistry& r);           // cuda/nn.cu (pools and their grads, BatchNorm, ConvGradBias)
void RegisterCudaTensorKernels(KernelRegistry& r);       // cuda/tensor_ops.cu (Gather, Concat, Slice, ..., views)
void RegisterCudaAttentionKernels(KernelRegistry& r);    // cuda/attention.cu (ai.oneflow FusedAttention)
void RegisterCudaFusedElementwiseKernels(KernelRegistry& r);  // cuda/fused_elementwise.cu
#ifdef ONEFLOW_HAVE_CUDNN
void RegisterCudaConvKernels(KernelRegistry& r);         // cuda/conv_cudnn.cc (Conv family on cuDNN)
#endif

inline void RegisterAllCudaKernels(KernelRegistry& r) {
  RegisterCudaElementwiseKernels(r);
  RegisterCudaReductionKernels(r);
  RegisterCudaTransposeKernels(r);
  RegisterCudaMatMulKernels(r);
  RegisterCudaGradKernels(r);
  RegisterCudaNormLossGradKernels(r);
  RegisterCudaBoxingKernels(r);
  RegisterCudaNnKernels(r);
  RegisterCudaTensorKernels(r);
  RegisterCudaAttentionKernels(r);
  RegisterCudaFusedElementwiseKernels(r);
#ifdef ONEFLOW_HAVE_CUDNN
  RegisterCudaConvKernels(r);
#endif
}

namespace cuda {

// The unary activations the fused MatMul/Gemm epilogues may need after cuBLASLt (codes of
// kernels/cpu/elementwise_util.h's Activation): applied in place to `n` elements of dtype `dt`.
void LaunchActivationInPlace(DType dt, void* data, int64_t n, const ActivationParams& act, cudaStream_t stream);
// dst (shape dst_shape) = src broadcast numpy-style from src_shape; same dtype.
void LaunchBroadcastTo(DType dt, const void* src, const Shape& src_shape, void* dst, const Shape& dst_shape,
                       cudaStream_t stream);

}  // namespace cuda
}  // namespace oneflow
