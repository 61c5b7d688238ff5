// CUDA elementwise kernels: unary ops and activations, binary ops with numpy broadcasting, Cast,
// and the shared activation / broadcast launchers. f16/bf16 compute in f32. Contiguous paths move
// 16 bytes per thread per step; each template is instantiated once, for the dtypes listed here.
#include <cmath>
#include <cstring>
#include <limits>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/ops/binary_ops.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/unary_math.cuh"

namespace oneflow::cuda {
namespace {

// y = op(x) over n elements; kVec elements per access (16 bytes when the pointers allow).
template <typename T, int kVec>
__global__ void UnaryKernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, UnaryArgs p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nvec = n / kVec;
  for (int64_t i = start; i < nvec; i += stride) {
    Pack<T, kVec> a = reinterpret_cast<const Pack<T, kVec>*>(x)[i];
#pragma unroll
    for (int k = 0; k < kVec; ++k) a.v[k] = Convert<T>(EvalUnary(p, Convert<float>(a.v[k])));
    reinterpret_cast<Pack<T, kVec>*>(y)[i] = a;
  }
  for (int64_t i = nvec * kVec + start; i < n; i += stride) y[i] = Convert<T>(EvalUnary(p, Convert<float>(x[i])));
}

template <typename T>
void LaunchUnary(const T* x, T* y, int64_t n, const UnaryArgs& p, cudaStream_t stream) {
  if (n == 0) return;
  constexpr int kVec = 16 / sizeof(T);
  if (Aligned16(x) && Aligned16(y)) {
    UnaryKernel<T, kVec><<<GridFor((n + kVec - 1) / kVec), kThreads, 0, stream>>>(x, y, n, p);
  } else {
    UnaryKernel<T, 1><<<GridFor(n), kThreads, 0, stream>>>(x, y, n, p);
  }
  OF_CUDA_CHECK_LAUNCH("UnaryKernel");
}

void RunUnary(KernelContext& ctx, const UnaryArgs& p) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  DispatchFloat(x.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
    using T = decltype(tag);
    LaunchUnary<T>(x.data<T>(), y.data<T>(), x.numel(), p, CurrentStream());
  });
}

// A standalone unary row with its parameters from the node's attributes.
template <UnaryOpId kId>
void UnaryRowFn(KernelContext& ctx) {
  RunUnary(ctx, RowArgs(kId, ctx.attrs(), ctx.node_desc()));
}

// Every standalone unary row of graph/op_list.h runs UnaryRowFn.
void RegisterUnaryRows(KernelRegistry& r) {
#define OF_REGISTER_ROW(Op) \
  if constexpr (unary::Op::kStandalone) r.RegisterFn(OpId::k##Op, UnaryRowFn<UnaryOpId::k##Op>, DeviceType::kCuda);
  ONEFLOW_UNARY_OPS(OF_REGISTER_ROW)
#undef OF_REGISTER_ROW
}
ONEFLOW_KERNEL_TABLE(RegisterUnaryRows);

// ---- Binary -----------------------------------------------------------------------------------
// One binary row (graph/ops/binary_ops.h) by its run-time id: the formulas carry the CPU kernels'
// integer semantics (numpy's wrapping, x / 0 = 0) and NaN-propagating Max/Min.
template <typename C>
__device__ __forceinline__ C ApplyBinary(int op, C a, C b) {
  switch (op) {
#define OF_BINARY_CASE(Op) \
  case static_cast<int>(BinaryOpId::k##Op): return binary::Op::Fwd(a, b);
    ONEFLOW_BINARY_OPS(OF_BINARY_CASE)
#undef OF_BINARY_CASE
    default: return a;
  }
}

// Computation type: f32 for floating inputs, the type itself for integers.
template <typename T>
using ComputeT = std::conditional_t<std::is_integral_v<T>, T, float>;

template <typename T, int kVec>
__global__ void BinarySameShapeKernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y,
                                      int64_t n, int op) {
  using C = ComputeT<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nvec = n / kVec;
  for (int64_t i = start; i < nvec; i += stride) {
    const Pack<T, kVec> va = reinterpret_cast<const Pack<T, kVec>*>(a)[i];
    const Pack<T, kVec> vb = reinterpret_cast<const Pack<T, kVec>*>(b)[i];
    Pack<T, kVec> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      out.v[k] = Convert<T>(ApplyBinary<C>(op, Convert<C>(va.v[k]), Convert<C>(vb.v[k])));
    reinterpret_cast<Pack<T, kVec>*>(y)[i] = out;
  }
  for (int64_t i = nvec * kVec + start; i < n; i += stride)
    y[i] = Convert<T>(ApplyBinary<C>(op, Convert<C>(a[i]), Convert<C>(b[i])));
}

template <typename T>
__global__ void BinaryBroadcastKernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ y,
                                      int64_t n, int op, BroadcastMap m) {
  using C = ComputeT<T>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t oa, ob;
    BroadcastOffsets(m, i, oa, ob);
    y[i] = Convert<T>(ApplyBinary<C>(op, Convert<C>(a[oa]), Convert<C>(b[ob])));
  }
}

template <typename T>
void LaunchBinary(const Tensor& a, const Tensor& b, Tensor& y, int op, cudaStream_t stream) {
  const int64_t n = y.numel();
  if (n == 0) return;
  if (a.shape() == y.shape() && b.shape() == y.shape()) {
    constexpr int kVec = 16 / sizeof(T);
    if (Aligned16(a.raw()) && Aligned16(b.raw()) && Aligned16(y.raw())) {
      BinarySameShapeKernel<T, kVec><<<GridFor((n + kVec - 1) / kVec), kThreads, 0, stream>>>(
          a.data<T>(), b.data<T>(), y.data<T>(), n, op);
    } else {
      BinarySameShapeKernel<T, 1><<<GridFor(n), kThreads, 0, stream>>>(a.data<T>(), b.data<T>(), y.data<T>(), n, op);
    }
  } else {
    const BroadcastMap m = MakeBroadcastMap(y.shape(), a.shape(), b.shape());
    BinaryBroadcastKernel<T><<<GridFor(n), kThreads, 0, stream>>>(a.data<T>(), b.data<T>(), y.data<T>(), n, op, m);
  }
  OF_CUDA_CHECK_LAUNCH("BinaryKernel");
}

template <BinaryOpId kId>
void BinaryFn(KernelContext& ctx) {
  constexpr int kOp = static_cast<int>(kId);
  constexpr bool kIntegers = kId != BinaryOpId::kPow;  // integer powers stay on the CPU's exact kernel
  OF_CHECK(ctx.num_inputs() == 2, kUnsupported, ctx.node_desc(), ": CUDA kernel takes exactly 2 inputs");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(a.dtype() == b.dtype(), ctx.node_desc(), ": input dtypes differ");
  cudaStream_t s = CurrentStream();
  switch (a.dtype()) {
    case DType::kInt32: if (kIntegers) return LaunchBinary<int32_t>(a, b, y, kOp, s); break;
    case DType::kInt64: if (kIntegers) return LaunchBinary<int64_t>(a, b, y, kOp, s); break;
    default: break;
  }
  if (IsIntegerDType(a.dtype()))
    Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": dtype ", DTypeName(a.dtype()), " is not supported on CUDA");
  DispatchFloat(a.dtype(), ctx.node_desc().c_str(), [&](auto tag) { LaunchBinary<decltype(tag)>(a, b, y, kOp, s); });
}

// Every binary row runs BinaryFn; Max and Min take two inputs here (the variadic forms fall back to the CPU).
void RegisterBinaryRows(KernelRegistry& r) {
#define OF_REGISTER_BINARY_ROW(Op) r.RegisterFn(OpId::k##Op, BinaryFn<BinaryOpId::k##Op>, DeviceType::kCuda);
  ONEFLOW_BINARY_OPS(OF_REGISTER_BINARY_ROW)
#undef OF_REGISTER_BINARY_ROW
}
ONEFLOW_KERNEL_TABLE(RegisterBinaryRows);

// ---- Cast and broadcast copies -----------------------------------------------------------------
// Float -> integer saturates as on the CPU (SaturatingCast: NaN -> 0, out of range -> the nearest
// end). cvt.rzi does that in hardware, but a C++ cast out of range is UB the compiler may exploit.
template <typename D, typename S>
__device__ __forceinline__ D CastValue(S v) {
  if constexpr (std::is_integral_v<D> && !std::is_integral_v<S>) {
    using C = std::conditional_t<std::is_same_v<S, double>, double, float>;
    const C f = Convert<C>(v);
    constexpr C kLowest = static_cast<C>(std::numeric_limits<D>::lowest());
    constexpr C kPastMax = static_cast<C>(std::numeric_limits<D>::max() / 2 + 1) * C(2);
    if (f != f) return D(0);
    if (f <= kLowest) return std::numeric_limits<D>::lowest();
    if (f >= kPastMax) return std::numeric_limits<D>::max();
    return static_cast<D>(f);
  } else {
    return Convert<D>(v);
  }
}

template <typename S, typename D>
__global__ void CastKernel(const S* __restrict__ x, D* __restrict__ y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = CastValue<D>(x[i]);
}

// Calls fn(T{}) for the dtypes Cast supports on CUDA.
template <typename Fn>
void DispatchCastType(DType dt, const std::string& what, Fn&& fn) {
  switch (dt) {
    case DType::kFloat32: fn(float{}); return;
    case DType::kFloat16: fn(__half{}); return;
    case DType::kBFloat16: fn(__nv_bfloat16{}); return;
    case DType::kFloat64: fn(double{}); return;
    case DType::kInt32: fn(int32_t{}); return;
    case DType::kInt64: fn(int64_t{}); return;
    default: Fail(ErrorCode::kUnsupported, what, ": Cast of ", DTypeName(dt), " is not supported on CUDA");
  }
}

void CastFn(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t n = x.numel();
  cudaStream_t s = CurrentStream();
  if (x.dtype() == y.dtype()) {
    if (n) OF_CUDA_CHECK(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, s));
    return;
  }
  DispatchCastType(x.dtype(), ctx.node_desc(), [&](auto src) {
    DispatchCastType(y.dtype(), ctx.node_desc(), [&](auto dst) {
      using S = decltype(src);
      using D = decltype(dst);
      if (n) CastKernel<S, D><<<GridFor(n), kThreads, 0, s>>>(x.data<S>(), y.data<D>(), n);
    });
  });
  OF_CUDA_CHECK_LAUNCH("CastKernel");
}
ONEFLOW_CUDA_KERNEL(Cast, CastFn);

template <typename U>
__global__ void BroadcastCopyKernel(const U* __restrict__ src, U* __restrict__ dst, int64_t n, BroadcastMap m) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t o, unused;
    BroadcastOffsets(m, i, o, unused);
    dst[i] = src[o];
  }
}

}  // namespace

void LaunchActivationInPlace(DType dt, void* data, int64_t n, const ActivationParams& act, cudaStream_t stream) {
  if (act.kind == Activation::kNone) return;
  OF_CHECK(act.kind > Activation::kNone && act.kind < Activation::kCount, kInternal, "unknown activation code ",
           static_cast<int>(act.kind));
  UnaryArgs p;
  p.op = static_cast<int>(act.kind);
  for (int i = 0; i < unary::kMaxParams; ++i) p.p[i] = act.params[i];
  DispatchFloat(dt, "fused activation", [&](auto tag) {
    using T = decltype(tag);
    LaunchUnary<T>(static_cast<const T*>(data), static_cast<T*>(data), n, p, stream);
  });
}

void LaunchBroadcastTo(DType dt, const void* src, const Shape& src_shape, void* dst, const Shape& dst_shape,
                       cudaStream_t stream) {
  const int64_t n = NumElements(dst_shape);
  if (n == 0) return;
  const BroadcastMap m = MakeBroadcastMap(dst_shape, src_shape, Shape{});
  const bool known = DispatchBits(DTypeSize(dt), [&](auto tag) {
    using U = decltype(tag);
    BroadcastCopyKernel<U><<<GridFor(n), kThreads, 0, stream>>>(static_cast<const U*>(src), static_cast<U*>(dst), n, m);
  });
  if (!known) Fail(ErrorCode::kUnsupported, "broadcast copy of ", DTypeName(dt), " on CUDA");
  OF_CUDA_CHECK_LAUNCH("BroadcastCopyKernel");
}

}  // namespace oneflow::cuda
