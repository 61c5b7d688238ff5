// CPU kernels: nn family registration (MatMul, Gemm: matmul.cc; Conv: conv.cc; ConvTranspose:
// conv_transpose.cc; Det: det.cc) and the fused activation attributes they share.
#include "kernels/cpu/all_kernels.h"
#include "kernels/cpu/nn_kernels.h"

namespace oneflow {

ActivationParams ReadActivation(const AttrMap& attrs) {
  return ActivationFromAttrs(attrs.GetString("activation", ""), attrs.GetFloats("activation_params", {}));
}

void RegisterCpuNnKernels(KernelRegistry& r) {
  r.RegisterClass<MatMulKernel>(OpId::kMatMul);
  r.RegisterClass<GemmKernel>(OpId::kGemm);
  r.RegisterClass<ConvKernel>(OpId::kConv);
  r.RegisterClass<ConvTransposeKernel>(OpId::kConvTranspose);
  RegisterCpuDetKernel(r);
}

}  // namespace oneflow
