// CUDA tensor kernels: the data-movement ops (Slice, Split, Concat, Expand, Tile, Pad constant,
// Gather, GatherElements, Where, Trilu) dispatched on element size so every dtype shares one
// instantiation; compares and logic (Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not, And,
// Or, Xor) with broadcasting; Range, CumSum, ArgMax/ArgMin; and the shape-only ops as views.
// Shape-like inputs (Slice's starts, Pad's pads, CumSum's axis, ...) are read on the host: a session
// hands them over as host tensors (engine/device_placement.h HostInputPositions); a kernel called
// directly with them in device memory reads them through a synchronous copy. Scalars that set no
// shape or launch configuration (Pad's constant_value, Trilu's k) are read by the device kernels
// themselves when they live in device memory, so no run waits for them and graphs stay capturable.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/infer_util.h"
#include "graph/ops/tensor_util.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow::cuda {
namespace {

// ---- Reading small shape-like inputs --------------------------------------------------------------
// Whether `p` is memory a kernel reads directly (device or managed), as opposed to host memory.
bool InDeviceMemory(const void* p) {
  cudaPointerAttributes attr{};
  OF_CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

// The bytes of `t` on the host: a synchronous copy when they live in device memory.
std::vector<char> HostBytes(const Tensor& t) {
  std::vector<char> bytes(t.nbytes());
  if (bytes.empty()) return bytes;
  if (InDeviceMemory(t.raw())) {
    cudaStream_t s = CurrentStream();
    OF_CUDA_CHECK(cudaMemcpyAsync(bytes.data(), t.raw(), bytes.size(), cudaMemcpyDeviceToHost, s));
    OF_CUDA_CHECK(cudaStreamSynchronize(s));
  } else {
    std::memcpy(bytes.data(), t.raw(), bytes.size());
  }
  return bytes;
}

// x viewed as [outer, dim(axis), inner]: the element counts before and after `axis`.
void SplitAtAxis(const Tensor& x, int64_t axis, int64_t& outer, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
}

std::vector<int64_t> HostInts(const Tensor& t, const std::string& node) {
  const std::vector<char> b = HostBytes(t);
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kInt64) {
    std::memcpy(v.data(), b.data(), b.size());
  } else {
    OF_REQUIRE(t.dtype() == DType::kInt32, node, ": expected an int32/int64 tensor, got ", DTypeName(t.dtype()));
    for (size_t i = 0; i < v.size(); ++i) {
      int32_t x;
      std::memcpy(&x, b.data() + 4 * i, 4);
      v[i] = x;
    }
  }
  return v;
}

// A scalar parameter read by the device kernel itself: through `dev` when it lives in device memory
// (no host read: the launch stays asynchronous and capturable), else by value (`bits`, its bytes).
struct ScalarArg {
  const void* dev = nullptr;
  uint64_t bits = 0;
};

ScalarArg ReadScalarArg(const Tensor& t) {
  ScalarArg a;
  if (InDeviceMemory(t.raw())) a.dev = t.raw();
  else std::memcpy(&a.bits, t.raw(), std::min<size_t>(sizeof(a.bits), DTypeSize(t.dtype())));
  return a;
}

// ---- Strided copies -----------------------------------------------------------------------------
// For each index tuple idx over `dims`: the source coordinate of dim d is idx*step + start
// (or idx mod src_dims for Tile); a source coordinate outside [0, src_dims) yields `fill`.
// Source and destination offsets are sums of coordinates times element strides.
struct CopyMap {
  int rank = 0;
  bool tile = false;
  int64_t dims[kMaxRank] = {};
  int64_t src_dims[kMaxRank] = {};
  int64_t src_strides[kMaxRank] = {};
  int64_t step[kMaxRank] = {};
  int64_t start[kMaxRank] = {};
  int64_t dst_strides[kMaxRank] = {};
};

// `fill_dev`, when set, holds the fill value in device memory (Pad's constant_value).
template <typename U>
__global__ void StridedCopyKernel(const U* __restrict__ x, U* __restrict__ y, int64_t n, CopyMap m, U fill,
                                  const U* __restrict__ fill_dev) {
  if (fill_dev) fill = *fill_dev;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t rest = i, src = 0, dst = 0;
    bool inside = true;
    for (int d = m.rank - 1; d >= 0; --d) {
      const int64_t idx = rest % m.dims[d];
      rest /= m.dims[d];
      const int64_t c = m.tile ? idx % m.src_dims[d] : idx * m.step[d] + m.start[d];
      inside = inside && c >= 0 && c < m.src_dims[d];
      src += c * m.src_strides[d];
      dst += idx * m.dst_strides[d];
    }
    y[dst] = inside ? x[src] : fill;
  }
}

std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> r(s.size());
  int64_t st = 1;
  for (size_t d = s.size(); d-- > 0;) {
    r[d] = st;
    st *= s[d];
  }
  return r;
}

// A map over `dims` with a contiguous destination of that shape and an identity source of shape
// `src` (same rank); callers then adjust steps/starts/strides.
CopyMap BaseMap(const Shape& dims, const Shape& src, const std::string& node) {
  OF_CHECK(dims.size() <= static_cast<size_t>(kMaxRank), kUnsupported, node, ": rank ", dims.size(), " > ", kMaxRank,
           " on CUDA");
  OF_REQUIRE(src.size() == dims.size(), node, ": rank mismatch");
  CopyMap m;
  m.rank = static_cast<int>(dims.size());
  const std::vector<int64_t> ss = Strides(src), ds = Strides(dims);
  for (int d = 0; d < m.rank; ++d) {
    m.dims[d] = dims[d];
    m.src_dims[d] = src[d];
    m.src_strides[d] = ss[d];
    m.step[d] = 1;
    m.dst_strides[d] = ds[d];
  }
  return m;
}

void LaunchCopy(size_t esz, const void* x, void* y, const CopyMap& m, uint64_t fill, const std::string& node,
                const void* fill_dev = nullptr) {
  int64_t n = 1;
  for (int d = 0; d < m.rank; ++d) n *= m.dims[d];
  if (n == 0) return;
  cudaStream_t s = CurrentStream();
  const bool known = DispatchBits(esz, [&](auto tag) {
    using U = decltype(tag);
    U f;
    std::memcpy(&f, &fill, sizeof(U));  // the fill's bytes (little-endian: the low ones)
    StridedCopyKernel<U><<<GridFor(n), kThreads, 0, s>>>(static_cast<const U*>(x), static_cast<U*>(y), n, m, f,
                                                         static_cast<const U*>(fill_dev));
  });
  if (!known) Fail(ErrorCode::kUnsupported, node, ": element size ", esz, " on CUDA");
  OF_CUDA_CHECK_LAUNCH("StridedCopyKernel");
}

void SliceFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const std::string& node = ctx.node_desc();
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(3)) axes = HostInts(ctx.input(3), node);
  if (ctx.has_input(4)) steps = HostInts(ctx.input(4), node);
  const std::vector<SliceAxis> sl =
      ComputeSlice(x.shape(), HostInts(ctx.input(1), node), HostInts(ctx.input(2), node), axes, steps, node);
  CopyMap m = BaseMap(y.shape(), x.shape(), node);
  for (int d = 0; d < m.rank; ++d) {
    OF_REQUIRE(sl[static_cast<size_t>(d)].count == y.dim(d), node, ": output shape disagrees with the slice");
    m.start[d] = sl[static_cast<size_t>(d)].start;
    m.step[d] = sl[static_cast<size_t>(d)].step;
  }
  LaunchCopy(DTypeSize(x.dtype()), x.raw(), y.raw(), m, 0, node);
}
ONEFLOW_CUDA_KERNEL(Slice, SliceFn);

// Split: each output is a slice along `axis` (its size from the output's shape).
void SplitFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::string& node = ctx.node_desc();
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), x.rank());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    OF_CHECK(ctx.has_output(i), kUnsupported, node, ": omitted Split outputs are not supported");
    Tensor& y = ctx.output(i);
    CopyMap m = BaseMap(y.shape(), x.shape(), node);
    m.start[axis] = offset;
    offset += y.dim(axis);
    OF_REQUIRE(offset <= x.dim(axis), node, ": outputs exceed the input along axis ", axis);
    LaunchCopy(DTypeSize(x.dtype()), x.raw(), y.raw(), m, 0, node);
  }
  OF_REQUIRE(offset == x.dim(axis), node, ": outputs cover ", offset, " of ", x.dim(axis), " along axis ", axis);
}
ONEFLOW_CUDA_KERNEL(Split, SplitFn);

// Concat: each input is copied into its region of Y (destination strides are Y's).
void ConcatFn(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), y.rank());
  const std::vector<int64_t> ys = Strides(y.shape());
  const size_t esz = DTypeSize(y.dtype());
  int64_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Tensor& x = ctx.input(i);
    OF_REQUIRE(x.dtype() == y.dtype() && x.rank() == y.rank(), node, ": input ", i, " does not match the output");
    CopyMap m = BaseMap(x.shape(), x.shape(), node);
    for (int d = 0; d < m.rank; ++d) m.dst_strides[d] = ys[static_cast<size_t>(d)];
    LaunchCopy(esz, x.raw(), static_cast<char*>(y.raw()) + offset * ys[static_cast<size_t>(axis)] * esz, m, 0, node);
    offset += x.dim(axis);
  }
  OF_REQUIRE(offset == y.dim(axis), node, ": inputs cover ", offset, " of ", y.dim(axis), " along axis ", axis);
}
ONEFLOW_CUDA_KERNEL(Concat, ConcatFn);

// Source map for broadcasting x (numpy rules) to `out`: stride 0 on broadcast dims.
CopyMap BroadcastSource(const Shape& out, const Shape& x, const std::string& node) {
  OF_REQUIRE(x.size() <= out.size(), node, ": input rank exceeds the output rank");
  Shape xe(out.size() - x.size(), 1);
  xe.insert(xe.end(), x.begin(), x.end());
  CopyMap m = BaseMap(out, xe, node);
  for (int d = 0; d < m.rank; ++d) {
    OF_REQUIRE(xe[d] == 1 || xe[d] == out[d], node, ": ", ShapeToString(x), " does not broadcast to ", ShapeToString(out));
    if (xe[d] == 1) {
      m.step[d] = 0;
      m.src_strides[d] = 0;
    }
  }
  return m;
}

void ExpandFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  LaunchCopy(DTypeSize(x.dtype()), x.raw(), y.raw(), BroadcastSource(y.shape(), x.shape(), ctx.node_desc()), 0,
             ctx.node_desc());
}
ONEFLOW_CUDA_KERNEL(Expand, ExpandFn);

void TileFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  CopyMap m = BaseMap(y.shape(), x.shape(), ctx.node_desc());
  m.tile = true;
  LaunchCopy(DTypeSize(x.dtype()), x.raw(), y.raw(), m, 0, ctx.node_desc());
}
ONEFLOW_CUDA_KERNEL(Tile, TileFn);

void PadFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  const std::string mode = ctx.attrs().GetString("mode", "constant");
  OF_CHECK(mode == "constant", kUnsupported, node, ": Pad mode '", mode, "' is not supported on CUDA");
  if (y.numel() == 0) return;
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) axes = HostInts(ctx.input(3), node);
  const std::vector<int64_t> pads =
      ExpandPads(x.rank(), HostInts(ctx.input(1), node), ctx.has_input(3) ? &axes : nullptr, node);
  // The fill value (its first element, as on the CPU) is read by the kernel where it lives.
  ScalarArg fill;
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    OF_REQUIRE(ctx.input(2).dtype() == x.dtype(), node, ": constant_value must have the data's dtype");
    fill = ReadScalarArg(ctx.input(2));
  }
  CopyMap m = BaseMap(y.shape(), x.shape(), node);
  for (int d = 0; d < m.rank; ++d) m.start[d] = -pads[static_cast<size_t>(d)];
  LaunchCopy(DTypeSize(x.dtype()), x.raw(), y.raw(), m, fill.bits, node, fill.dev);
}
ONEFLOW_CUDA_KERNEL(Pad, PadFn);

// ---- Gather / GatherElements ----------------------------------------------------------------------
// y[o, j, k] = x[o, indices[j], k] (indices flattened; negative ones count from the end). An index
// out of range cannot raise an error from the device: its row is zero-filled.
template <typename U, typename I>
__global__ void GatherKernel(const U* __restrict__ x, const I* __restrict__ idx, U* __restrict__ y, int64_t n,
                             int64_t num_idx, int64_t inner, int64_t axis_dim) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t k = i % inner;
    const int64_t j = (i / inner) % num_idx;
    const int64_t o = i / (inner * num_idx);
    int64_t a = static_cast<int64_t>(idx[j]);
    if (a < 0) a += axis_dim;
    y[i] = a >= 0 && a < axis_dim ? x[(o * axis_dim + a) * inner + k] : U(0);
  }
}

template <typename U>
void LaunchGather(DType idt, const void* x, const void* idx, void* y, int64_t n, int64_t num_idx, int64_t inner,
                  int64_t axis_dim, cudaStream_t s) {
  if (idt == DType::kInt64)
    GatherKernel<U, int64_t><<<GridFor(n), kThreads, 0, s>>>(static_cast<const U*>(x), static_cast<const int64_t*>(idx),
                                                             static_cast<U*>(y), n, num_idx, inner, axis_dim);
  else
    GatherKernel<U, int32_t><<<GridFor(n), kThreads, 0, s>>>(static_cast<const U*>(x), static_cast<const int32_t*>(idx),
                                                             static_cast<U*>(y), n, num_idx, inner, axis_dim);
}

void GatherFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(ind.dtype() == DType::kInt64 || ind.dtype() == DType::kInt32, node, ": indices must be int32 or int64");
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), x.rank());
  const int64_t n = y.numel();
  if (n == 0) return;
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  cudaStream_t s = CurrentStream();
  const int64_t num_idx = ind.numel(), axis_dim = x.dim(axis);
  const bool known = DispatchBits(DTypeSize(x.dtype()), [&](auto tag) {
    LaunchGather<decltype(tag)>(ind.dtype(), x.raw(), ind.raw(), y.raw(), n, num_idx, inner, axis_dim, s);
  });
  if (!known) Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(x.dtype()), " on CUDA");
  OF_CUDA_CHECK_LAUNCH("GatherKernel");
}
ONEFLOW_CUDA_KERNEL(Gather, GatherFn);

struct ElementsMap {
  int rank = 0;
  int axis = 0;
  int64_t dims[kMaxRank] = {};       // indices / output dims
  int64_t x_strides[kMaxRank] = {};  // data strides
  int64_t axis_dim = 0;
};

// y[i...] = x[i... with the axis coordinate replaced by indices[i...]]; out of range -> 0.
template <typename U, typename I>
__global__ void GatherElementsKernel(const U* __restrict__ x, const I* __restrict__ idx, U* __restrict__ y,
                                     int64_t n, ElementsMap m) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t a = static_cast<int64_t>(idx[i]);
    if (a < 0) a += m.axis_dim;
    int64_t rest = i, off = 0;
    for (int d = m.rank - 1; d >= 0; --d) {
      const int64_t c = rest % m.dims[d];
      rest /= m.dims[d];
      off += (d == m.axis ? a : c) * m.x_strides[d];
    }
    y[i] = a >= 0 && a < m.axis_dim ? x[off] : U(0);
  }
}

void GatherElementsFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind0 = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_CHECK(x.rank() <= kMaxRank, kUnsupported, node, ": rank > ", kMaxRank, " on CUDA");
  OF_REQUIRE(ind0.rank() == x.rank(), node, ": indices must have the rank of the data");
  OF_REQUIRE(ind0.dtype() == DType::kInt64 || ind0.dtype() == DType::kInt32, node, ": indices must be int32 or int64");
  const int64_t n = y.numel();
  if (n == 0) return;
  ElementsMap m;
  m.rank = static_cast<int>(x.rank());
  m.axis = static_cast<int>(NormalizeAxis(ctx.attrs().GetInt("axis", 0), x.rank()));
  m.axis_dim = x.dim(m.axis);
  const std::vector<int64_t> xs = Strides(x.shape());
  for (int d = 0; d < m.rank; ++d) {
    m.dims[d] = ind0.dim(d);
    m.x_strides[d] = xs[static_cast<size_t>(d)];
  }
  cudaStream_t s = CurrentStream();
  auto launch = [&](auto utag) {
    using U = decltype(utag);
    if (ind0.dtype() == DType::kInt64)
      GatherElementsKernel<U, int64_t><<<GridFor(n), kThreads, 0, s>>>(x.data<U>(), ind0.data<int64_t>(), y.data<U>(), n, m);
    else
      GatherElementsKernel<U, int32_t><<<GridFor(n), kThreads, 0, s>>>(x.data<U>(), ind0.data<int32_t>(), y.data<U>(), n, m);
  };
  if (!DispatchBits(DTypeSize(x.dtype()), launch))
    Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(x.dtype()), " on CUDA");
  OF_CUDA_CHECK_LAUNCH("GatherElementsKernel");
}
ONEFLOW_CUDA_KERNEL(GatherElements, GatherElementsFn);

// ---- Where, compares and logic --------------------------------------------------------------------
struct Broadcast3 {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};
};

Broadcast3 MakeBroadcast3(const Shape& out, const Shape* ins[3], const std::string& node) {
  OF_CHECK(out.size() <= static_cast<size_t>(kMaxRank), kUnsupported, node, ": rank > ", kMaxRank, " on CUDA");
  Broadcast3 m;
  m.rank = static_cast<int>(out.size());
  for (int d = 0; d < m.rank; ++d) m.dims[d] = out[static_cast<size_t>(d)];
  for (int k = 0; k < 3; ++k) {
    if (ins[k] == nullptr) continue;
    const Shape& s = *ins[k];
    OF_REQUIRE(s.size() <= out.size(), node, ": input ", ShapeToString(s), " has higher rank than ", ShapeToString(out));
    int64_t stride = 1;
    for (int d = m.rank - 1; d >= 0; --d) {
      const int sd = d - (m.rank - static_cast<int>(s.size()));
      const int64_t dim = sd >= 0 ? s[static_cast<size_t>(sd)] : 1;
      OF_REQUIRE(dim == 1 || dim == out[static_cast<size_t>(d)], node, ": ", ShapeToString(s),
                 " does not broadcast to ", ShapeToString(out));
      m.strides[k][d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  return m;
}

__device__ __forceinline__ void Offsets3(const Broadcast3& m, int64_t i, int64_t off[3]) {
  off[0] = off[1] = off[2] = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    const int64_t c = i % m.dims[d];
    i /= m.dims[d];
    off[0] += c * m.strides[0][d];
    off[1] += c * m.strides[1][d];
    off[2] += c * m.strides[2][d];
  }
}

template <typename U>
__global__ void WhereKernel(const bool* __restrict__ cond, const U* __restrict__ a, const U* __restrict__ b,
                            U* __restrict__ y, int64_t n, Broadcast3 m) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t off[3];
    Offsets3(m, i, off);
    y[i] = cond[off[0]] ? a[off[1]] : b[off[2]];
  }
}

void WhereFn(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& a = ctx.input(1);
  const Tensor& b = ctx.input(2);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(c.dtype() == DType::kBool, node, ": condition must be bool");
  const int64_t n = y.numel();
  if (n == 0) return;
  const Shape* ins[3] = {&c.shape(), &a.shape(), &b.shape()};
  const Broadcast3 m = MakeBroadcast3(y.shape(), ins, node);
  cudaStream_t s = CurrentStream();
  const bool* pc = c.data<bool>();
  const bool known = DispatchBits(DTypeSize(y.dtype()), [&](auto tag) {
    using U = decltype(tag);
    WhereKernel<U><<<GridFor(n), kThreads, 0, s>>>(pc, a.data<U>(), b.data<U>(), y.data<U>(), n, m);
  });
  if (!known) Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(y.dtype()), " on CUDA");
  OF_CUDA_CHECK_LAUNCH("WhereKernel");
}
ONEFLOW_CUDA_KERNEL(Where, WhereFn);

enum CompareOp : int { kEqual, kLess, kLessEqual, kGreater, kGreaterEqual, kAnd, kOr, kXor };

// Compares in f32 for halves (exact: f16/bf16 values are f32 values), natively otherwise.
template <typename T>
__global__ void CompareKernel(const T* __restrict__ a, const T* __restrict__ b, bool* __restrict__ y, int64_t n,
                              BroadcastMap m, int op) {
  using C = std::conditional_t<IsHalf<T>::value, float, T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t oa, ob;
    BroadcastOffsets(m, i, oa, ob);
    const C x = Convert<C>(a[oa]), z = Convert<C>(b[ob]);
    bool r;
    switch (op) {
      case kEqual: r = x == z; break;
      case kLess: r = x < z; break;
      case kLessEqual: r = x <= z; break;
      case kGreater: r = x > z; break;
      case kGreaterEqual: r = x >= z; break;
      case kAnd: r = static_cast<bool>(x) && static_cast<bool>(z); break;
      case kOr: r = static_cast<bool>(x) || static_cast<bool>(z); break;
      default: r = static_cast<bool>(x) != static_cast<bool>(z); break;
    }
    y[i] = r;
  }
}

template <int kOp>
void CompareFn(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(a.dtype() == b.dtype(), node, ": inputs must share one dtype");
  const int64_t n = y.numel();
  if (n == 0) return;
  const BroadcastMap m = MakeBroadcastMap(y.shape(), a.shape(), b.shape());
  cudaStream_t s = CurrentStream();
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    CompareKernel<T><<<GridFor(n), kThreads, 0, s>>>(a.data<T>(), b.data<T>(), y.data<bool>(), n, m, kOp);
  };
  switch (a.dtype()) {
    case DType::kFloat32: launch(float{}); break;
    case DType::kFloat16: launch(__half{}); break;
    case DType::kBFloat16: launch(__nv_bfloat16{}); break;
    case DType::kFloat64: launch(double{}); break;
    case DType::kInt32: launch(int32_t{}); break;
    case DType::kInt64: launch(int64_t{}); break;
    case DType::kBool: launch(bool{}); break;
    default: Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(a.dtype()), " on CUDA");
  }
  OF_CUDA_CHECK_LAUNCH("CompareKernel");
}
ONEFLOW_CUDA_KERNEL(Equal, CompareFn<kEqual>);
ONEFLOW_CUDA_KERNEL(Less, CompareFn<kLess>);
ONEFLOW_CUDA_KERNEL(LessOrEqual, CompareFn<kLessEqual>);
ONEFLOW_CUDA_KERNEL(Greater, CompareFn<kGreater>);
ONEFLOW_CUDA_KERNEL(GreaterOrEqual, CompareFn<kGreaterEqual>);
ONEFLOW_CUDA_KERNEL(And, CompareFn<kAnd>);
ONEFLOW_CUDA_KERNEL(Or, CompareFn<kOr>);
ONEFLOW_CUDA_KERNEL(Xor, CompareFn<kXor>);

__global__ void NotKernel(const bool* __restrict__ x, bool* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = !x[i];
}

void NotFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  OF_REQUIRE(x.dtype() == DType::kBool, ctx.node_desc(), ": Not takes a bool tensor");
  const int64_t n = x.numel();
  if (n == 0) return;
  NotKernel<<<GridFor(n), kThreads, 0, CurrentStream()>>>(x.data<bool>(), ctx.output(0).data<bool>(), n);
  OF_CUDA_CHECK_LAUNCH("NotKernel");
}
ONEFLOW_CUDA_KERNEL(Not, NotFn);

// ---- Range, Trilu -----------------------------------------------------------------------------------
template <typename T>
__global__ void RangeKernel(T* __restrict__ y, int64_t n, T start, T delta) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = static_cast<T>(start + static_cast<T>(i) * delta);
}

void RangeFn(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  const int64_t n = y.numel();
  if (n == 0) return;
  const std::vector<char> start = HostBytes(ctx.input(0)), delta = HostBytes(ctx.input(2));
  OF_REQUIRE(start.size() == DTypeSize(y.dtype()) && delta.size() == start.size(), node,
             ": start and delta must be scalars of the output's dtype");
  cudaStream_t s = CurrentStream();
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    T a, d;
    std::memcpy(&a, start.data(), sizeof(T));
    std::memcpy(&d, delta.data(), sizeof(T));
    RangeKernel<T><<<GridFor(n), kThreads, 0, s>>>(y.data<T>(), n, a, d);
  };
  switch (y.dtype()) {
    case DType::kFloat32: launch(float{}); break;
    case DType::kFloat64: launch(double{}); break;
    case DType::kInt32: launch(int32_t{}); break;
    case DType::kInt64: launch(int64_t{}); break;
    default: Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(y.dtype()), " on CUDA");
  }
  OF_CUDA_CHECK_LAUNCH("RangeKernel");
}
ONEFLOW_CUDA_KERNEL(Range, RangeFn);

// Keeps x[..., i, j] where j - i >= k (upper) or j - i <= k (lower), else 0. `k_dev`, when set,
// holds k in device memory (int64, or int32 when !k64); else `k` is it.
template <typename U>
__global__ void TriluKernel(const U* __restrict__ x, U* __restrict__ y, int64_t n, int64_t rows, int64_t cols,
                            int64_t k, const void* __restrict__ k_dev, bool k64, bool upper) {
  if (k_dev) k = k64 ? *static_cast<const int64_t*>(k_dev) : static_cast<int64_t>(*static_cast<const int32_t*>(k_dev));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const int64_t j = i % cols, r = (i / cols) % rows;
    const bool keep = upper ? j - r >= k : j - r <= k;
    y[i] = keep ? x[i] : U(0);
  }
}

void TriluFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(x.rank() >= 2, node, ": input must have rank >= 2");
  const int64_t n = x.numel();
  if (n == 0) return;
  // k is read by the kernel where it lives (a device k costs no host wait).
  int64_t k = 0;
  const void* k_dev = nullptr;
  bool k64 = true;
  if (ctx.has_input(1)) {
    const Tensor& kt = ctx.input(1);
    OF_REQUIRE(kt.numel() == 1, node, ": k must be a scalar");
    OF_REQUIRE(kt.dtype() == DType::kInt64 || kt.dtype() == DType::kInt32, node, ": k must be int64 (or int32), got ",
               DTypeName(kt.dtype()));
    k64 = kt.dtype() == DType::kInt64;
    const ScalarArg a = ReadScalarArg(kt);
    k_dev = a.dev;
    if (!k_dev) k = k64 ? static_cast<int64_t>(a.bits) : static_cast<int64_t>(static_cast<int32_t>(a.bits));
  }
  const bool upper = ctx.attrs().GetInt("upper", 1) != 0;
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  cudaStream_t s = CurrentStream();
  const bool known = DispatchBits(DTypeSize(x.dtype()), [&](auto tag) {
    using U = decltype(tag);
    TriluKernel<U><<<GridFor(n), kThreads, 0, s>>>(x.data<U>(), y.data<U>(), n, rows, cols, k, k_dev, k64, upper);
  });
  if (!known) Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(x.dtype()), " on CUDA");
  OF_CUDA_CHECK_LAUNCH("TriluKernel");
}
ONEFLOW_CUDA_KERNEL(Trilu, TriluFn);

// ---- Scans along one axis: CumSum, ArgMax/ArgMin --------------------------------------------------
// One thread per (outer, inner) line; consecutive threads take consecutive inner positions, so the
// reads of one step are coalesced. Halves accumulate in f32.
template <typename T>
__global__ void CumSumKernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t n, int64_t inner,
                             bool exclusive, bool reverse) {
  using C = std::conditional_t<IsHalf<T>::value, float, T>;
  const int64_t lines = outer * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; l < lines; l += stride) {
    const int64_t o = l / inner, c = l % inner;
    C acc = C(0);
    for (int64_t s = 0; s < n; ++s) {
      const int64_t r = reverse ? n - 1 - s : s;
      const int64_t off = (o * n + r) * inner + c;
      const C v = Convert<C>(x[off]);
      if (exclusive) {
        y[off] = Convert<T>(acc);
        acc += v;
      } else {
        acc += v;
        y[off] = Convert<T>(acc);
      }
    }
  }
}

// The axis sets the loop structure (outer/inner split), so it is needed on the host before the
// launch. A constant axis (the usual case) is read once, when the kernel is created; otherwise a
// session hands it over as a host tensor (device_placement.h HostInputPositions), and only a
// direct call with a device axis reads it back synchronously.
class CumSumOp final : public OpKernel {
 public:
  explicit CumSumOp(const KernelInitContext& c) {
    const Tensor* a = c.constant_input(1);
    if (a && a->numel() == 1 && (a->dtype() == DType::kInt64 || a->dtype() == DType::kInt32)) {
      axis_ = a->ToInt64Vector()[0];
      constant_axis_ = true;
    }
  }
  void Compute(KernelContext& ctx) override;

 private:
  bool constant_axis_ = false;
  int64_t axis_ = 0;
};
ONEFLOW_CUDA_KERNEL_CLASS(CumSum, CumSumOp);

void CumSumOp::Compute(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  int64_t axis_value = axis_;
  if (!constant_axis_) {
    const std::vector<int64_t> av = HostInts(ctx.input(1), node);
    OF_REQUIRE(av.size() == 1, node, ": axis must hold exactly one value");
    axis_value = av[0];
  }
  const int64_t axis = NormalizeAxis(axis_value, x.rank());
  if (x.numel() == 0) return;
  int64_t outer = 1, inner = 1;
  SplitAtAxis(x, axis, outer, inner);
  const int64_t n = x.dim(axis);
  const bool exclusive = ctx.attrs().GetInt("exclusive", 0) != 0, reverse = ctx.attrs().GetInt("reverse", 0) != 0;
  cudaStream_t s = CurrentStream();
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    CumSumKernel<T><<<GridFor(outer * inner), kThreads, 0, s>>>(x.data<T>(), y.data<T>(), outer, n, inner, exclusive, reverse);
  };
  switch (x.dtype()) {
    case DType::kFloat32: launch(float{}); break;
    case DType::kFloat16: launch(__half{}); break;
    case DType::kBFloat16: launch(__nv_bfloat16{}); break;
    case DType::kFloat64: launch(double{}); break;
    case DType::kInt32: launch(int32_t{}); break;
    case DType::kInt64: launch(int64_t{}); break;
    default: Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(x.dtype()), " on CUDA");
  }
  OF_CUDA_CHECK_LAUNCH("CumSumKernel");
}

// The index of the first (or, select_last_index, the last) maximum / minimum along the axis.
template <typename T>
__global__ void ArgKernel(const T* __restrict__ x, int64_t* __restrict__ y, int64_t outer, int64_t n, int64_t inner,
                          bool max, bool last) {
  using C = std::conditional_t<IsHalf<T>::value, float, T>;
  const int64_t lines = outer * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t l = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; l < lines; l += stride) {
    const int64_t o = l / inner, c = l % inner;
    const T* px = x + o * n * inner + c;
    C best = Convert<C>(px[0]);
    int64_t at = 0;
    for (int64_t s = 1; s < n; ++s) {
      const C v = Convert<C>(px[s * inner]);
      const bool better = max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
      if (better) {
        best = v;
        at = s;
      }
    }
    y[l] = at;
  }
}

template <bool kMax>
void ArgFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::string& node = ctx.node_desc();
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis", 0), x.rank());
  const bool last = ctx.attrs().GetInt("select_last_index", 0) != 0;
  if (y.numel() == 0) return;
  OF_REQUIRE(x.dim(axis) > 0, node, ": cannot reduce an empty axis");
  int64_t outer = 1, inner = 1;
  SplitAtAxis(x, axis, outer, inner);
  cudaStream_t s = CurrentStream();
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    ArgKernel<T><<<GridFor(outer * inner), kThreads, 0, s>>>(x.data<T>(), y.data<int64_t>(), outer, x.dim(axis), inner,
                                                             kMax, last);
  };
  switch (x.dtype()) {
    case DType::kFloat32: launch(float{}); break;
    case DType::kFloat16: launch(__half{}); break;
    case DType::kBFloat16: launch(__nv_bfloat16{}); break;
    case DType::kInt32: launch(int32_t{}); break;
    case DType::kInt64: launch(int64_t{}); break;
    default: Fail(ErrorCode::kUnsupported, node, ": dtype ", DTypeName(x.dtype()), " on CUDA");
  }
  OF_CUDA_CHECK_LAUNCH("ArgKernel");
}
ONEFLOW_CUDA_KERNEL(ArgMax, ArgFn<true>);
ONEFLOW_CUDA_KERNEL(ArgMin, ArgFn<false>);

#define OF_CUDA_STRINGIZE2(...) #__VA_ARGS__
#define OF_CUDA_STRINGIZE(...) OF_CUDA_STRINGIZE2(__VA_ARGS__)

}  // namespace

// Declared in device/cuda/cuda_check.h (for the "built for other architectures" error); it lives in
// a .cu file because nvcc defines __CUDA_ARCH_LIST__ ("800,900": the -arch list) only there.
const char* CompiledCudaArchList() {
#ifdef __CUDA_ARCH_LIST__
  return OF_CUDA_STRINGIZE(__CUDA_ARCH_LIST__);
#else
  return "unknown";
#endif
}

}  // namespace oneflow::cuda
