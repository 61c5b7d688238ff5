// Registration entry points of the nn gradient kernel files; RegisterCpuNnGradKernels (nn_grad.cc)
// calls each.
#pragma once

#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuConvGradKernels(KernelRegistry& r);  // conv_grad.cc: Conv/ConvTranspose data, filter, bias grads
void RegisterCpuPoolGradKernels(KernelRegistry& r);  // pool_grad.cc: Max/Average/Global pool grads
void RegisterCpuNormGradKernels(KernelRegistry& r);  // norm_grad.cc: Softmax, LogSoftmax, Layer/Batch/InstanceNorm grads

}  // namespace oneflow
