// CPU kernels: spatial.
#include "kernels/cpu/all_kernels.h"
#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuSpatialKernels(KernelRegistry& r) { (void)r; }

}  // namespace oneflow
