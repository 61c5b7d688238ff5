// CPU kernels: nn family registration (MatMul, Gemm: matmul.cc; Conv: conv.cc; ConvTranspose:
// conv_transpose.cc) and the fused activation attributes they share.
#include "kernels/cpu/all_kernels.h"
#include "kernels/cpu/nn_kernels.h"

namespace oneflow {

ActivationSpec ReadActivation(const AttrMap& attrs) {
  ActivationSpec a;
  a.kind = ActivationFromName(attrs.GetString("activation", ""));
  std::vector<float> params = attrs.GetFloats("activation_params", {});
  if (a.kind == Activation::kLeakyRelu) a.alpha = params.empty() ? 0.01f : params[0];
  if (a.kind == Activation::kClip) {
    a.alpha = params.size() > 0 ? params[0] : -3.4028234663852886e38f;
    a.beta = params.size() > 1 ? params[1] : 3.4028234663852886e38f;
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
