// CUDA kernel of ai.oneflow Boxing: the shared Boxing steps (kernels/boxing_steps.h) on device
// memory, every copy and memset on cuda::CurrentStream() (cudaMemcpy2DAsync, cudaMemsetAsync).
// Collectives get device pointers when the rank's communicator takes device memory (NCCL); a host
// communicator (in-process, Gloo) gets the data staged through host buffers, so CUDA placements
// also run without NCCL and with several ranks sharing one GPU.
#include <cuda_runtime_api.h>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/op_schema.h"
#include "kernels/boxing_steps.h"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow {
namespace {

class CudaBoxingMemory final : public BoxingMemory {
 public:
  CudaBoxingMemory(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  Communicator::Memory kind() const override { return Communicator::Memory::kCuda; }
  Tensor Scratch(DType dtype, int64_t numel) override { return cuda::EmptyDeviceTensor(dtype, {numel}, device_, stream_); }
  void Copy(void* dst, const void* src, size_t bytes) override {
    OF_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void Copy2D(char* dst, const char* src, const nccl::Copy2D& c) override {
    OF_CUDA_CHECK(cudaMemcpy2DAsync(dst + c.dst, c.dst_pitch, src + c.src, c.src_pitch, c.width, c.height,
                                    cudaMemcpyDeviceToDevice, stream_));
  }
  void Zero(void* dst, size_t bytes) override { OF_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, stream_)); }
  // Staging buffers are pageable host vectors that live only for the call: synchronize both ways.
  void ToHost(void* host, const void* src, size_t bytes) override {
    OF_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
    OF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  void FromHost(void* dst, const void* host, size_t bytes) override {
    OF_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_));
    OF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  int device_;
  cudaStream_t stream_;
};

class CudaBoxingKernel final : public OpKernel {
 public:
  explicit CudaBoxingKernel(const KernelInitContext& c) : a_(c) {}

  void Compute(KernelContext& ctx) override {
    int device = 0;
    OF_CUDA_CHECK(cudaGetDevice(&device));
    if (a_.comm && a_.comm->memory() == Communicator::Memory::kCuda)
      OF_CHECK(a_.comm->device() == device, kInvalidArgument, ctx.node_desc(), ": the ", a_.comm->backend(),
               " communicator of rank ", a_.comm->rank(), " runs on CUDA device ", a_.comm->device(),
               " but the kernel runs on device ", device);
    CudaBoxingMemory mem(device, cuda::CurrentStream());
    RunBoxing(a_, ctx.input(0), ctx.output(0), mem);
  }

 private:
  const BoxingAttrs a_;
};
ONEFLOW_CUDA_KERNEL_CLASS(Boxing, CudaBoxingKernel);

}  // namespace

}  // namespace oneflow
