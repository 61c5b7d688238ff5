// CUDA and cuBLAS status checks that turn a failed call into oneflow::Error (never an abort):
// the message names the call, where it was made and the library's own description. Also the
// deferred checks of device data (DeferDeviceCheck), read after a run instead of in the middle of it.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/tensor.h"

namespace oneflow::cuda {

// The ErrorCode a CUDA runtime status maps to: out of memory -> kOutOfMemory; no device, no or an
// old driver, a bad device index -> kUnsupported (the machine cannot run CUDA work); a library built
// for other GPU architectures (IsBuildArchitectureError) -> kInternal; the rest -> kRuntime.
ErrorCode CudaErrorCode(cudaError_t status);
// Statuses that mean this build of the library has no usable code for the device: no kernel image
// for it, PTX too new for the driver or not JIT-compilable, an invalid device function. They are a
// build problem, never a reason to run a node on the CPU instead (that would pass as correct but slow).
bool IsBuildArchitectureError(cudaError_t status);
// The architectures the CUDA sources were compiled for, as nvcc's __CUDA_ARCH_LIST__ ("900" or
// "800,900"). Defined in kernels/cuda/tensor_ops.cu: the list exists only when nvcc compiles.
const char* CompiledCudaArchList();
// "compute capability 8.0 (device 0, NVIDIA A100 ...)" for the current device, or "" when unknown.
std::string CurrentDeviceDescription();

// The error of a failed CUDA runtime call. A subclass so the executor can tell a CUDA status (the
// machine's or the build's problem) from a kernel declining a node (a plain kUnsupported Error).
class CudaStatusError : public Error {
 public:
  CudaStatusError(ErrorCode code, std::string message, cudaError_t status)
      : Error(code, std::move(message)), status_(status) {}
  cudaError_t status() const { return status_; }

 private:
  cudaError_t status_;
};

// Whether `e` came from a failed CUDA runtime call (OF_CUDA_CHECK, OF_CUDA_CHECK_LAUNCH).
inline bool IsCudaStatusError(const Error& e) { return dynamic_cast<const CudaStatusError*>(&e) != nullptr; }

[[noreturn]] void ThrowCudaError(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void ThrowCublasError(cublasStatus_t status, const char* call, const char* file, int line);
// Checks the last kernel launch on this thread (launch configuration errors are reported there).
void CheckLaunch(const char* kernel, const char* file, int line);

// ---- Checks of device data, verified after the run ---------------------------------------------
// A kernel that can only see bad data on the device (a label outside [0, C)) raises an int32 flag
// in device memory. Reading it right after the launch would make the host wait in the middle of
// the run (and break CUDA graph capture), so the kernel registers it with DeferDeviceCheck: inside
// a DeviceCheckScope (the executor opens one per run; a captured graph keeps its checks and
// verifies them after every replay) it is read once the run's stream has finished anyway; outside
// one (a kernel called on its own, e.g. by a kernel test) it is read at once, synchronously.
struct DeferredDeviceCheck {
  Tensor flag;  // one int32 in device memory; non-zero = the check failed
  ErrorCode code = ErrorCode::kInvalidArgument;
  std::string message;
};

// Collects the checks registered on this thread while it lives (scopes nest: the innermost collects).
class DeviceCheckScope {
 public:
  DeviceCheckScope();
  ~DeviceCheckScope();
  DeviceCheckScope(const DeviceCheckScope&) = delete;
  DeviceCheckScope& operator=(const DeviceCheckScope&) = delete;

  std::vector<DeferredDeviceCheck>& checks() { return checks_; }
  // Waits for `stream`, reads every flag and throws the first failed check's error.
  void Verify(cudaStream_t stream) const { VerifyDeviceChecks(checks_, stream); }
  static void VerifyDeviceChecks(const std::vector<DeferredDeviceCheck>& checks, cudaStream_t stream);

 private:
  std::vector<DeferredDeviceCheck> checks_;
  DeviceCheckScope* outer_;
};

// Registers `flag` (written by work queued on `stream`) with the active scope, or, without one,
// synchronizes `stream` and throws Error(code, message) now when the flag is raised.
void DeferDeviceCheck(const Tensor& flag, ErrorCode code, std::string message, cudaStream_t stream);

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
