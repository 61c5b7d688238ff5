// CPU kernels: the fused activation attributes that MatMul/Gemm (matmul.cc) and Conv (conv.cc) share.
#include "kernels/kernel.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

ActivationParams ReadActivation(const AttrMap& attrs) {
  return ActivationFromAttrs(attrs.GetString("activation", ""), attrs.GetFloats("activation_params", {}));
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
