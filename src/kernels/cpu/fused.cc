// CPU kernels: fused (ai.oneflow). The nn kernel classes implement the epilogues themselves.
#include "kernels/cpu/all_kernels.h"
#include "kernels/cpu/nn_kernels.h"
#include "graph/op_schema.h"

namespace oneflow {

void RegisterCpuFusedKernels(KernelRegistry& r) {
  r.RegisterClass<MatMulKernel>(OpId::kFusedMatMul);
  r.RegisterClass<GemmKernel>(OpId::kFusedGemm);
  r.RegisterClass<ConvKernel>(OpId::kFusedConv);
}

}  // namespace oneflow
