// Registration entry points of the spatial kernel files (pool.cc, resize.cc, einsum.cc, spatial.cc).
#pragma once

#include "kernels/kernel.h"

namespace oneflow {

void RegisterCpuPoolKernels(KernelRegistry& r);    // pool.cc
void RegisterCpuResizeKernels(KernelRegistry& r);  // resize.cc
void RegisterCpuEinsumKernels(KernelRegistry& r);  // einsum.cc

}  // namespace oneflow
