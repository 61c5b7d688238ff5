// CPU kernels: registration of the nn gradient ops (domain ai.oneflow, schemas in graph/ops/nn_grad.cc).
#include "kernels/cpu/all_kernels.h"
#include "kernels/cpu/nn_grad_kernels.h"

namespace oneflow {

void RegisterCpuNnGradKernels(KernelRegistry& r) {
  RegisterCpuConvGradKernels(r);
  RegisterCpuPoolGradKernels(r);
  RegisterCpuNormGradKernels(r);
}

}  // namespace oneflow
