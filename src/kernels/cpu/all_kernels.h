// One registration function per CPU kernel family, mirroring graph/ops/all_ops.h.
#pragma once

namespace oneflow {

class KernelRegistry;

void RegisterCpuElementwiseKernels(KernelRegistry& r);    // cpu/elementwise.cc
void RegisterCpuReductionKernels(KernelRegistry& r);      // cpu/reduction.cc
void RegisterCpuNormalizationKernels(KernelRegistry& r);  // cpu/normalization.cc
void RegisterCpuTensorKernels(KernelRegistry& r);         // cpu/tensor.cc
void RegisterCpuNnKernels(KernelRegistry& r);             // cpu/nn.cc
void RegisterCpuSpatialKernels(KernelRegistry& r);        // cpu/spatial.cc
void RegisterCpuFusedKernels(KernelRegistry& r);          // cpu/fused.cc
void RegisterCpuNhwcPoolKernels(KernelRegistry& r);       // cpu/pool_nhwc.cc (layout pass ops)
void RegisterCpuGradKernels(KernelRegistry& r);           // cpu/grad.cc (ai.oneflow gradient ops)
void RegisterCpuLossKernels(KernelRegistry& r);           // cpu/loss.cc (losses and their gradients)
void RegisterCpuNnGradKernels(KernelRegistry& r);         // cpu/conv_grad.cc, pool_grad.cc, norm_grad.cc
void RegisterCpuBoxingKernels(KernelRegistry& r);         // cpu/boxing.cc (collectives of a plan)
void RegisterCpuAttentionKernels(KernelRegistry& r);      // cpu/attention.cc (ai.oneflow FusedAttention)
void RegisterCpuFusedElementwiseKernels(KernelRegistry& r);  // cpu/fused_elementwise.cc
void RegisterCpuQuantizationKernels(KernelRegistry& r);   // cpu/quantization.cc

inline void RegisterAllCpuKernels(KernelRegistry& r) {
  RegisterCpuElementwiseKernels(r);
  RegisterCpuReductionKernels(r);
  RegisterCpuNormalizationKernels(r);
  RegisterCpuTensorKernels(r);
  RegisterCpuNnKernels(r);
  RegisterCpuSpatialKernels(r);
  RegisterCpuFusedKernels(r);
  RegisterCpuNhwcPoolKernels(r);
  RegisterCpuGradKernels(r);
  RegisterCpuLossKernels(r);
  RegisterCpuNnGradKernels(r);
  RegisterCpuBoxingKernels(r);
  RegisterCpuAttentionKernels(r);
  RegisterCpuFusedElementwiseKernels(r);
  RegisterCpuQuantizationKernels(r);
}

}  // namespace oneflow
