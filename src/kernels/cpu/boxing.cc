// CPU kernel of ai.oneflow Boxing: packs the local block into the layout a collective needs,
// calls the rank's Communicator, and unpacks into the output's local block.
#include <cstring>

#include "engine/comm/communicator.h"
#include "graph/op_schema.h"
#include "graph/sbp.h"
#include "kernels/cpu/all_kernels.h"
#include "kernels/boxing_attrs.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

std::vector<int64_t> Zeros(size_t n) { return std::vector<int64_t>(n, 0); }

class BoxingKernel final : public OpKernel {
 public:
  explicit BoxingKernel(const KernelInitContext& c) : a_(c) {
    OF_CHECK(!a_.comm || a_.comm->memory() == Communicator::Memory::kHost, kUnsupported, c.node().Describe(),
             ": the CPU Boxing kernel needs a host-memory communicator, not '", a_.comm->backend(), "'");
  }

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = DTypeSize(x.dtype());
    if (a_.mode == "all_reduce") {
      std::memcpy(y.raw(), x.raw(), x.nbytes());
      a_.comm->AllReduceSum(y.raw(), y.numel(), y.dtype(), a_.group);
    } else if (a_.mode == "all_gather") {
      // Members' blocks arrive one after another; each is then placed at its offset along `a_.axis`.
      Tensor buf = Tensor::Uninitialized(y.dtype(), {y.numel()});
      std::vector<size_t> bytes;
      for (int64_t s : a_.sizes) bytes.push_back(static_cast<size_t>(PieceNumel(y.shape(), a_.axis, s)) * es);
      a_.comm->AllGather(x.raw(), buf.raw(), bytes, a_.group);
      int64_t at = 0, off = 0;
      for (int64_t s : a_.sizes) {
        Shape piece = y.shape();
        piece[static_cast<size_t>(a_.axis)] = s;
        Tensor src(y.dtype(), piece, buf.storage(), static_cast<size_t>(off) * es);
        std::vector<int64_t> dst_start = Zeros(piece.size());
        dst_start[static_cast<size_t>(a_.axis)] = at;
        CopyBlock(src, Zeros(piece.size()), y, dst_start, piece);
        at += s;
        off += NumElements(piece);
      }
    } else if (a_.mode == "reduce_scatter") {
      Tensor send = Pack(x, a_.axis, a_.sizes);
      std::vector<int64_t> counts;
      for (int64_t s : a_.sizes) counts.push_back(PieceNumel(x.shape(), a_.axis, s));
      a_.comm->ReduceScatterSum(send.raw(), y.raw(), counts, y.dtype(), a_.group);
    } else if (a_.mode == "all_to_all") {
      // Send member m the part of my block along `a_.axis` it owns; receive from m its part (its
      // extent along `a_.in_axis`, my extent along `a_.axis`) and place it along `a_.in_axis`.
      Tensor send = Pack(x, a_.axis, a_.sizes);
      std::vector<size_t> send_bytes, recv_bytes;
      for (int64_t s : a_.sizes) send_bytes.push_back(static_cast<size_t>(PieceNumel(x.shape(), a_.axis, s)) * es);
      for (int64_t s : a_.in_sizes) recv_bytes.push_back(static_cast<size_t>(PieceNumel(y.shape(), a_.in_axis, s)) * es);
      Tensor buf = Tensor::Uninitialized(y.dtype(), {y.numel()});
      a_.comm->AllToAll(send.raw(), send_bytes, buf.raw(), recv_bytes, a_.group);
      int64_t at = 0, off = 0;
      for (int64_t s : a_.in_sizes) {
        Shape piece = y.shape();
        piece[static_cast<size_t>(a_.in_axis)] = s;
        Tensor src(y.dtype(), piece, buf.storage(), static_cast<size_t>(off) * es);
        std::vector<int64_t> dst_start = Zeros(piece.size());
        dst_start[static_cast<size_t>(a_.in_axis)] = at;
        CopyBlock(src, Zeros(piece.size()), y, dst_start, piece);
        at += s;
        off += NumElements(piece);
      }
    } else if (a_.mode == "slice") {
      CopyBlock(x, a_.starts, y, Zeros(y.shape().size()), y.shape());
    } else if (a_.mode == "zero_fill") {
      if (a_.keep) std::memcpy(y.raw(), x.raw(), x.nbytes());
      else std::memset(y.raw(), 0, y.nbytes());
    } else {  // zero_pad
      std::memset(y.raw(), 0, y.nbytes());
      CopyBlock(x, Zeros(x.shape().size()), y, a_.starts, x.shape());
    }
  }

 private:
  static int64_t PieceNumel(const Shape& shape, int64_t axis, int64_t extent) {
    return BoxingAttrs::PieceNumel(shape, axis, extent);
  }
  // `x` cut along `axis` into consecutive pieces of `sizes`, each made contiguous, in order.
  static Tensor Pack(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
    Tensor out = Tensor::Uninitialized(x.dtype(), {x.numel()});
    const size_t es = DTypeSize(x.dtype());
    int64_t at = 0, off = 0;
    for (int64_t s : sizes) {
      Shape piece = x.shape();
      piece[static_cast<size_t>(axis)] = s;
      Tensor dst(x.dtype(), piece, out.storage(), static_cast<size_t>(off) * es);
      std::vector<int64_t> src_start = Zeros(piece.size());
      src_start[static_cast<size_t>(axis)] = at;
      CopyBlock(x, src_start, dst, Zeros(piece.size()), piece);
      at += s;
      off += NumElements(piece);
    }
    return out;
  }

  const BoxingAttrs a_;
};

}  // namespace

void RegisterCpuBoxingKernels(KernelRegistry& r) { r.RegisterClass<BoxingKernel>("Boxing", kOneflowDomain); }

}  // namespace oneflow
