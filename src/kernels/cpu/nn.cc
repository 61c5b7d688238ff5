// CPU kernels: nn.
#include "kernels/cpu/all_kernels.h"
#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuNnKernels(KernelRegistry& r) { (void)r; }

}  // namespace oneflow
