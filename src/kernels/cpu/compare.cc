// CPU kernels: comparisons (Equal, Less, ...), logical And/Or/Xor, and Where.
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// out(bool) = g(a, b) with broadcasting; g sees ComputeType<T> (bool included for Equal).
template <typename G>
void CompareBinary(KernelContext& ctx, G g, bool allow_bool) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  OF_REQUIRE(a.dtype() == b.dtype(), ctx.node_desc(), ": inputs must share one dtype, got ",
             DTypeName(a.dtype()), " and ", DTypeName(b.dtype()));
  OF_CHECK(allow_bool || a.dtype() != DType::kBool, kUnsupported, ctx.node_desc(), ": bool inputs are not supported");
  DispatchAll(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    BroadcastBinary(ctx.pool(), a.data<T>(), a.shape(), b.data<T>(), b.shape(), out.data<bool>(), out.shape(),
                    [g](T x, T y) { return static_cast<bool>(g(static_cast<C>(x), static_cast<C>(y))); }, kCheapCost);
  });
}

void EqualKernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() == DType::kString || b.dtype() == DType::kString) {
    OF_REQUIRE(a.dtype() == b.dtype(), ctx.node_desc(), ": inputs must share one dtype, got ", DTypeName(a.dtype()),
               " and ", DTypeName(b.dtype()));
    Tensor& out = ctx.output(0);
    BroadcastBinary(ctx.pool(), a.strings(), a.shape(), b.strings(), b.shape(), out.data<bool>(), out.shape(),
                    [](const std::string& x, const std::string& y) { return x == y; }, kMathCost);
    return;
  }
  CompareBinary(ctx, [](auto x, auto y) { return x == y; }, true);
}
ONEFLOW_KERNEL(Equal, EqualKernel);
void LessKernel(KernelContext& ctx) { CompareBinary(ctx, [](auto x, auto y) { return x < y; }, false); }
ONEFLOW_KERNEL(Less, LessKernel);
void LessOrEqualKernel(KernelContext& ctx) { CompareBinary(ctx, [](auto x, auto y) { return x <= y; }, false); }
ONEFLOW_KERNEL(LessOrEqual, LessOrEqualKernel);
void GreaterKernel(KernelContext& ctx) { CompareBinary(ctx, [](auto x, auto y) { return x > y; }, false); }
ONEFLOW_KERNEL(Greater, GreaterKernel);
void GreaterOrEqualKernel(KernelContext& ctx) { CompareBinary(ctx, [](auto x, auto y) { return x >= y; }, false); }
ONEFLOW_KERNEL(GreaterOrEqual, GreaterOrEqualKernel);

template <typename G>
void LogicalBinary(KernelContext& ctx, G g) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  OF_CHECK(a.dtype() == DType::kBool && b.dtype() == DType::kBool, kUnsupported, ctx.node_desc(),
           ": inputs must be bool, got ", DTypeName(a.dtype()), " and ", DTypeName(b.dtype()));
  Tensor& out = ctx.output(0);
  BroadcastBinary(ctx.pool(), a.data<bool>(), a.shape(), b.data<bool>(), b.shape(), out.data<bool>(), out.shape(), g,
                  kCheapCost);
}

void AndKernel(KernelContext& ctx) { LogicalBinary(ctx, [](bool x, bool y) { return x && y; }); }
ONEFLOW_KERNEL(And, AndKernel);
void OrKernel(KernelContext& ctx) { LogicalBinary(ctx, [](bool x, bool y) { return x || y; }); }
ONEFLOW_KERNEL(Or, OrKernel);
void XorKernel(KernelContext& ctx) { LogicalBinary(ctx, [](bool x, bool y) { return x != y; }); }
ONEFLOW_KERNEL(Xor, XorKernel);

// Where copies elements, so it dispatches on element size rather than dtype.
template <typename T>
void WhereTyped(ThreadPool& pool, const bool* c, const T* x, const T* y, T* out, const BroadcastPlan& p) {
  const int r = static_cast<int>(p.dims.size());
  const int64_t inner = p.dims[r - 1];
  const int64_t sc = p.strides[0][r - 1], sx = p.strides[1][r - 1], sy = p.strides[2][r - 1];
  auto segment = [=](const bool* pc, const T* px, const T* py, T* po, int64_t len) {
    if (sc && sx && sy) {
      for (int64_t i = 0; i < len; ++i) po[i] = pc[i] ? px[i] : py[i];
    } else {
      for (int64_t i = 0; i < len; ++i) po[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
    }
  };
  pool.ParallelFor(p.numel, kCheapCost, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(static_cast<size_t>(r - 1));
    int64_t row = begin / inner, col = begin % inner;
    int64_t oc = 0, ox = 0, oy = 0;
    for (int d = r - 2; d >= 0; --d) {
      idx[d] = row % p.dims[d];
      row /= p.dims[d];
      oc += idx[d] * p.strides[0][d];
      ox += idx[d] * p.strides[1][d];
      oy += idx[d] * p.strides[2][d];
    }
    int64_t pos = begin;
    while (pos < end) {
      int64_t len = std::min(inner - col, end - pos);
      segment(c + oc + col * sc, x + ox + col * sx, y + oy + col * sy, out + pos, len);
      pos += len;
      col = 0;
      for (int d = r - 2; d >= 0; --d) {
        oc += p.strides[0][d];
        ox += p.strides[1][d];
        oy += p.strides[2][d];
        if (++idx[d] < p.dims[d]) break;
        oc -= p.strides[0][d] * p.dims[d];
        ox -= p.strides[1][d] * p.dims[d];
        oy -= p.strides[2][d] * p.dims[d];
        idx[d] = 0;
      }
    }
  });
}

void WhereKernel(KernelContext& ctx) {
  const Tensor& c = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  Tensor& out = ctx.output(0);
  OF_REQUIRE(c.dtype() == DType::kBool, ctx.node_desc(), ": condition must be bool, got ", DTypeName(c.dtype()));
  OF_REQUIRE(x.dtype() == y.dtype(), ctx.node_desc(), ": X and Y must share one dtype");
  if (out.numel() == 0) return;
  BroadcastPlan p = MakeBroadcastPlan({c.shape(), x.shape(), y.shape()}, out.shape());
  switch (DTypeSize(x.dtype())) {
    case 1: return WhereTyped(ctx.pool(), c.data<bool>(), x.data<uint8_t>(), y.data<uint8_t>(), out.data<uint8_t>(), p);
    case 2: return WhereTyped(ctx.pool(), c.data<bool>(), x.data<uint16_t>(), y.data<uint16_t>(), out.data<uint16_t>(), p);
    case 4: return WhereTyped(ctx.pool(), c.data<bool>(), x.data<uint32_t>(), y.data<uint32_t>(), out.data<uint32_t>(), p);
    case 8: return WhereTyped(ctx.pool(), c.data<bool>(), x.data<uint64_t>(), y.data<uint64_t>(), out.data<uint64_t>(), p);
    default: Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": Where on ", DTypeName(x.dtype()));
  }
}
ONEFLOW_KERNEL(Where, WhereKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
