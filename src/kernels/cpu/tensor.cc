// CPU kernels: tensor.
#include "kernels/cpu/all_kernels.h"
#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuTensorKernels(KernelRegistry& r) { (void)r; }

}  // namespace oneflow
