// CPU kernels: MaxPool, AveragePool, LpPool and their Global* forms, MaxUnpool.
#include <cmath>
#include <cstring>
#include <limits>

#include "graph/ops/spatial_util.h"
#include "kernels/cpu/spatial_kernels.h"

namespace oneflow {
namespace {

// Reductions over one window. Add folds one input element into the accumulator; Finish turns
// the accumulator into the output given how many window positions hit the input (`valid`) and
// how many hit the input or its explicit padding (`padded`).
template <typename T>
struct MaxOp {
  using Acc = T;
  Acc Init() const { return std::numeric_limits<T>::lowest(); }
  Acc Add(Acc a, T v) const { return v > a ? v : a; }
  T Finish(Acc a, int64_t valid, int64_t) const { return valid > 0 ? a : T(0); }
};

template <typename T>
struct AvgOp {
  using Acc = T;
  bool count_include_pad = false;
  Acc Init() const { return T(0); }
  Acc Add(Acc a, T v) const { return a + v; }
  T Finish(Acc a, int64_t valid, int64_t padded) const {
    int64_t n = count_include_pad ? padded : valid;
    return n > 0 ? a / static_cast<T>(n) : T(0);
  }
};

template <typename T>
struct LpOp {
  using Acc = T;
  int64_t p = 2;
  Acc Init() const { return T(0); }
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
};

// 1-D and 2-D pooling of one plane. Output positions whose window lies entirely inside the
// input are computed row by row with no bounds checks (the inner loop runs over output columns
// so it vectorizes); the remaining border positions take the bounds-checked path.
struct Geo2 {
  int64_t H, W, OH, OW, kh, kw, sh, sw, dh, dw, ph, pw, ph_end, pw_end;
};

template <typename T, typename Op>
T PoolAt2D(const T* x, const Geo2& g, const Op& op, int64_t oh, int64_t ow) {
  const int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  typename Op::Acc acc = op.Init();
  int64_t vh = 0, vw = 0, ph = 0, pw = 0;
  for (int64_t k = 0; k < g.kh; ++k) {
    int64_t h = h0 + k * g.dh;
    if (h < g.H + g.ph_end) ++ph;
    if (h >= 0 && h < g.H) ++vh;
  }
  for (int64_t k = 0; k < g.kw; ++k) {
    int64_t w = w0 + k * g.dw;
    if (w < g.W + g.pw_end) ++pw;
    if (w >= 0 && w < g.W) ++vw;
  }
  for (int64_t i = 0; i < g.kh; ++i) {
    int64_t h = h0 + i * g.dh;
    if (h < 0 || h >= g.H) continue;
    const T* row = x + h * g.W;
    for (int64_t j = 0; j < g.kw; ++j) {
      int64_t w = w0 + j * g.dw;
      if (w >= 0 && w < g.W) acc = op.Add(acc, row[w]);
    }
  }
  return op.Finish(acc, vh * vw, ph * pw);
}

// First output index >= lo_bound whose window starts at or after 0, and one past the last
// whose window ends inside the input.
void InteriorRange(int64_t n, int64_t out, int64_t k, int64_t s, int64_t d, int64_t p, int64_t* lo, int64_t* hi) {
  int64_t last = n - 1 - (k - 1) * d + p;  // window start (plus pad) of the last fully-inside window
  *hi = last < 0 ? 0 : std::min(out, last / s + 1);
  *lo = std::min((p + s - 1) / s, *hi);
}

template <typename T, typename Op>
void Pool2DPlane(const T* x, T* y, const Geo2& g, const Op& op, typename Op::Acc* acc) {
  int64_t oh_lo, oh_hi, ow_lo, ow_hi;
  InteriorRange(g.H, g.OH, g.kh, g.sh, g.dh, g.ph, &oh_lo, &oh_hi);
  InteriorRange(g.W, g.OW, g.kw, g.sw, g.dw, g.pw, &ow_lo, &ow_hi);
  const int64_t full = g.kh * g.kw;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    T* yr = y + oh * g.OW;
    if (oh < oh_lo || oh >= oh_hi || ow_lo >= ow_hi) {
      for (int64_t ow = 0; ow < g.OW; ++ow) yr[ow] = PoolAt2D(x, g, op, oh, ow);
      continue;
    }
    for (int64_t ow = 0; ow < ow_lo; ++ow) yr[ow] = PoolAt2D(x, g, op, oh, ow);
    for (int64_t ow = ow_hi; ow < g.OW; ++ow) yr[ow] = PoolAt2D(x, g, op, oh, ow);
    const int64_t n = ow_hi - ow_lo;
    const int64_t sw = g.sw;
    for (int64_t i = 0; i < n; ++i) acc[i] = op.Init();
    for (int64_t i = 0; i < g.kh; ++i) {
      const T* row = x + (oh * g.sh - g.ph + i * g.dh) * g.W + ow_lo * sw - g.pw;
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* src = row + j * g.dw;
        if (sw == 1) {
          for (int64_t o = 0; o < n; ++o) acc[o] = op.Add(acc[o], src[o]);
        } else if (sw == 2) {
          for (int64_t o = 0; o < n; ++o) acc[o] = op.Add(acc[o], src[2 * o]);
        } else {
          for (int64_t o = 0; o < n; ++o) acc[o] = op.Add(acc[o], src[o * sw]);
        }
      }
    }
    for (int64_t o = 0; o < n; ++o) yr[ow_lo + o] = op.Finish(acc[o], full, full);
  }
}

// Any-rank pooling of one plane with bounds checks everywhere; also produces MaxPool's Indices
// (flat input positions, row-major or, with storage_order 1, column-major within the plane).
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
  OF_REQUIRE(x.rank() >= 3, ctx.node().Describe(), ": input must be [N, C, D1, ...]");
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
  return ComputePoolGeometry(ctx.attrs(), in, ctx.node().Describe(), global);
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
  const bool fast = !indices && g.rank() <= 2;
  Geo2 g2{};
  if (fast) {
    const bool one = g.rank() == 1;  // a 1-D pool is a 2-D pool over a single row
    g2 = Geo2{one ? 1 : g.in[0], g.in.back(), one ? 1 : g.out[0], g.out.back(),
              one ? 1 : g.kernel[0], g.kernel.back(), one ? 1 : g.stride[0], g.stride.back(),
              one ? 1 : g.dilation[0], g.dilation.back(), one ? 0 : g.pad_begin[0], g.pad_begin.back(),
              one ? 0 : g.pad_end[0], g.pad_end.back()};
  }
  ctx.pool().ParallelFor(planes, static_cast<double>(out_plane * win) * 2.0, [&](int64_t begin, int64_t end) {
    std::vector<typename Op::Acc> acc(fast ? static_cast<size_t>(g2.OW) : 0);
    for (int64_t p = begin; p < end; ++p) {
      if (fast) Pool2DPlane(px + p * in_plane, py + p * out_plane, g2, op, acc.data());
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
      AvgOp<T> op;
      op.count_include_pad = ctx.attrs().GetInt("count_include_pad", 0) != 0;
      RunPool<T>(ctx, x, y, nullptr, g, op, false);
    } else {
      LpOp<T> op;
      op.p = ctx.attrs().GetInt("p", 2);
      OF_REQUIRE(op.p >= 1, ctx.node().Describe(), ": p must be positive");
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
  OF_REQUIRE(x.rank() >= 3, ctx.node().Describe(), ": input must be [N, C, D1, ...]");
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
      GlobalPool<T>(ctx, x, y, Combinable<AvgOp<T>>{});
    } else {
      LpCombinable<T> op;
      op.p = ctx.attrs().GetInt("p", 2);
      OF_REQUIRE(op.p >= 1, ctx.node().Describe(), ": p must be positive");
      GlobalPool<T>(ctx, x, y, op);
    }
  });
}

void MaxPoolKernel(KernelContext& ctx) { PoolKernel(ctx, PoolKind::kMax, false); }
void AveragePoolKernel(KernelContext& ctx) { PoolKernel(ctx, PoolKind::kAvg, false); }
void LpPoolKernel(KernelContext& ctx) { PoolKernel(ctx, PoolKind::kLp, false); }
void GlobalMaxPoolKernel(KernelContext& ctx) { GlobalPoolKernel(ctx, PoolKind::kMax); }
void GlobalAveragePoolKernel(KernelContext& ctx) { GlobalPoolKernel(ctx, PoolKind::kAvg); }
void GlobalLpPoolKernel(KernelContext& ctx) { GlobalPoolKernel(ctx, PoolKind::kLp); }

// MaxUnpool scatters X into a zero tensor at the flat positions MaxPool's Indices recorded.
void MaxUnpoolKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(ind.shape() == x.shape(), ctx.node().Describe(), ": indices must have the shape of X");
  std::memset(y.raw(), 0, y.nbytes());
  const int64_t* pi = ind.data<int64_t>();
  const int64_t total = y.numel();
  DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      OF_CHECK(pi[i] >= 0 && pi[i] < total, kRuntime, ctx.node().Describe(), ": index ", pi[i],
               " is out of range for an output of ", total, " elements");
      py[pi[i]] = px[i];
    }
  });
}

}  // namespace

void RegisterCpuPoolKernels(KernelRegistry& r) {
  r.RegisterFn("MaxPool", MaxPoolKernel);
  r.RegisterFn("AveragePool", AveragePoolKernel);
  r.RegisterFn("LpPool", LpPoolKernel);
  r.RegisterFn("GlobalMaxPool", GlobalMaxPoolKernel);
  r.RegisterFn("GlobalAveragePool", GlobalAveragePoolKernel);
  r.RegisterFn("GlobalLpPool", GlobalLpPoolKernel);
  r.RegisterFn("MaxUnpool", MaxUnpoolKernel);
}

}  // namespace oneflow
