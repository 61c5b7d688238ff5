// One registration function per CPU kernel family, mirroring graph/ops/all_ops.h.
#pragma once

namespace oneflow {

class KernelRegistry;

void RegisterCpuElementwiseKernels(KernelRegistry& r);  // cpu/elementwise.cc
void RegisterCpuReductionKernels(KernelRegistry& r);    // cpu/reduction.cc
void RegisterCpuTensorKernels(KernelRegistry& r);       // cpu/tensor.cc
void RegisterCpuNnKernels(KernelRegistry& r);           // cpu/nn.cc (MatMul, Gemm, Conv, pools, ...)
void RegisterCpuFusedKernels(KernelRegistry& r);        // cpu/fused.cc

inline void RegisterAllCpuKernels(KernelRegistry& r) {
  RegisterCpuElementwiseKernels(r);
  RegisterCpuReductionKernels(r);
  RegisterCpuTensorKernels(r);
  RegisterCpuNnKernels(r);
  RegisterCpuFusedKernels(r);
}

}  // namespace oneflow
