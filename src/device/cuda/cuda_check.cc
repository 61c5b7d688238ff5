// CUDA / cuBLAS status -> oneflow::Error, and the deferred checks of device data.
#include "device/cuda/cuda_check.h"

#include <cstdint>

namespace oneflow::cuda {

bool IsBuildArchitectureError(cudaError_t status) {
  switch (status) {
    case cudaErrorNoKernelImageForDevice:  // no SASS for this compute capability and no usable PTX
    case cudaErrorUnsupportedPtxVersion:   // PTX from a newer toolkit than the driver can JIT
    case cudaErrorInvalidPtx:              // the PTX JIT failed
    case cudaErrorJitCompilerNotFound:
    case cudaErrorJitCompilationDisabled:
    case cudaErrorInvalidKernelImage:
    case cudaErrorInvalidDeviceFunction:   // a kernel with no code for this device
      return true;
    default: return false;
  }
}

ErrorCode CudaErrorCode(cudaError_t status) {
  if (IsBuildArchitectureError(status)) return ErrorCode::kInternal;
  switch (status) {
    case cudaSuccess: return ErrorCode::kOk;
    case cudaErrorMemoryAllocation: return ErrorCode::kOutOfMemory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return ErrorCode::kUnsupported;
    default: return ErrorCode::kRuntime;
  }
}

namespace {

// The current device's compute capability as major * 10 + minor (0 when unknown) and a description.
int CurrentDeviceArch(std::string* description) {
  int device = -1, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (description) {
    std::string name;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) name = StrCat(", ", prop.name);
    *description = StrCat("compute capability ", major, ".", minor, " (device ", device, name, ")");
  }
  (void)cudaGetLastError();
  return major * 10 + minor;
}

// "800,900" -> "8.0, 9.0".
std::string FormatArchList(const std::string& list) {
  std::string out, item;
  auto flush = [&] {
    if (item.empty()) return;
    if (!out.empty()) out += ", ";
    out += item.size() >= 2 ? StrCat(item.substr(0, item.size() - 2), ".", item.substr(item.size() - 2, 1)) : item;
    item.clear();
  };
  for (char c : list) {
    if (c == ',') flush();
    else if (c != ' ') item += c;
  }
  flush();
  return out;
}

}  // namespace

std::string CurrentDeviceDescription() {
  std::string d;
  CurrentDeviceArch(&d);
  return d;
}

void ThrowCudaError(cudaError_t status, const char* call, const char* file, int line) {
  // Non-sticky errors are also recorded as this thread's "last error"; clear it so a later, unrelated
  // CheckLaunch does not report it a second time.
  (void)cudaGetLastError();
  std::string message = StrCat("CUDA error ", cudaGetErrorName(status), " (", static_cast<int>(status),
                               "): ", cudaGetErrorString(status), " in ", call, " at ", file, ":", line);
  if (IsBuildArchitectureError(status)) {
    // Say what to do: the fix is a rebuild, not a smaller model or another dtype.
    std::string device;
    const int arch = CurrentDeviceArch(&device);
    message += StrCat("; liboneflow has no usable GPU code for this device",
                      device.empty() ? std::string() : StrCat(", ", device), ": it was built for compute capabilities ",
                      FormatArchList(CompiledCudaArchList()), " (CMAKE_CUDA_ARCHITECTURES). Rebuild it with ",
                      arch > 0 ? StrCat("-DCMAKE_CUDA_ARCHITECTURES=\"", arch, "-real;", arch, "-virtual\"")
                               : std::string("the device's architecture in CMAKE_CUDA_ARCHITECTURES"),
                      " (or add it to the list)",
                      status == cudaErrorUnsupportedPtxVersion || status == cudaErrorInvalidPtx ||
                              status == cudaErrorJitCompilerNotFound || status == cudaErrorJitCompilationDisabled
                          ? "; its PTX needs a driver at least as new as the CUDA toolkit it was built with."
                          : ".");
  }
  throw CudaStatusError(CudaErrorCode(status), std::move(message), status);
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
  // NOT_SUPPORTED stays kUnsupported: cuBLASLt declining a problem (layout, alignment, epilogue) is
  // a kernel refusing a case; in a session that is an error unless run-time fallback is allowed
  // (docs/cuda.md, "Run-time fallbacks and host reads").
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

// ---- Deferred device checks ----------------------------------------------------------------------

namespace {
thread_local DeviceCheckScope* g_check_scope = nullptr;
}  // namespace

DeviceCheckScope::DeviceCheckScope() : outer_(g_check_scope) { g_check_scope = this; }
DeviceCheckScope::~DeviceCheckScope() { g_check_scope = outer_; }

void DeviceCheckScope::VerifyDeviceChecks(const std::vector<DeferredDeviceCheck>& checks, cudaStream_t stream) {
  if (checks.empty()) return;
  // One wait for all flags: the copies queue behind the run's work on its stream.
  std::vector<int32_t> raised(checks.size(), 0);
  for (size_t i = 0; i < checks.size(); ++i)
    OF_CUDA_CHECK(cudaMemcpyAsync(&raised[i], checks[i].flag.raw(), sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
  OF_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < checks.size(); ++i)
    if (raised[i] != 0) throw Error(checks[i].code, checks[i].message);
}

void DeferDeviceCheck(const Tensor& flag, ErrorCode code, std::string message, cudaStream_t stream) {
  OF_CHECK(flag.dtype() == DType::kInt32 && flag.numel() == 1, kInternal, "a device check flag must be one int32");
  DeferredDeviceCheck check{flag, code, std::move(message)};
  if (g_check_scope != nullptr) {
    g_check_scope->checks().push_back(std::move(check));
    return;
  }
  DeviceCheckScope::VerifyDeviceChecks({check}, stream);
}

}  // namespace oneflow::cuda
