// CUDA and cuBLAS status checks that turn a failed call into oneflow::Error (never an abort):
// the message names the call, where it was made and the library's own description.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "base/error.h"

namespace oneflow::cuda {

// The ErrorCode a CUDA runtime status maps to: out of memory -> kOutOfMemory; no device, no or an
// old driver, a bad device index -> kUnsupported (the machine cannot run CUDA work); the rest -> kRuntime.
ErrorCode CudaErrorCode(cudaError_t status);
[[noreturn]] void ThrowCudaError(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void ThrowCublasError(cublasStatus_t status, const char* call, const char* file, int line);
// Checks the last kernel launch on this thread (launch configuration errors are reported there).
void CheckLaunch(const char* kernel, const char* file, int line);

}  // namespace oneflow::cuda

#define OF_CUDA_CHECK(call)                                                                     \
  do {                                                                                          \
    const cudaError_t of_cuda_status_ = (call);                                                 \
    if (of_cuda_status_ != cudaSuccess)                                                         \
      ::oneflow::cuda::ThrowCudaError(of_cuda_status_, #call, __FILE__, __LINE__);              \
  } while (0)

#define OF_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                          \
    const cublasStatus_t of_cublas_status_ = (call);                                            \
    if (of_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::oneflow::cuda::ThrowCublasError(of_cublas_status_, #call, __FILE__, __LINE__);          \
  } while (0)

#define OF_CUDA_CHECK_LAUNCH(kernel_name) ::oneflow::cuda::CheckLaunch(kernel_name, __FILE__, __LINE__)
