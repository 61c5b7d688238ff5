// CPU kernels: the fused activation attributes that MatMul/Gemm (matmul.cc) and Conv (conv.cc) share.
#include "kernels/kernel.h"
#include "kernels/cpu/nn_kernels.h"

namespace oneflow {

ActivationParams ReadActivation(const AttrMap& attrs) {
  return ActivationFromAttrs(attrs.GetString("activation", ""), attrs.GetFloats("activation_params", {}));
}

}  // namespace oneflow
