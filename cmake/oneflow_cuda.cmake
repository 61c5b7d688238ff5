# The CUDA backend: option and toolkit discovery. Included from the top-level CMakeLists.txt before
# the modules are defined; sets ONEFLOW_HAVE_CUDA, ONEFLOW_HAVE_CUDNN, ONEFLOW_HAVE_NCCL (and
# CUDNN_*/NCCL_* paths), which src/CMakeLists.txt turns into each module's CUDA sources and libraries.
#
# ONEFLOW_WITH_CUDA defaults to ON when nvcc is found and OFF otherwise; with it OFF (or no toolkit)
# the engine builds exactly as before and the CUDA C API answers "built without CUDA".
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(_oneflow_cuda_default ON)
else()
  set(_oneflow_cuda_default OFF)
endif()
option(ONEFLOW_WITH_CUDA "Build the CUDA backend (default: ON when nvcc is found)" ${_oneflow_cuda_default})

set(ONEFLOW_HAVE_CUDA OFF)
if(NOT ONEFLOW_WITH_CUDA)
  message(STATUS "CUDA backend: off (ONEFLOW_WITH_CUDA=OFF; nvcc: ${CMAKE_CUDA_COMPILER})")
  return()
endif()
if(NOT CMAKE_CUDA_COMPILER)
  message(FATAL_ERROR "ONEFLOW_WITH_CUDA=ON but no CUDA compiler (nvcc) was found; set CMAKE_CUDA_COMPILER or pass -DONEFLOW_WITH_CUDA=OFF")
endif()

# sm_90 machine code plus compute_90 PTX (the driver JIT-compiles the PTX for newer chips).
# Set before enable_language so CMake does not pick its own default.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual" CACHE STRING "CUDA architectures (default: sm_90 + PTX)")
endif()
# One CUDA runtime for the whole process: the shared libcudart that the host code links too.
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
if(CCACHE_PROGRAM)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
find_package(CUDAToolkit REQUIRED)

# Libraries: cudart and cuBLASLt are required for the backend; cuDNN and NCCL are reported and
# recorded (ONEFLOW_HAVE_CUDNN / ONEFLOW_HAVE_NCCL); cuDNN is linked for the convolution kernels.
foreach(_lib cudart cublasLt)
  if(NOT TARGET CUDA::${_lib})
    message(FATAL_ERROR "CUDA backend: ${_lib} not found in the CUDA toolkit at ${CUDAToolkit_LIBRARY_DIR}; pass -DONEFLOW_WITH_CUDA=OFF to build without CUDA")
  endif()
endforeach()
find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
set(ONEFLOW_HAVE_CUDNN OFF)
set(ONEFLOW_HAVE_NCCL OFF)
if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
  set(ONEFLOW_HAVE_CUDNN ON)
else()
  message(WARNING "CUDA backend: cuDNN not found (cudnn.h / libcudnn): Conv and fused attention stay on the CPU")
endif()
if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(ONEFLOW_HAVE_NCCL ON)
else()
  message(WARNING "CUDA backend: NCCL not found (nccl.h / libnccl): no NCCL communicator")
endif()

set(ONEFLOW_HAVE_CUDA ON)
message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, "
               "cuBLASLt ${CUDAToolkit_VERSION}, cuDNN ${ONEFLOW_HAVE_CUDNN}, NCCL ${ONEFLOW_HAVE_NCCL})")

