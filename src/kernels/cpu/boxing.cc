// CPU kernel of ai.oneflow Boxing: packs the local block into the layout a collective needs,
// calls the rank's Communicator, and unpacks into the output's local block.
#include <cstring>

#include "engine/comm/communicator.h"
#include "graph/op_schema.h"
#include "graph/sbp.h"
#include "kernels/cpu/all_kernels.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

std::vector<int64_t> Zeros(size_t n) { return std::vector<int64_t>(n, 0); }

class BoxingKernel final : public OpKernel {
 public:
  explicit BoxingKernel(const KernelInitContext& c)
      : mode_(c.attrs().GetString("mode")),
        group_(c.attrs().GetInts("group").begin(), c.attrs().GetInts("group").end()),
        axis_(c.attrs().GetInt("axis")),
        in_axis_(c.attrs().GetInt("in_axis")),
        sizes_(c.attrs().GetInts("sizes")),
        in_sizes_(c.attrs().GetInts("in_sizes")),
        starts_(c.attrs().GetInts("starts")),
        keep_(c.attrs().GetInt("keep") != 0) {
    static const char* const kModes[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                         "slice", "zero_fill", "zero_pad"};
    bool known = false;
    for (const char* m : kModes) known |= mode_ == m;
    OF_CHECK(known, kInvalidModel, c.node().Describe(), ": unknown boxing mode '", mode_, "'");
    if (mode_.rfind("all_", 0) == 0 || mode_ == "reduce_scatter") {
      comm_ = FindCommunicator(c.attrs().GetString("comm"));
      for (size_t i = 0; i < group_.size(); ++i)
        if (group_[i] == comm_->rank()) me_ = i;
      OF_CHECK(me_ < group_.size(), kInvalidModel, c.node().Describe(), ": rank ", comm_->rank(),
               " is not in its group");
    }
  }

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    const size_t es = DTypeSize(x.dtype());
    if (mode_ == "all_reduce") {
      std::memcpy(y.raw(), x.raw(), x.nbytes());
      comm_->AllReduceSum(y.raw(), y.numel(), y.dtype(), group_);
    } else if (mode_ == "all_gather") {
      // Members' blocks arrive one after another; each is then placed at its offset along `axis_`.
      Tensor buf = Tensor::Uninitialized(y.dtype(), {y.numel()});
      std::vector<size_t> bytes;
      for (int64_t s : sizes_) bytes.push_back(static_cast<size_t>(PieceNumel(y.shape(), axis_, s)) * es);
      comm_->AllGather(x.raw(), buf.raw(), bytes, group_);
      int64_t at = 0, off = 0;
      for (int64_t s : sizes_) {
        Shape piece = y.shape();
        piece[static_cast<size_t>(axis_)] = s;
        Tensor src(y.dtype(), piece, buf.storage(), static_cast<size_t>(off) * es);
        std::vector<int64_t> dst_start = Zeros(piece.size());
        dst_start[static_cast<size_t>(axis_)] = at;
        CopyBlock(src, Zeros(piece.size()), y, dst_start, piece);
        at += s;
        off += NumElements(piece);
      }
    } else if (mode_ == "reduce_scatter") {
      Tensor send = Pack(x, axis_, sizes_);
      std::vector<int64_t> counts;
      for (int64_t s : sizes_) counts.push_back(PieceNumel(x.shape(), axis_, s));
      comm_->ReduceScatterSum(send.raw(), y.raw(), counts, y.dtype(), group_);
    } else if (mode_ == "all_to_all") {
      // Send member m the part of my block along `axis_` it owns; receive from m its part (its
      // extent along `in_axis_`, my extent along `axis_`) and place it along `in_axis_`.
      Tensor send = Pack(x, axis_, sizes_);
      std::vector<size_t> send_bytes, recv_bytes;
      for (int64_t s : sizes_) send_bytes.push_back(static_cast<size_t>(PieceNumel(x.shape(), axis_, s)) * es);
      for (int64_t s : in_sizes_) recv_bytes.push_back(static_cast<size_t>(PieceNumel(y.shape(), in_axis_, s)) * es);
      Tensor buf = Tensor::Uninitialized(y.dtype(), {y.numel()});
      comm_->AllToAll(send.raw(), send_bytes, buf.raw(), recv_bytes, group_);
      int64_t at = 0, off = 0;
      for (int64_t s : in_sizes_) {
        Shape piece = y.shape();
        piece[static_cast<size_t>(in_axis_)] = s;
        Tensor src(y.dtype(), piece, buf.storage(), static_cast<size_t>(off) * es);
        std::vector<int64_t> dst_start = Zeros(piece.size());
        dst_start[static_cast<size_t>(in_axis_)] = at;
        CopyBlock(src, Zeros(piece.size()), y, dst_start, piece);
        at += s;
        off += NumElements(piece);
      }
    } else if (mode_ == "slice") {
      CopyBlock(x, starts_, y, Zeros(y.shape().size()), y.shape());
    } else if (mode_ == "zero_fill") {
      if (keep_) std::memcpy(y.raw(), x.raw(), x.nbytes());
      else std::memset(y.raw(), 0, y.nbytes());
    } else {  // zero_pad
      std::memset(y.raw(), 0, y.nbytes());
      CopyBlock(x, Zeros(x.shape().size()), y, starts_, x.shape());
    }
  }

 private:
  static int64_t PieceNumel(const Shape& shape, int64_t axis, int64_t extent) {
    Shape s = shape;
    s[static_cast<size_t>(axis)] = extent;
    return NumElements(s);
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

  std::string mode_;
  std::vector<int> group_;
  int64_t axis_, in_axis_;
  std::vector<int64_t> sizes_, in_sizes_, starts_;
  bool keep_;
  std::shared_ptr<Communicator> comm_;
  size_t me_ = 0;
};

}  // namespace

void RegisterCpuBoxingKernels(KernelRegistry& r) { r.RegisterClass<BoxingKernel>("Boxing", kOneflowDomain); }

}  // namespace oneflow
