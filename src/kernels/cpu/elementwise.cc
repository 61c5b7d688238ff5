// CPU kernels: the elementwise family, registered from unary.cc, binary.cc, compare.cc and cast.cc.
#include "kernels/cpu/all_kernels.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuElementwiseKernels(KernelRegistry& r) {
  RegisterCpuUnaryKernels(r);
  RegisterCpuBinaryKernels(r);
  RegisterCpuCompareKernels(r);
  RegisterCpuCastKernels(r);
}

}  // namespace oneflow
