// CPU kernels: the backward ops of the pools (MaxPoolGrad, AveragePoolGrad, GlobalAveragePoolGrad,
// GlobalMaxPoolGrad), 1-D/2-D/3-D, with the forward's geometry (pads, auto_pad, ceil_mode,
// dilations) from ComputePoolGeometry. Parallel over (n, c) planes: windows overlap only inside a
// plane, so each thread scatters into planes it owns and no atomics are needed.
#include <atomic>
#include <cstring>

#include "graph/op_schema.h"
#include "graph/ops/spatial_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

// The geometry padded to 3 spatial dims, with each output position's range of window taps that
// land inside the input ([lo, hi) per dim) and the tap counts the averaging divisor uses.
struct PoolGradPlan {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
  int64_t in_size = 1, out_size = 1;
  std::vector<int64_t> lo[3], hi[3], padded[3];
};

PoolGradPlan MakePlan(const PoolGeometry& g, const std::string& node) {
  const size_t r = g.rank();
  OF_CHECK(r >= 1 && r <= 3, kUnsupported, node, ": pooling gradients support 1 to 3 spatial dims, got ", r);
  PoolGradPlan p;
  for (size_t i = 0; i < 3; ++i) {
    const bool real = i + r >= 3;
    const size_t j = i + r - 3;
    p.in[i] = real ? g.in[j] : 1;
    p.out[i] = real ? g.out[j] : 1;
    p.k[i] = real ? g.kernel[j] : 1;
    p.s[i] = real ? g.stride[j] : 1;
    p.d[i] = real ? g.dilation[j] : 1;
    p.pb[i] = real ? g.pad_begin[j] : 0;
    const int64_t pe = real ? g.pad_end[j] : 0;
    p.in_size *= p.in[i];
    p.out_size *= p.out[i];
    for (int64_t o = 0; o < p.out[i]; ++o) {
      int64_t a = p.k[i], b = 0, t = 0;
      for (int64_t tap = 0; tap < p.k[i]; ++tap) {
        const int64_t pos = o * p.s[i] - p.pb[i] + tap * p.d[i];
        if (pos >= 0 && pos < p.in[i]) {
          a = std::min(a, tap);
          b = tap + 1;
        }
        t += pos < p.in[i] + pe;  // the forward's count_include_pad divisor: input or explicit padding
      }
      p.lo[i].push_back(std::min(a, b));
      p.hi[i].push_back(b);
      p.padded[i].push_back(t);
    }
  }
  return p;
}

// Calls per_output(flat output index, od, oh, ow) for each output position of a plane.
template <typename Fn>
inline void ForEachWindow(const PoolGradPlan& p, Fn&& per_output) {
  for (int64_t od = 0; od < p.out[0]; ++od)
    for (int64_t oh = 0; oh < p.out[1]; ++oh)
      for (int64_t ow = 0; ow < p.out[2]; ++ow) per_output((od * p.out[1] + oh) * p.out[2] + ow, od, oh, ow);
}

// Calls tap(flat input index) for each window tap of output (od, oh, ow) inside the input, in the
// forward's order (depth, row, column).
template <typename Tap>
inline void ForEachTap(const PoolGradPlan& p, int64_t od, int64_t oh, int64_t ow, Tap&& tap) {
  for (int64_t a = p.lo[0][od]; a < p.hi[0][od]; ++a) {
    const int64_t id = od * p.s[0] - p.pb[0] + a * p.d[0];
    for (int64_t b = p.lo[1][oh]; b < p.hi[1][oh]; ++b) {
      const int64_t ih = oh * p.s[1] - p.pb[1] + b * p.d[1];
      const int64_t row = (id * p.in[1] + ih) * p.in[2];
      for (int64_t c = p.lo[2][ow]; c < p.hi[2][ow]; ++c) tap(row + ow * p.s[2] - p.pb[2] + c * p.d[2]);
    }
  }
}

PoolGeometry GeometryOf(const KernelContext& ctx, const Shape& x, bool global) {
  OF_REQUIRE(x.size() >= 3, ctx.node_desc(), ": the forward input must be [N, C, D1, ...], got ", ShapeToString(x));
  return ComputePoolGeometry(ctx.attrs(), std::vector<int64_t>(x.begin() + 2, x.end()), ctx.node_desc(), global);
}

void CheckDy(const KernelContext& ctx, const Tensor& dy, const Shape& x, const PoolGeometry& g) {
  Shape want{x[0], x[1]};
  want.insert(want.end(), g.out.begin(), g.out.end());
  OF_REQUIRE(dy.shape() == want, ctx.node_desc(), ": dY ", ShapeToString(dy.shape()),
             " is not the pool's output shape ", ShapeToString(want));
}

// dX of MaxPool: each output's gradient goes to its window's first maximum (recomputed from X), or
// to the position the forward's Indices output recorded.
template <bool kGlobal>
void MaxPoolGradKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  Tensor& dx = ctx.output(0);
  OF_REQUIRE(dy.dtype() == x.dtype(), ctx.node_desc(), ": dY and X must share a dtype");
  const PoolGeometry geo = GeometryOf(ctx, x.shape(), kGlobal);
  CheckDy(ctx, dy, x.shape(), geo);
  const PoolGradPlan p = MakePlan(geo, ctx.node_desc());
  const int64_t planes = x.dim(0) * x.dim(1);
  // The forward records position 0 of the plane for a window that misses the input entirely (its
  // output is a constant 0, so no gradient flows): with such windows the argmax is recomputed.
  bool every_window_hits = true;
  for (int i = 0; i < 3; ++i)
    for (int64_t o = 0; o < p.out[i]; ++o) every_window_hits = every_window_hits && p.hi[i][o] > p.lo[i][o];
  const Tensor* indices = !kGlobal && ctx.has_input(2) && every_window_hits ? &ctx.input(2) : nullptr;
  if (indices) {
    OF_REQUIRE(indices->dtype() == DType::kInt64 && indices->shape() == dy.shape(), ctx.node_desc(),
               ": Indices must be int64 with dY's shape ", ShapeToString(dy.shape()));
    OF_CHECK(ctx.attrs().GetInt("storage_order", 0) == 0, kUnsupported, ctx.node_desc(),
             ": Indices with storage_order 1 are not supported; omit them to recompute the argmax");
  }
  std::atomic<bool> bad_index{false};
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    ctx.pool().ParallelFor(planes, static_cast<double>(p.in_size + p.out_size * geo.kernel.size() * 4),
                           [&](int64_t begin, int64_t end) {
                             for (int64_t plane = begin; plane < end; ++plane) {
                               const T* xp = px + plane * p.in_size;
                               const T* gp = pdy + plane * p.out_size;
                               T* dp = pdx + plane * p.in_size;
                               std::fill(dp, dp + p.in_size, T(0));
                               if (indices) {
                                 const int64_t* ip = indices->data<int64_t>() + plane * p.out_size;
                                 const int64_t base = plane * p.in_size;
                                 for (int64_t o = 0; o < p.out_size; ++o) {
                                   const int64_t at = ip[o] - base;
                                   if (at < 0 || at >= p.in_size) {
                                     bad_index = true;
                                     continue;
                                   }
                                   dp[at] += gp[o];
                                 }
                                 continue;
                               }
                               ForEachWindow(p, [&](int64_t o, int64_t od, int64_t oh, int64_t ow) {
                                 int64_t best = -1;
                                 T bv = T(0);
                                 ForEachTap(p, od, oh, ow, [&](int64_t i) {
                                   if (best < 0 || xp[i] > bv) {
                                     best = i;
                                     bv = xp[i];
                                   }
                                 });
                                 if (best >= 0) dp[best] += gp[o];
                               });
                             }
                           });
  });
  OF_REQUIRE(!bad_index, ctx.node_desc(), ": Indices holds a position outside its (n, c) plane");
}
ONEFLOW_KERNEL(MaxPoolGrad, MaxPoolGradKernel<false>);
ONEFLOW_KERNEL(GlobalMaxPoolGrad, MaxPoolGradKernel<true>);

Shape ShapeInput(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  OF_REQUIRE(t.dtype() == DType::kInt64 && t.rank() == 1, ctx.node_desc(), ": input ", i, " must be a 1-D int64 shape");
  return Shape(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

// dX of AveragePool: each output's gradient spread evenly over the window positions its divisor
// counted (count_include_pad: input and explicit padding; else the input only).
template <bool kGlobal>
void AveragePoolGradKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  Tensor& dx = ctx.output(0);
  const Shape xs = ShapeInput(ctx, 1);
  OF_REQUIRE(dx.shape() == xs, ctx.node_desc(), ": internal: dX shape differs from X_shape");
  const PoolGeometry geo = GeometryOf(ctx, xs, kGlobal);
  CheckDy(ctx, dy, xs, geo);
  const PoolGradPlan p = MakePlan(geo, ctx.node_desc());
  const bool include_pad = !kGlobal && ctx.attrs().GetInt("count_include_pad", 0) != 0;
  const int64_t planes = xs[0] * xs[1];
  DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    if (kGlobal) {
      const T inv = p.in_size > 0 ? T(1) / static_cast<T>(p.in_size) : T(0);
      ctx.pool().ParallelFor(planes, static_cast<double>(p.in_size), [&](int64_t begin, int64_t end) {
        for (int64_t plane = begin; plane < end; ++plane)
          std::fill(pdx + plane * p.in_size, pdx + (plane + 1) * p.in_size, pdy[plane] * inv);
      });
      return;
    }
    ctx.pool().ParallelFor(
        planes, static_cast<double>(p.in_size + p.out_size * geo.kernel.size() * 4), [&](int64_t begin, int64_t end) {
          for (int64_t plane = begin; plane < end; ++plane) {
            const T* gp = pdy + plane * p.out_size;
            T* dp = pdx + plane * p.in_size;
            std::fill(dp, dp + p.in_size, T(0));
            ForEachWindow(p, [&](int64_t o, int64_t od, int64_t oh, int64_t ow) {
              const int64_t count =
                  include_pad ? p.padded[0][od] * p.padded[1][oh] * p.padded[2][ow]
                              : (p.hi[0][od] - p.lo[0][od]) * (p.hi[1][oh] - p.lo[1][oh]) * (p.hi[2][ow] - p.lo[2][ow]);
              if (count == 0) return;
              const T share = gp[o] / static_cast<T>(count);
              ForEachTap(p, od, oh, ow, [&](int64_t i) { dp[i] += share; });
            });
          }
        });
  });
}
ONEFLOW_KERNEL(AveragePoolGrad, AveragePoolGradKernel<false>);
ONEFLOW_KERNEL(GlobalAveragePoolGrad, AveragePoolGradKernel<true>);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
