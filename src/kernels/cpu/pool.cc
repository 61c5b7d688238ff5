// CPU kernels: MaxPool, AveragePool, LpPool and their Global* forms, MaxUnpool.
#include <cmath>
#include <cstring>
#include <limits>

#include "graph/ops/spatial_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// Reductions over one window. Add folds one input element into the accumulator; Finish turns
// the accumulator into the output given how many window positions hit the input (`valid`) and
// how many hit the input or its explicit padding (`padded`).
template <typename T>
struct MaxOp {
  using Acc = T;
  Acc Init() const { return std::numeric_limits<T>::lowest(); }
  T PadValue() const { return std::numeric_limits<T>::lowest(); }
  Acc Add(Acc a, T v) const { return v > a ? v : a; }
  T Finish(Acc a, int64_t valid, int64_t) const { return valid > 0 ? a : T(0); }
  template <typename I>
  T FinishScaled(Acc a, I inv_valid, I) const { return inv_valid > I(0) ? a : T(0); }
};

// The divisor choice is a template parameter so the finishing loop has no branch and vectorizes.
template <typename T, bool kIncludePad>
struct AvgOp {
  using Acc = T;
  Acc Init() const { return T(0); }
  T PadValue() const { return T(0); }
  Acc Add(Acc a, T v) const { return a + v; }
  T Finish(Acc a, int64_t valid, int64_t padded) const {
    int64_t n = kIncludePad ? padded : valid;
    return n > 0 ? a / static_cast<T>(n) : T(0);
  }
  // With precomputed reciprocals of the counts (0 where a window misses the input entirely).
  template <typename I>
  T FinishScaled(Acc a, I inv_valid, I inv_padded) const { return a * (kIncludePad ? inv_padded : inv_valid); }
};

template <typename T>
struct LpOp {
  using Acc = T;
  int64_t p = 2;
  Acc Init() const { return T(0); }
  T PadValue() const { return T(0); }
  Acc Add(Acc a, T v) const {
    T m = v < T(0) ? -v : v;
    if (p == 1) return a + m;
    if (p == 2) return a + m * m;
    return a + static_cast<T>(std::pow(m, static_cast<T>(p)));
  }
  T Finish(Acc a, int64_t, int64_t) const {
    if (p == 1) return a;
    if (p == 2) return std::sqrt(a);
    return static_cast<T>(std::pow(a, T(1) / static_cast<T>(p)));
  }
  template <typename I>
  T FinishScaled(Acc a, I, I) const { return Finish(a, 0, 0); }
};

// 1-D, 2-D and 3-D pooling of one plane (volume). The input is first copied into a scratch
// buffer surrounded by the op's neutral padding value (lowest for max, 0 for sums), large enough
// for every window, including ceil_mode's overhang and the round-up of the last vector chunk. The
// hot loop then has no bounds checks at all: per output row it folds each window tap into a row
// of accumulators, running over a whole number of vectors so no scalar tail is left. Only the
// averaging divisor depends on the border; it factors into per-depth, per-row and per-column
// counts, whose reciprocals are precomputed once per call.
constexpr int64_t kChunk = 16;

struct PoolPlan {
  // Geometry as 3-D (depth, height, width); lower ranks use extent 1 for the missing leading dims.
  int64_t D, H, W, OD, OH, OW, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw;
  int64_t PD, PH, PW;  // scratch extents
  // Reciprocals of the per output depth/row/col tap counts inside the input (v) and inside
  // input+pads (t); 0 where the count is 0.
  std::vector<double> vd, td, vh, th, vw, tw;
};

PoolPlan MakePoolPlan(const PoolGeometry& g) {
  const size_t r = g.rank();
  auto at = [&](const std::vector<int64_t>& v, size_t i, int64_t fill) { return i + r >= 3 ? v[i + r - 3] : fill; };
  PoolPlan p;
  p.D = at(g.in, 0, 1), p.H = at(g.in, 1, 1), p.W = at(g.in, 2, 1);
  p.OD = at(g.out, 0, 1), p.OH = at(g.out, 1, 1), p.OW = at(g.out, 2, 1);
  p.kd = at(g.kernel, 0, 1), p.kh = at(g.kernel, 1, 1), p.kw = at(g.kernel, 2, 1);
  p.sd = at(g.stride, 0, 1), p.sh = at(g.stride, 1, 1), p.sw = at(g.stride, 2, 1);
  p.dd = at(g.dilation, 0, 1), p.dh = at(g.dilation, 1, 1), p.dw = at(g.dilation, 2, 1);
  p.pd = at(g.pad_begin, 0, 0), p.ph = at(g.pad_begin, 1, 0), p.pw = at(g.pad_begin, 2, 0);
  const int64_t ow_round = (p.OW + kChunk - 1) / kChunk * kChunk;
  p.PD = std::max(p.pd + p.D, (p.OD - 1) * p.sd + (p.kd - 1) * p.dd + 1);
  p.PH = std::max(p.ph + p.H, (p.OH - 1) * p.sh + (p.kh - 1) * p.dh + 1);
  p.PW = std::max(p.pw + p.W, (ow_round - 1) * p.sw + (p.kw - 1) * p.dw + 1);
  auto counts = [](int64_t out, int64_t k, int64_t s, int64_t d, int64_t pad, int64_t n, int64_t pad_end,
                   std::vector<double>& valid, std::vector<double>& total) {
    valid.assign(out, 0);
    total.assign(out, 0);
    for (int64_t o = 0; o < out; ++o) {
      int64_t v = 0, t = 0;
      for (int64_t i = 0; i < k; ++i) {
        const int64_t pos = o * s - pad + i * d;
        v += pos >= 0 && pos < n;
        t += pos < n + pad_end;
      }
      valid[o] = v ? 1.0 / static_cast<double>(v) : 0.0;
      total[o] = t ? 1.0 / static_cast<double>(t) : 0.0;
    }
  };
  counts(p.OD, p.kd, p.sd, p.dd, p.pd, p.D, at(g.pad_end, 0, 0), p.vd, p.td);
  counts(p.OH, p.kh, p.sh, p.dh, p.ph, p.H, at(g.pad_end, 1, 0), p.vh, p.th);
  counts(p.OW, p.kw, p.sw, p.dw, p.pw, p.W, at(g.pad_end, 2, 0), p.vw, p.tw);
  return p;
}

// Type of the averaging reciprocals: double for double data, float otherwise.
template <typename T>
using PoolInv = std::conditional_t<std::is_same_v<T, double>, double, float>;

// kDepth = false compiles the depth loops away for 1-D and 2-D pools (they measurably slow the
// 2-D case otherwise).
template <typename T, typename Op, int SW, bool kDepth>
void PoolRows(const T* buf, T* y, const PoolPlan& p, const Op& op, typename Op::Acc* acc, const PoolInv<T>* cv,
              const PoolInv<T>* ct) {
  const int64_t sw = SW > 0 ? SW : p.sw;
  const int64_t OD = kDepth ? p.OD : 1, kd = kDepth ? p.kd : 1;
  const int64_t n = (p.OW + kChunk - 1) / kChunk * kChunk;  // a whole number of vectors: no scalar tail
  const int64_t slice = p.PH * p.PW;
  for (int64_t od = 0; od < OD; ++od) {
    for (int64_t oh = 0; oh < p.OH; ++oh) {
      const T* top = buf + od * p.sd * slice + oh * p.sh * p.PW;
      for (int64_t o = 0; o < n; ++o) acc[o] = op.Init();
      for (int64_t a = 0; a < kd; ++a) {
        for (int64_t i = 0; i < p.kh; ++i) {
          for (int64_t j = 0; j < p.kw; ++j) {
            const T* src = top + a * p.dd * slice + i * p.dh * p.PW + j * p.dw;
            for (int64_t o = 0; o < n; ++o) acc[o] = op.Add(acc[o], src[o * sw]);
          }
        }
      }
      T* yr = y + (od * p.OH + oh) * p.OW;
      const PoolInv<T> rv = static_cast<PoolInv<T>>(p.vd[od] * p.vh[oh]);
      const PoolInv<T> rt = static_cast<PoolInv<T>>(p.td[od] * p.th[oh]);
      for (int64_t o = 0; o < p.OW; ++o) yr[o] = op.FinishScaled(acc[o], rv * cv[o], rt * ct[o]);
    }
  }
}

template <typename T, typename Op>
void PoolPlane(const T* x, T* y, const PoolPlan& p, const Op& op, T* buf, typename Op::Acc* acc, const PoolInv<T>* cv,
               const PoolInv<T>* ct) {
  const T pad = static_cast<T>(op.PadValue());
  for (int64_t z = 0; z < p.PD; ++z) {
    const int64_t d = z - p.pd;
    for (int64_t r = 0; r < p.PH; ++r) {
      T* dst = buf + (z * p.PH + r) * p.PW;
      const int64_t h = r - p.ph;
      if (d < 0 || d >= p.D || h < 0 || h >= p.H) {
        for (int64_t c = 0; c < p.PW; ++c) dst[c] = pad;
        continue;
      }
      for (int64_t c = 0; c < p.pw; ++c) dst[c] = pad;
      std::memcpy(dst + p.pw, x + (d * p.H + h) * p.W, static_cast<size_t>(p.W) * sizeof(T));
      for (int64_t c = p.pw + p.W; c < p.PW; ++c) dst[c] = pad;
    }
  }
  if (p.OD > 1 || p.kd > 1) PoolRows<T, Op, 0, true>(buf, y, p, op, acc, cv, ct);
  else if (p.sw == 1) PoolRows<T, Op, 1, false>(buf, y, p, op, acc, cv, ct);
  else if (p.sw == 2) PoolRows<T, Op, 2, false>(buf, y, p, op, acc, cv, ct);
  else PoolRows<T, Op, 0, false>(buf, y, p, op, acc, cv, ct);
}

// Any-rank pooling of one plane with bounds checks everywhere, for MaxPool's Indices output
// (flat input positions, row-major or, with storage_order 1, column-major within the plane) and
// for inputs with more than 3 spatial dims.
template <typename T, typename Op>
void PoolNDPlane(const T* x, T* y, int64_t* indices, int64_t index_base, const PoolGeometry& g, const Op& op,
                 bool column_major) {
  const size_t r = g.rank();
  std::vector<int64_t> in_stride(r), col_stride(r);
  int64_t s = 1, cs = 1;
  for (size_t d = r; d-- > 0;) { in_stride[d] = s; s *= g.in[d]; }
  for (size_t d = 0; d < r; ++d) { col_stride[d] = cs; cs *= g.in[d]; }
  int64_t out_n = 1, win_n = 1;
  for (size_t d = 0; d < r; ++d) { out_n *= g.out[d]; win_n *= g.kernel[d]; }
  std::vector<int64_t> o(r, 0), k(r), pos(r);
  for (int64_t oi = 0; oi < out_n; ++oi) {
    typename Op::Acc acc = op.Init();
    int64_t valid = 0, padded = 0, best = -1;
    std::fill(k.begin(), k.end(), 0);
    for (int64_t wi = 0; wi < win_n; ++wi) {
      bool inside = true, in_pad = true;
      int64_t off = 0, coff = 0;
      for (size_t d = 0; d < r; ++d) {
        pos[d] = o[d] * g.stride[d] - g.pad_begin[d] + k[d] * g.dilation[d];
        if (pos[d] < 0 || pos[d] >= g.in[d]) inside = false;
        if (pos[d] >= g.in[d] + g.pad_end[d]) in_pad = false;
        off += pos[d] * in_stride[d];
        coff += pos[d] * col_stride[d];
      }
      if (in_pad) ++padded;
      if (inside) {
        ++valid;
        T v = x[off];
        typename Op::Acc next = op.Add(acc, v);
        if (indices && (best < 0 || next != acc)) best = column_major ? coff : off;
        acc = next;
      }
      for (size_t d = r; d-- > 0;) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
    }
    y[oi] = op.Finish(acc, valid, padded);
    if (indices) indices[oi] = index_base + std::max<int64_t>(best, 0);
    for (size_t d = r; d-- > 0;) {
      if (++o[d] < g.out[d]) break;
      o[d] = 0;
    }
  }
}

PoolGeometry GeometryFor(const KernelContext& ctx, const Tensor& x, bool global) {
  OF_REQUIRE(x.rank() >= 3, ctx.node_desc(), ": input must be [N, C, D1, ...]");
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  return ComputePoolGeometry(ctx.attrs(), in, ctx.node_desc(), global);
}

template <typename T, typename Op>
void RunPool(KernelContext& ctx, const Tensor& x, Tensor& y, Tensor* indices, const PoolGeometry& g, const Op& op,
             bool column_major) {
  const int64_t planes = x.dim(0) * x.dim(1);
  int64_t in_plane = 1, out_plane = 1, win = 1;
  for (size_t d = 0; d < g.rank(); ++d) { in_plane *= g.in[d]; out_plane *= g.out[d]; win *= g.kernel[d]; }
  const T* px = x.data<T>();
  T* py = y.data<T>();
  int64_t* pi = indices ? indices->data<int64_t>() : nullptr;
  const bool fast = !indices && g.rank() <= 3;
  PoolPlan plan;
  std::vector<PoolInv<T>> cv, ct;
  if (fast) {
    plan = MakePoolPlan(g);
    cv.assign(plan.vw.begin(), plan.vw.end());
    ct.assign(plan.tw.begin(), plan.tw.end());
  }
  ctx.pool().ParallelFor(planes, static_cast<double>(out_plane * win) * 2.0, [&](int64_t begin, int64_t end) {
    std::vector<T> buf(fast ? static_cast<size_t>(plan.PD * plan.PH * plan.PW) : 0);
    std::vector<typename Op::Acc> acc(fast ? static_cast<size_t>(plan.OW + kChunk) : 0);
    for (int64_t p = begin; p < end; ++p) {
      if (fast) PoolPlane(px + p * in_plane, py + p * out_plane, plan, op, buf.data(), acc.data(), cv.data(), ct.data());
      else PoolNDPlane(px + p * in_plane, py + p * out_plane, pi ? pi + p * out_plane : nullptr, p * in_plane, g, op,
                       column_major);
    }
  });
}

// f16/bf16 are pooled in float: convert in, compute, convert out.
Tensor ToFloat(const Tensor& t) {
  Tensor f = Tensor::Uninitialized(DType::kFloat32, t.shape());
  float* pf = f.data<float>();
  DispatchAll(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsHalfType<T>) {
      const T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) pf[i] = static_cast<float>(p[i]);
    }
  });
  return f;
}

void FromFloat(const Tensor& f, Tensor& t) {
  const float* pf = f.data<float>();
  DispatchAll(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kIsHalfType<T>) {
      T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = T(pf[i]);
    }
  });
}

enum class PoolKind { kMax, kAvg, kLp };

void PoolKernel(KernelContext& ctx, PoolKind kind, bool global) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  Tensor* indices = ctx.has_output(1) ? &ctx.output(1) : nullptr;
  PoolGeometry g = GeometryFor(ctx, x, global);
  if (x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16) {
    Tensor xf = ToFloat(x);
    Tensor yf = Tensor::Uninitialized(DType::kFloat32, y.shape());
    KernelContext sub(ctx.node(), ctx.pool());
    sub.inputs() = {&xf};
    sub.outputs() = {&yf};
    if (indices) sub.outputs().push_back(indices);
    PoolKernel(sub, kind, global);
    FromFloat(yf, y);
    return;
  }
  const bool column_major = ctx.attrs().GetInt("storage_order", 0) != 0;
  if (kind == PoolKind::kMax) {
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      RunPool<T>(ctx, x, y, indices, g, MaxOp<T>{}, column_major);
    });
    return;
  }
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (kind == PoolKind::kAvg) {
      if (ctx.attrs().GetInt("count_include_pad", 0) != 0) RunPool<T>(ctx, x, y, nullptr, g, AvgOp<T, true>{}, false);
      else RunPool<T>(ctx, x, y, nullptr, g, AvgOp<T, false>{}, false);
    } else {
      LpOp<T> op;
      op.p = ctx.attrs().GetInt("p", 2);
      OF_REQUIRE(op.p >= 1, ctx.node_desc(), ": p must be positive");
      RunPool<T>(ctx, x, y, nullptr, g, op, false);
    }
  });
}

// Global pools reduce each contiguous plane; a dedicated loop beats the windowed path.
template <typename T, typename Op>
void GlobalPool(KernelContext& ctx, const Tensor& x, Tensor& y, const Op& op) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t n = planes > 0 ? x.numel() / planes : 0;
  const T* px = x.data<T>();
  T* py = y.data<T>();
  ctx.pool().ParallelFor(planes, static_cast<double>(n), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T* src = px + p * n;
      // Several partial accumulators break the dependency chain so the loop vectorizes.
      constexpr int kLanes = 16;
      typename Op::Acc part[kLanes];
      for (int l = 0; l < kLanes; ++l) part[l] = op.Init();
      int64_t i = 0;
      for (; i + kLanes <= n; i += kLanes)
        for (int l = 0; l < kLanes; ++l) part[l] = op.Add(part[l], src[i + l]);
      typename Op::Acc acc = op.Init();
      for (; i < n; ++i) acc = op.Add(acc, src[i]);
      for (int l = 0; l < kLanes; ++l) acc = op.Combine(acc, part[l]);
      py[p] = op.Finish(acc, n, n);
    }
  });
}

template <typename Base>
struct Combinable : Base {
  using Acc = typename Base::Acc;
  Acc Combine(Acc a, Acc b) const { return this->Add(a, b); }
};
template <typename T>
struct LpCombinable : LpOp<T> {
  T Combine(T a, T b) const { return a + b; }  // partial sums of |x|^p simply add
};

void GlobalPoolKernel(KernelContext& ctx, PoolKind kind) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(x.rank() >= 3, ctx.node_desc(), ": input must be [N, C, D1, ...]");
  if (x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16) {
    Tensor xf = ToFloat(x);
    Tensor yf = Tensor::Uninitialized(DType::kFloat32, y.shape());
    KernelContext sub(ctx.node(), ctx.pool());
    sub.inputs() = {&xf};
    sub.outputs() = {&yf};
    GlobalPoolKernel(sub, kind);
    FromFloat(yf, y);
    return;
  }
  if (kind == PoolKind::kMax) {
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      GlobalPool<T>(ctx, x, y, Combinable<MaxOp<T>>{});
    });
    return;
  }
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (kind == PoolKind::kAvg) {
      GlobalPool<T>(ctx, x, y, Combinable<AvgOp<T, false>>{});
    } else {
      LpCombinable<T> op;
      op.p = ctx.attrs().GetInt("p", 2);
      OF_REQUIRE(op.p >= 1, ctx.node_desc(), ": p must be positive");
      GlobalPool<T>(ctx, x, y, op);
    }
  });
}

void MaxPoolKernel(KernelContext& ctx) { PoolKernel(ctx, PoolKind::kMax, false); }
ONEFLOW_KERNEL(MaxPool, MaxPoolKernel);
void AveragePoolKernel(KernelContext& ctx) { PoolKernel(ctx, PoolKind::kAvg, false); }
ONEFLOW_KERNEL(AveragePool, AveragePoolKernel);
void LpPoolKernel(KernelContext& ctx) { PoolKernel(ctx, PoolKind::kLp, false); }
ONEFLOW_KERNEL(LpPool, LpPoolKernel);
void GlobalMaxPoolKernel(KernelContext& ctx) { GlobalPoolKernel(ctx, PoolKind::kMax); }
ONEFLOW_KERNEL(GlobalMaxPool, GlobalMaxPoolKernel);
void GlobalAveragePoolKernel(KernelContext& ctx) { GlobalPoolKernel(ctx, PoolKind::kAvg); }
ONEFLOW_KERNEL(GlobalAveragePool, GlobalAveragePoolKernel);
void GlobalLpPoolKernel(KernelContext& ctx) { GlobalPoolKernel(ctx, PoolKind::kLp); }
ONEFLOW_KERNEL(GlobalLpPool, GlobalLpPoolKernel);

// MaxUnpool scatters X into a zero tensor at the flat positions MaxPool's Indices recorded. The
// indices address the default unpooled shape; an explicit output_shape places that shape at the
// output's origin (as the ONNX reference does).
void MaxUnpoolKernel(KernelContext& ctx) {
  const std::string node = ctx.node_desc();
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(ind.shape() == x.shape(), node, ": indices must have the shape of X");
  OF_REQUIRE(x.rank() >= 3 && y.rank() == x.rank(), node, ": X must be [N, C, D1, ...]");
  const size_t r = static_cast<size_t>(x.rank() - 2);
  std::vector<int64_t> k = ctx.attrs().GetInts("kernel_shape");
  std::vector<int64_t> s = ctx.attrs().GetInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> p = ctx.attrs().GetInts("pads", std::vector<int64_t>(2 * r, 0));
  OF_REQUIRE(k.size() == r && s.size() == r && p.size() == 2 * r, node, ": kernel_shape/strides/pads do not match");
  Shape inferred = {x.dim(0), x.dim(1)};
  // Inference bounds these attributes only when it computes the shape itself (no output_shape).
  for (size_t d = 0; d < r; ++d) {
    OF_REQUIRE(k[d] >= 1 && k[d] <= kMaxWindowAttr && s[d] >= 1 && s[d] <= kMaxWindowAttr && p[d] >= 0 &&
                   p[d] <= kMaxWindowAttr && p[d + r] >= 0 && p[d + r] <= kMaxWindowAttr,
               node, ": kernel_shape and strides must be in [1, 2^31] and pads in [0, 2^31]");
    inferred.push_back(CheckedAdd(CheckedMul(x.dim(d + 2) - 1, s[d], node, "the unpooled size"),
                                  k[d] - p[d] - p[d + r], node, "the unpooled size"));
  }
  const int64_t total = NumElements(inferred);
  const bool same = inferred == y.shape();
  std::memset(y.raw(), 0, y.nbytes());
  const int64_t* pi = ind.data<int64_t>();
  DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      OF_CHECK(pi[i] >= 0 && pi[i] < total, kRuntime, node, ": index ", pi[i], " is out of range for ",
               ShapeToString(inferred));
      if (same) {
        py[pi[i]] = px[i];
        continue;
      }
      int64_t rem = pi[i], off = 0, mul = 1;
      bool inside = true;
      for (size_t d = inferred.size(); d-- > 0;) {
        const int64_t c = rem % inferred[d];
        rem /= inferred[d];
        if (c >= y.dim(static_cast<int64_t>(d))) inside = false;
        off += c * mul;
        mul *= y.dim(static_cast<int64_t>(d));
      }
      if (inside) py[off] = px[i];
    }
  });
}
ONEFLOW_KERNEL(MaxUnpool, MaxUnpoolKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
