// CUDA kernel of ai.oneflow Boxing: the CPU kernel's steps (kernels/cpu/boxing.cc) on device
// memory, on cuda::CurrentStream(). Local steps are strided device copies (cudaMemcpy2DAsync,
// planned by nccl::PlanBlockCopy) and memsets. Collectives get device pointers when the rank's
// communicator takes device memory (NCCL); a host communicator (in-process, Gloo) gets its data
// staged through host buffers, so CUDA placements also run without NCCL or with several ranks
// sharing one GPU.
#include <cuda_runtime_api.h>

#include <vector>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "engine/comm/nccl_layout.h"
#include "graph/op_schema.h"
#include "kernels/boxing_attrs.h"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow {
namespace {

std::vector<int64_t> Zeros(size_t n) { return std::vector<int64_t>(n, 0); }

// dst[dst_start + block] = src[src_start + block] for row-major device tensors of the given shapes.
void CopyBlockAsync(const void* src, const Shape& src_shape, const std::vector<int64_t>& src_start, void* dst,
                    const Shape& dst_shape, const std::vector<int64_t>& dst_start, const Shape& block, size_t es,
                    cudaStream_t stream) {
  for (const nccl::Copy2D& c : nccl::PlanBlockCopy(src_shape, src_start, dst_shape, dst_start, block, es))
    OF_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(dst) + c.dst, c.dst_pitch,
                                    static_cast<const char*>(src) + c.src, c.src_pitch, c.width, c.height,
                                    cudaMemcpyDeviceToDevice, stream));
}

class CudaBoxingKernel final : public OpKernel {
 public:
  explicit CudaBoxingKernel(const KernelInitContext& c) : a_(c) {}

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = DTypeSize(x.dtype());
    const cudaStream_t stream = cuda::CurrentStream();
    int device = 0;
    OF_CUDA_CHECK(cudaGetDevice(&device));
    if (a_.comm && a_.comm->memory() == Communicator::Memory::kCuda)
      OF_CHECK(a_.comm->device() == device, kInvalidArgument, ctx.node_desc(), ": the ", a_.comm->backend(),
               " communicator of rank ", a_.comm->rank(), " runs on CUDA device ", a_.comm->device(),
               " but the kernel runs on device ", device);
    const char* xp = static_cast<const char*>(x.raw());
    char* yp = static_cast<char*>(y.raw());
    if (a_.mode == "all_reduce") {
      if (x.nbytes()) OF_CUDA_CHECK(cudaMemcpyAsync(yp, xp, x.nbytes(), cudaMemcpyDeviceToDevice, stream));
      Collective(yp, y.nbytes(), yp, y.nbytes(), stream,
                 [&](const void*, void* buf) { a_.comm->AllReduceSum(buf, y.numel(), y.dtype(), a_.group); });
    } else if (a_.mode == "all_gather") {
      // Members' blocks arrive one after another; each is then placed at its offset along `axis`.
      Tensor buf = cuda::EmptyDeviceTensor(y.dtype(), {y.numel()}, device, stream);
      std::vector<size_t> bytes;
      for (int64_t s : a_.sizes) bytes.push_back(static_cast<size_t>(BoxingAttrs::PieceNumel(y.shape(), a_.axis, s)) * es);
      Collective(xp, x.nbytes(), buf.raw(), buf.nbytes(), stream,
                 [&](const void* send, void* recv) { a_.comm->AllGather(send, recv, bytes, a_.group); });
      Unpack(buf, a_.sizes, a_.axis, y, stream);
    } else if (a_.mode == "reduce_scatter") {
      Tensor send = Pack(x, a_.axis, a_.sizes, device, stream);
      std::vector<int64_t> counts;
      for (int64_t s : a_.sizes) counts.push_back(BoxingAttrs::PieceNumel(x.shape(), a_.axis, s));
      Collective(send.raw(), send.nbytes(), yp, y.nbytes(), stream, [&](const void* in, void* out) {
        a_.comm->ReduceScatterSum(in, out, counts, y.dtype(), a_.group);
      });
    } else if (a_.mode == "all_to_all") {
      // Send member m the part of my block along `axis` it owns; receive from m its part (its
      // extent along `in_axis`, my extent along `axis`) and place it along `in_axis`.
      Tensor send = Pack(x, a_.axis, a_.sizes, device, stream);
      std::vector<size_t> send_bytes, recv_bytes;
      for (int64_t s : a_.sizes)
        send_bytes.push_back(static_cast<size_t>(BoxingAttrs::PieceNumel(x.shape(), a_.axis, s)) * es);
      for (int64_t s : a_.in_sizes)
        recv_bytes.push_back(static_cast<size_t>(BoxingAttrs::PieceNumel(y.shape(), a_.in_axis, s)) * es);
      Tensor buf = cuda::EmptyDeviceTensor(y.dtype(), {y.numel()}, device, stream);
      Collective(send.raw(), send.nbytes(), buf.raw(), buf.nbytes(), stream, [&](const void* in, void* out) {
        a_.comm->AllToAll(in, send_bytes, out, recv_bytes, a_.group);
      });
      Unpack(buf, a_.in_sizes, a_.in_axis, y, stream);
    } else if (a_.mode == "slice") {
      CopyBlockAsync(xp, x.shape(), a_.starts, yp, y.shape(), Zeros(y.shape().size()), y.shape(), es, stream);
    } else if (a_.mode == "zero_fill") {
      if (!y.nbytes()) return;
      if (a_.keep) OF_CUDA_CHECK(cudaMemcpyAsync(yp, xp, x.nbytes(), cudaMemcpyDeviceToDevice, stream));
      else OF_CUDA_CHECK(cudaMemsetAsync(yp, 0, y.nbytes(), stream));
    } else {  // zero_pad
      if (y.nbytes()) OF_CUDA_CHECK(cudaMemsetAsync(yp, 0, y.nbytes(), stream));
      CopyBlockAsync(xp, x.shape(), Zeros(x.shape().size()), yp, y.shape(), a_.starts, x.shape(), es, stream);
    }
  }

 private:
  // Runs `fn(send, recv)` on device buffers: directly for a device communicator (it orders its
  // work on this stream), else through host copies (the stream is synchronized around the call).
  template <typename Fn>
  void Collective(const void* send, size_t send_bytes, void* recv, size_t recv_bytes, cudaStream_t stream, Fn&& fn) {
    if (a_.comm->memory() == Communicator::Memory::kCuda) {
      fn(send, recv);
      return;
    }
    const bool in_place = send == recv;
    std::vector<char> host_send(send_bytes), host_recv(in_place ? 0 : recv_bytes);
    if (send_bytes)
      OF_CUDA_CHECK(cudaMemcpyAsync(host_send.data(), send, send_bytes, cudaMemcpyDeviceToHost, stream));
    OF_CUDA_CHECK(cudaStreamSynchronize(stream));
    char* out = in_place ? host_send.data() : host_recv.data();
    fn(host_send.data(), out);
    if (recv_bytes) OF_CUDA_CHECK(cudaMemcpyAsync(recv, out, recv_bytes, cudaMemcpyHostToDevice, stream));
    OF_CUDA_CHECK(cudaStreamSynchronize(stream));  // the host buffers go away on return
  }

  // `x` cut along `axis` into consecutive pieces of `sizes`, each made contiguous, in order.
  static Tensor Pack(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes, int device, cudaStream_t stream) {
    Tensor out = cuda::EmptyDeviceTensor(x.dtype(), {x.numel()}, device, stream);
    const size_t es = DTypeSize(x.dtype());
    int64_t at = 0;
    size_t off = 0;
    for (int64_t s : sizes) {
      Shape piece = x.shape();
      piece[static_cast<size_t>(axis)] = s;
      std::vector<int64_t> src_start = Zeros(piece.size());
      src_start[static_cast<size_t>(axis)] = at;
      CopyBlockAsync(x.raw(), x.shape(), src_start, static_cast<char*>(out.raw()) + off, piece, Zeros(piece.size()),
                     piece, es, stream);
      at += s;
      off += static_cast<size_t>(NumElements(piece)) * es;
    }
    return out;
  }
  // The inverse: consecutive contiguous pieces of `buf` placed along `axis` of `y`.
  static void Unpack(const Tensor& buf, const std::vector<int64_t>& sizes, int64_t axis, Tensor& y,
                     cudaStream_t stream) {
    const size_t es = DTypeSize(y.dtype());
    int64_t at = 0;
    size_t off = 0;
    for (int64_t s : sizes) {
      Shape piece = y.shape();
      piece[static_cast<size_t>(axis)] = s;
      std::vector<int64_t> dst_start = Zeros(piece.size());
      dst_start[static_cast<size_t>(axis)] = at;
      CopyBlockAsync(static_cast<const char*>(buf.raw()) + off, piece, Zeros(piece.size()), y.raw(), y.shape(),
                     dst_start, piece, es, stream);
      at += s;
      off += static_cast<size_t>(NumElements(piece)) * es;
    }
  }

  const BoxingAttrs a_;
};

}  // namespace

void RegisterCudaBoxingKernels(KernelRegistry& r) {
  r.Register(KernelDef{kOneflowDomain, "Boxing", DeviceType::kCuda, KernelKind::kCompute,
                       [](const KernelInitContext& c) -> std::unique_ptr<OpKernel> {
                         return std::make_unique<CudaBoxingKernel>(c);
                       }});
}

}  // namespace oneflow
