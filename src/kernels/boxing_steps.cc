// The Boxing steps over a BoxingMemory (see boxing_steps.h): packing the local block into the
// layout a collective needs, the collective (direct or host-staged), and unpacking; the local
// slice / zero-fill / zero-pad steps.
#include "kernels/boxing_steps.h"

#include <cstring>

namespace oneflow {
namespace {

std::vector<int64_t> Zeros(size_t n) { return std::vector<int64_t>(n, 0); }

// Elements of `shape` with `axis` cut to `extent`.
int64_t PieceNumel(const Shape& shape, int64_t axis, int64_t extent) {
  Shape s = shape;
  s[static_cast<size_t>(axis)] = extent;
  return NumElements(s);
}

// dst[dst_start + block] = src[src_start + block] for row-major tensors of the given shapes.
void CopyBlock(BoxingMemory& mem, const void* src, const Shape& src_shape, const std::vector<int64_t>& src_start,
               void* dst, const Shape& dst_shape, const std::vector<int64_t>& dst_start, const Shape& block, size_t es) {
  for (const nccl::Copy2D& c : nccl::PlanBlockCopy(src_shape, src_start, dst_shape, dst_start, block, es))
    mem.Copy2D(static_cast<char*>(dst), static_cast<const char*>(src), c);
}

// `x` cut along `axis` into consecutive pieces of `sizes`, each made contiguous, in order.
Tensor Pack(BoxingMemory& mem, const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
  Tensor out = mem.Scratch(x.dtype(), x.numel());
  const size_t es = DTypeSize(x.dtype());
  int64_t at = 0;
  size_t off = 0;
  for (int64_t s : sizes) {
    Shape piece = x.shape();
    piece[static_cast<size_t>(axis)] = s;
    std::vector<int64_t> src_start = Zeros(piece.size());
    src_start[static_cast<size_t>(axis)] = at;
    CopyBlock(mem, x.raw(), x.shape(), src_start, static_cast<char*>(out.raw()) + off, piece, Zeros(piece.size()),
              piece, es);
    at += s;
    off += static_cast<size_t>(NumElements(piece)) * es;
  }
  return out;
}

// The inverse: consecutive contiguous pieces of `buf` placed along `axis` of `y`.
void Unpack(BoxingMemory& mem, const Tensor& buf, const std::vector<int64_t>& sizes, int64_t axis, Tensor& y) {
  const size_t es = DTypeSize(y.dtype());
  int64_t at = 0;
  size_t off = 0;
  for (int64_t s : sizes) {
    Shape piece = y.shape();
    piece[static_cast<size_t>(axis)] = s;
    std::vector<int64_t> dst_start = Zeros(piece.size());
    dst_start[static_cast<size_t>(axis)] = at;
    CopyBlock(mem, static_cast<const char*>(buf.raw()) + off, piece, Zeros(piece.size()), y.raw(), y.shape(),
              dst_start, piece, es);
    at += s;
    off += static_cast<size_t>(NumElements(piece)) * es;
  }
}

// Runs `fn(send, recv)`: on `mem`'s pointers when the communicator takes that memory, else on host
// copies (device data with a host communicator: in-process ranks sharing a GPU, Gloo).
template <typename Fn>
void Collective(const BoxingAttrs& a, BoxingMemory& mem, const void* send, size_t send_bytes, void* recv,
                size_t recv_bytes, Fn&& fn) {
  if (a.comm->memory() == mem.kind()) {
    fn(send, recv);
    return;
  }
  OF_CHECK(a.comm->memory() == Communicator::Memory::kHost, kUnsupported, "boxing: the ", a.comm->backend(),
           " communicator needs device memory but the kernel's tensors are on the host");
  const bool in_place = send == recv;
  std::vector<char> host_send(send_bytes), host_recv(in_place ? 0 : recv_bytes);
  if (send_bytes) mem.ToHost(host_send.data(), send, send_bytes);
  char* out = in_place ? host_send.data() : host_recv.data();
  fn(host_send.data(), out);
  if (recv_bytes) mem.FromHost(recv, out, recv_bytes);
}

}  // namespace

BoxingAttrs::BoxingAttrs(const KernelInitContext& c)
    : mode(c.attrs().GetString("mode")),
      group(c.attrs().GetInts("group").begin(), c.attrs().GetInts("group").end()),
      axis(c.attrs().GetInt("axis")),
      in_axis(c.attrs().GetInt("in_axis")),
      sizes(c.attrs().GetInts("sizes")),
      in_sizes(c.attrs().GetInts("in_sizes")),
      starts(c.attrs().GetInts("starts")),
      keep(c.attrs().GetInt("keep") != 0) {
  static const char* const kModes[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                       "slice",      "zero_fill",  "zero_pad"};
  bool known = false;
  for (const char* m : kModes) known |= mode == m;
  OF_CHECK(known, kInvalidModel, c.node().Describe(), ": unknown boxing mode '", mode, "'");
  if (mode.rfind("all_", 0) == 0 || mode == "reduce_scatter") {
    comm = FindCommunicator(c.attrs().GetString("comm"));
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] == comm->rank()) me = i;
    OF_CHECK(me < group.size(), kInvalidModel, c.node().Describe(), ": rank ", comm->rank(), " is not in its group");
  }
}

Tensor HostBoxingMemory::Scratch(DType dtype, int64_t numel) { return Tensor::Uninitialized(dtype, {numel}); }
void HostBoxingMemory::Copy(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
void HostBoxingMemory::Copy2D(char* dst, const char* src, const nccl::Copy2D& c) {
  for (size_t r = 0; r < c.height; ++r) std::memcpy(dst + c.dst + r * c.dst_pitch, src + c.src + r * c.src_pitch, c.width);
}
void HostBoxingMemory::Zero(void* dst, size_t bytes) { std::memset(dst, 0, bytes); }

void RunBoxing(const BoxingAttrs& a, const Tensor& x, Tensor& y, BoxingMemory& mem) {
  const size_t es = DTypeSize(x.dtype());
  if (a.mode == "all_reduce") {
    if (x.nbytes()) mem.Copy(y.raw(), x.raw(), x.nbytes());
    Collective(a, mem, y.raw(), y.nbytes(), y.raw(), y.nbytes(),
               [&](const void*, void* buf) { a.comm->AllReduceSum(buf, y.numel(), y.dtype(), a.group); });
  } else if (a.mode == "all_gather") {
    // Members' blocks arrive one after another; each is then placed at its offset along `axis`.
    Tensor buf = mem.Scratch(y.dtype(), y.numel());
    std::vector<size_t> bytes;
    for (int64_t s : a.sizes) bytes.push_back(static_cast<size_t>(PieceNumel(y.shape(), a.axis, s)) * es);
    Collective(a, mem, x.raw(), x.nbytes(), buf.raw(), buf.nbytes(),
               [&](const void* send, void* recv) { a.comm->AllGather(send, recv, bytes, a.group); });
    Unpack(mem, buf, a.sizes, a.axis, y);
  } else if (a.mode == "reduce_scatter") {
    Tensor send = Pack(mem, x, a.axis, a.sizes);
    std::vector<int64_t> counts;
    for (int64_t s : a.sizes) counts.push_back(PieceNumel(x.shape(), a.axis, s));
    Collective(a, mem, send.raw(), send.nbytes(), y.raw(), y.nbytes(), [&](const void* in, void* out) {
      a.comm->ReduceScatterSum(in, out, counts, y.dtype(), a.group);
    });
  } else if (a.mode == "all_to_all") {
    // Send member m the part of my block along `axis` it owns; receive from m its part (its extent
    // along `in_axis`, my extent along `axis`) and place it along `in_axis`.
    Tensor send = Pack(mem, x, a.axis, a.sizes);
    std::vector<size_t> send_bytes, recv_bytes;
    for (int64_t s : a.sizes) send_bytes.push_back(static_cast<size_t>(PieceNumel(x.shape(), a.axis, s)) * es);
    for (int64_t s : a.in_sizes) recv_bytes.push_back(static_cast<size_t>(PieceNumel(y.shape(), a.in_axis, s)) * es);
    Tensor buf = mem.Scratch(y.dtype(), y.numel());
    Collective(a, mem, send.raw(), send.nbytes(), buf.raw(), buf.nbytes(), [&](const void* in, void* out) {
      a.comm->AllToAll(in, send_bytes, out, recv_bytes, a.group);
    });
    Unpack(mem, buf, a.in_sizes, a.in_axis, y);
  } else if (a.mode == "slice") {
    CopyBlock(mem, x.raw(), x.shape(), a.starts, y.raw(), y.shape(), Zeros(y.shape().size()), y.shape(), es);
  } else if (a.mode == "zero_fill") {
    if (!y.nbytes()) return;
    if (a.keep) mem.Copy(y.raw(), x.raw(), x.nbytes());
    else mem.Zero(y.raw(), y.nbytes());
  } else {  // zero_pad
    if (y.nbytes()) mem.Zero(y.raw(), y.nbytes());
    CopyBlock(mem, x.raw(), x.shape(), Zeros(x.shape().size()), y.raw(), y.shape(), a.starts, x.shape(), es);
  }
}

}  // namespace oneflow
