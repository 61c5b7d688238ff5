// CPU kernels: normalization.
#include "kernels/cpu/all_kernels.h"
#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuNormalizationKernels(KernelRegistry& r) { (void)r; }

}  // namespace oneflow
