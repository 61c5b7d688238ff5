// CPU kernels: reduction.
#include "kernels/cpu/all_kernels.h"
#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuReductionKernels(KernelRegistry& r) { (void)r; }

}  // namespace oneflow
