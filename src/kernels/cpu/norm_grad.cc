// CPU kernels: backward ops of Softmax/LogSoftmax and of the normalizations (LayerNormalizationGrad,
// BatchNormalizationGrad, InstanceNormalizationGrad). With xhat = (x - mean) * inv_std and
// g = dy * scale, every normalization over a set of m elements has
//   dx = inv_std * (g - sum(g)/m - xhat * sum(g * xhat)/m),  dscale = sum dy*xhat,  dbias = sum dy
// (the two sums vanish when the statistics are constants: BatchNormalization in inference mode).
#include <cmath>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "kernels/kernel.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

void RequireDType(const KernelContext& ctx, const Tensor& t, DType want, const char* what) {
  OF_REQUIRE(t.dtype() == want, ctx.node_desc(), ": ", what, " must be ", DTypeName(want), ", got ",
             DTypeName(t.dtype()));
}

std::vector<double> ReadAsDouble(const KernelContext& ctx, const Tensor& t, int64_t n, const char* what) {
  OF_REQUIRE(t.numel() == n, ctx.node_desc(), ": ", what, " must have ", n, " elements, got ",
             ShapeToString(t.shape()));
  std::vector<double> v(static_cast<size_t>(n));
  DispatchFloat(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(t.data<T>()[i]);
  });
  return v;
}

// ---------------------------------------------------------------------------------------------
// SoftmaxGrad: dx = y * (dy - sum(dy * y));  LogSoftmaxGrad: dx = dy - exp(y) * sum(dy).

template <bool kLog>
void SoftmaxGradKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& y = ctx.input(1);
  RequireDType(ctx, y, dy.dtype(), "Y");
  OF_REQUIRE(y.shape() == dy.shape(), ctx.node_desc(), ": dY ", ShapeToString(dy.shape()), " and Y ",
             ShapeToString(y.shape()), " differ");
  Tensor& dx = ctx.output(0);
  if (y.numel() == 0) return;
  AxisView v;
  if (y.rank() > 0) {
    const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), y.rank());
    v = ViewAround(y.shape(), axis, axis + 1);
  }
  DispatchFloat(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* py = y.data<T>();
    const T* pg = dy.data<T>();
    T* pd = dx.data<T>();
    const int64_t n = v.n, inner = v.inner;
    if (inner == 1) {
      ctx.pool().ParallelFor(v.outer, 8.0 * static_cast<double>(n) + 10.0, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const T* yr = py + o * n;
          const T* gr = pg + o * n;
          T* dr = pd + o * n;
          if (kLog) {
            const T s = LaneSum<T>(n, [&](int64_t i) { return gr[i]; });
            for (int64_t i = 0; i < n; ++i) dr[i] = gr[i] - std::exp(yr[i]) * s;
          } else {
            const T s = LaneSum<T>(n, [&](int64_t i) { return gr[i] * yr[i]; });
            for (int64_t i = 0; i < n; ++i) dr[i] = yr[i] * (gr[i] - s);
          }
        }
      });
      return;
    }
    // Inner axis > 1: blocks of columns, so every loop runs over contiguous memory.
    const int64_t kBlock = 512, nb = (inner + kBlock - 1) / kBlock;
    ctx.pool().ParallelFor(
        v.outer * nb, 8.0 * static_cast<double>(n * std::min(inner, kBlock)), [&](int64_t b, int64_t e) {
          std::vector<T> s(static_cast<size_t>(kBlock));
          for (int64_t t = b; t < e; ++t) {
            const int64_t o = t / nb, c0 = (t % nb) * kBlock, w = std::min(inner, c0 + kBlock) - c0;
            const int64_t base = o * n * inner + c0;
            std::fill(s.begin(), s.begin() + w, T(0));
            for (int64_t r = 0; r < n; ++r)
              for (int64_t c = 0; c < w; ++c)
                s[c] += kLog ? pg[base + r * inner + c] : pg[base + r * inner + c] * py[base + r * inner + c];
            for (int64_t r = 0; r < n; ++r)
              for (int64_t c = 0; c < w; ++c) {
                const int64_t i = base + r * inner + c;
                pd[i] = kLog ? pg[i] - std::exp(py[i]) * s[c] : py[i] * (pg[i] - s[c]);
              }
          }
        });
  });
}
ONEFLOW_KERNEL(SoftmaxGrad, SoftmaxGradKernel<false>);
ONEFLOW_KERNEL(LogSoftmaxGrad, SoftmaxGradKernel<true>);

// ---------------------------------------------------------------------------------------------
// LayerNormalizationGrad over axes [axis, rank): rows are independent for dX; dScale and dB sum
// over rows, so each chunk of rows accumulates its own partial sums, added up at the end.

// For each element of `target`, the flat index of the (right-aligned, broadcast) parameter `p`.
std::vector<int64_t> BroadcastIndex(const KernelContext& ctx, const Shape& p, const Shape& target, const char* what) {
  const int64_t tr = static_cast<int64_t>(target.size()), pr = static_cast<int64_t>(p.size());
  std::vector<int64_t> stride(static_cast<size_t>(tr), 0);
  int64_t s = 1;
  for (int64_t i = pr - 1; i >= 0; --i) {
    const int64_t j = i - pr + tr;  // the target dim this parameter dim aligns with
    OF_REQUIRE(p[i] == 1 || (j >= 0 && p[i] == target[j]), ctx.node_desc(), ": ", what, " ", ShapeToString(p),
               " does not broadcast to the normalized shape ", ShapeToString(target));
    if (j >= 0) stride[j] = p[i] == 1 ? 0 : s;
    s *= p[i];
  }
  const int64_t n = NumElements(target);
  std::vector<int64_t> map(static_cast<size_t>(n));
  std::vector<int64_t> idx(static_cast<size_t>(tr), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    map[i] = off;
    for (int64_t d = tr - 1; d >= 0; --d) {
      off += stride[d];
      if (++idx[d] < target[d]) break;
      off -= stride[d] * target[d];
      idx[d] = 0;
    }
  }
  return map;
}

void LayerNormGradKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& scale = ctx.input(2);
  RequireDType(ctx, x, dy.dtype(), "X");
  RequireDType(ctx, scale, dy.dtype(), "Scale");
  OF_REQUIRE(x.shape() == dy.shape(), ctx.node_desc(), ": dY ", ShapeToString(dy.shape()), " and X ",
             ShapeToString(x.shape()), " differ");
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  const AxisView v = ViewAround(x.shape(), 0, axis);
  const int64_t rows = v.n, n = v.inner;
  const Shape norm_shape(x.shape().begin() + axis, x.shape().end());
  const std::vector<int64_t> smap = BroadcastIndex(ctx, scale.shape(), norm_shape, "Scale");
  const double eps = ctx.attrs().GetFloat("epsilon");
  Tensor* dscale = ctx.has_output(1) ? &ctx.output(1) : nullptr;
  Tensor* dbias = ctx.has_output(2) ? &ctx.output(2) : nullptr;
  const int threads = ctx.pool().num_threads();
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(rows, 4 * threads));
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Saved statistics are used when they have X's precision; lower-precision ones (stash_type 1
    // with f64 X) are recomputed, so the gradient keeps X's precision.
    const bool saved =
        ctx.has_input(3) && ctx.has_input(4) && ctx.input(3).dtype() == x.dtype() && ctx.input(4).dtype() == x.dtype();
    if (saved)
      for (size_t i = 3; i <= 4; ++i)
        OF_REQUIRE(ctx.input(i).numel() == rows, ctx.node_desc(), ": input ", i, " must hold one value per row (", rows,
                   ")");
    const T* mean_in = saved ? ctx.input(3).data<T>() : nullptr;
    const T* inv_in = saved ? ctx.input(4).data<T>() : nullptr;
    std::vector<T> sc(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) sc[i] = scale.data<T>()[smap[i]];
    const bool want_params = dscale || dbias;
    std::vector<T> partial(want_params ? static_cast<size_t>(2 * chunks * n) : 0, T(0));
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
    T* pd = ctx.output(0).data<T>();
    ctx.pool().ParallelFor(
        chunks, 12.0 * static_cast<double>(n) * static_cast<double>(rows) / chunks, [&](int64_t b, int64_t e) {
          std::vector<T> xhat(static_cast<size_t>(n));
          for (int64_t c = b; c < e; ++c) {
            T* ps = want_params ? partial.data() + 2 * c * n : nullptr;
            T* pb = want_params ? ps + n : nullptr;
            for (int64_t r = rows * c / chunks; r < rows * (c + 1) / chunks; ++r) {
              const T* xr = px + r * n;
              const T* gr = pg + r * n;
              T* dr = pd + r * n;
              T mean, inv;
              if (saved) {
                mean = mean_in[r];
                inv = inv_in[r];
              } else {
                mean = LaneSum<T>(n, [&](int64_t i) { return xr[i]; }) / static_cast<T>(n);
                const T var =
                    LaneSum<T>(n, [&](int64_t i) { return (xr[i] - mean) * (xr[i] - mean); }) / static_cast<T>(n);
                inv = T(1) / std::sqrt(var + static_cast<T>(eps));
              }
              for (int64_t i = 0; i < n; ++i) xhat[i] = (xr[i] - mean) * inv;
              const T sg = LaneSum<T>(n, [&](int64_t i) { return gr[i] * sc[i]; }) / static_cast<T>(n);
              const T sgx = LaneSum<T>(n, [&](int64_t i) { return gr[i] * sc[i] * xhat[i]; }) / static_cast<T>(n);
              for (int64_t i = 0; i < n; ++i) dr[i] = inv * (gr[i] * sc[i] - sg - xhat[i] * sgx);
              if (want_params)
                for (int64_t i = 0; i < n; ++i) {
                  ps[i] += gr[i] * xhat[i];
                  pb[i] += gr[i];
                }
            }
          }
        });
    // Sum the chunks' partials, then fold broadcast positions into the parameter's own shape.
    for (int which = 0; which < 2; ++which) {
      Tensor* out = which == 0 ? dscale : dbias;
      if (!out) continue;
      OF_REQUIRE(out->numel() == scale.numel(), ctx.node_desc(), ": internal: parameter grad size");
      T* po = out->data<T>();
      std::fill(po, po + out->numel(), T(0));
      for (int64_t c = 0; c < chunks; ++c) {
        const T* src = partial.data() + (2 * c + which) * n;
        for (int64_t i = 0; i < n; ++i) po[smap[i]] += src[i];
      }
    }
  });
}
ONEFLOW_KERNEL(LayerNormalizationGrad, LayerNormGradKernel);

// ---------------------------------------------------------------------------------------------
// BatchNormalizationGrad and InstanceNormalizationGrad: statistics per channel over (N, spatial),
// or per (n, c) plane. Parallel over channels, each owning its dscale/dB entries.

template <typename T>
struct PlaneSums {
  T sum_dy = 0, sum_dy_xhat = 0;
};

void ChannelNormGrad(KernelContext& ctx, bool per_instance) {
  const Tensor& dy = ctx.input(0);
  const Tensor& x = ctx.input(1);
  RequireDType(ctx, x, dy.dtype(), "X");
  OF_REQUIRE(x.rank() >= 2 && x.shape() == dy.shape(), ctx.node_desc(), ": dY ", ShapeToString(dy.shape()), " and X ",
             ShapeToString(x.shape()), " must be equal and of rank >= 2");
  const int64_t N = x.dim(0), C = x.dim(1), S = ShapeProduct(x.shape(), 2, x.shape().size());
  const std::vector<double> scale = ReadAsDouble(ctx, ctx.input(2), C, "scale");
  const bool fixed = !per_instance && ctx.has_input(3) && ctx.has_input(4);
  OF_REQUIRE(per_instance || ctx.has_input(3) == ctx.has_input(4), ctx.node_desc(),
             ": give both mean and var (inference-mode statistics) or neither (batch statistics)");
  const std::vector<double> fmean = fixed ? ReadAsDouble(ctx, ctx.input(3), C, "mean") : std::vector<double>();
  const std::vector<double> fvar = fixed ? ReadAsDouble(ctx, ctx.input(4), C, "var") : std::vector<double>();
  const double eps = ctx.attrs().GetFloat("epsilon");
  Tensor* dscale = ctx.has_output(1) ? &ctx.output(1) : nullptr;
  Tensor* dbias = ctx.has_output(2) ? &ctx.output(2) : nullptr;
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
    T* pd = ctx.output(0).data<T>();
    T* ps = dscale ? dscale->data<T>() : nullptr;
    T* pb = dbias ? dbias->data<T>() : nullptr;
    // The statistics are over `groups` planes of S elements: every image (batch norm) or one.
    const int64_t groups = per_instance ? 1 : N;
    const T m = static_cast<T>(groups * S);
    ctx.pool().ParallelFor(C, 12.0 * static_cast<double>(N * S), [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        T total_dy = 0, total_dyx = 0;
        for (int64_t n0 = 0; n0 < N; n0 += groups) {
          auto plane = [&](int64_t n, const T* base) { return base + (n * C + c) * S; };
          T mean, inv;
          if (fixed) {
            mean = static_cast<T>(fmean[c]);
            inv = static_cast<T>(1.0 / std::sqrt(fvar[c] + eps));
          } else {
            T s = 0;
            for (int64_t n = n0; n < n0 + groups; ++n) {
              const T* xp = plane(n, px);
              s += LaneSum<T>(S, [&](int64_t i) { return xp[i]; });
            }
            mean = s / m;
            T q = 0;
            for (int64_t n = n0; n < n0 + groups; ++n) {
              const T* xp = plane(n, px);
              q += LaneSum<T>(S, [&](int64_t i) { return (xp[i] - mean) * (xp[i] - mean); });
            }
            inv = T(1) / std::sqrt(q / m + static_cast<T>(eps));
          }
          PlaneSums<T> sums;
          for (int64_t n = n0; n < n0 + groups; ++n) {
            const T* xp = plane(n, px);
            const T* gp = plane(n, pg);
            sums.sum_dy += LaneSum<T>(S, [&](int64_t i) { return gp[i]; });
            sums.sum_dy_xhat += LaneSum<T>(S, [&](int64_t i) { return gp[i] * (xp[i] - mean) * inv; });
          }
          const T sc = static_cast<T>(scale[c]), k = sc * inv;
          const T a = fixed ? T(0) : sums.sum_dy / m, bb = fixed ? T(0) : sums.sum_dy_xhat / m;
          for (int64_t n = n0; n < n0 + groups; ++n) {
            const T* xp = plane(n, px);
            const T* gp = plane(n, pg);
            T* dp = pd + (n * C + c) * S;
            for (int64_t i = 0; i < S; ++i) dp[i] = k * (gp[i] - a - (xp[i] - mean) * inv * bb);
          }
          total_dy += sums.sum_dy;
          total_dyx += sums.sum_dy_xhat;
        }
        if (ps) ps[c] = total_dyx;
        if (pb) pb[c] = total_dy;
      }
    });
  });
}

void BatchNormGradKernel(KernelContext& ctx) { ChannelNormGrad(ctx, false); }
ONEFLOW_KERNEL(BatchNormalizationGrad, BatchNormGradKernel);
void InstanceNormGradKernel(KernelContext& ctx) { ChannelNormGrad(ctx, true); }
ONEFLOW_KERNEL(InstanceNormalizationGrad, InstanceNormGradKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
