// CUDA / cuBLAS status -> oneflow::Error.
#include "device/cuda/cuda_check.h"

namespace oneflow::cuda {

ErrorCode CudaErrorCode(cudaError_t status) {
  switch (status) {
    case cudaSuccess: return ErrorCode::kOk;
    case cudaErrorMemoryAllocation: return ErrorCode::kOutOfMemory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return ErrorCode::kUnsupported;
    default: return ErrorCode::kRuntime;
  }
}

void ThrowCudaError(cudaError_t status, const char* call, const char* file, int line) {
  // Non-sticky errors are also recorded as this thread's "last error"; clear it so a later, unrelated
  // CheckLaunch does not report it a second time.
  (void)cudaGetLastError();
  throw Error(CudaErrorCode(status), StrCat("CUDA error ", cudaGetErrorName(status), " (", static_cast<int>(status),
                                            "): ", cudaGetErrorString(status), " in ", call, " at ", file, ":", line));
}

namespace {
// cublasGetStatusName lives in libcublas, which we do not link (only cuBLASLt).
const char* CublasStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED (no usable device or driver)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED (out of memory)";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE (an unsupported value or parameter)";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH (the device lacks a required feature)";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED (a kernel failed to run)";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED (this case is not supported)";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
  }
}
}  // namespace

void ThrowCublasError(cublasStatus_t status, const char* call, const char* file, int line) {
  const ErrorCode code = status == CUBLAS_STATUS_ALLOC_FAILED    ? ErrorCode::kOutOfMemory
                         : status == CUBLAS_STATUS_NOT_SUPPORTED ? ErrorCode::kUnsupported
                                                                 : ErrorCode::kRuntime;
  throw Error(code, StrCat("cuBLAS error ", CublasStatusName(status), " (", static_cast<int>(status), ") in ", call,
                           " at ", file, ":", line));
}

void CheckLaunch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) ThrowCudaError(status, kernel, file, line);
}

}  // namespace oneflow::cuda
