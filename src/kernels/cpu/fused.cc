// CPU kernels: fused.
#include "kernels/cpu/all_kernels.h"
#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuFusedKernels(KernelRegistry& r) { (void)r; }

}  // namespace oneflow
