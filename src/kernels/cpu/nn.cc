// CPU kernels: nn family registration (MatMul, Gemm: matmul.cc; Conv: conv.cc; ConvTranspose:
// conv_transpose.cc) and the fused activation attributes they share.
#include "kernels/cpu/all_kernels.h"
#include "kernels/cpu/nn_kernels.h"

namespace oneflow {

ActivationParams ReadActivation(const AttrMap& attrs) {
  ActivationParams a;
  a.kind = ActivationFromName(attrs.GetString("activation", ""));
  std::vector<float> params = attrs.GetFloats("activation_params", {});
  if (a.kind == Activation::kLeakyRelu) a.alpha = params.empty() ? 0.01f : params[0];
  if (a.kind == Activation::kClip) {
    a.min = params.size() > 0 ? params[0] : -std::numeric_limits<float>::infinity();
    a.max = params.size() > 1 ? params[1] : std::numeric_limits<float>::infinity();
  }
  return a;
}

void RegisterCpuNnKernels(KernelRegistry& r) {
  r.RegisterClass<MatMulKernel>("MatMul");
  r.RegisterClass<GemmKernel>("Gemm");
  r.RegisterClass<ConvKernel>("Conv");
  r.RegisterClass<ConvTransposeKernel>("ConvTranspose");
}

}  // namespace oneflow
