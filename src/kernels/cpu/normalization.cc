// CPU kernels: normalization (Softmax family, BatchNorm, LayerNorm/RMSNorm, Instance/GroupNorm,
// LpNormalization, MeanVarianceNormalization).
#include <cstring>
#include <vector>

#include "graph/infer_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

int64_t AxisAttr(const KernelContext& ctx, int64_t rank) {
  return NormalizeAxis(ctx.attrs().GetInt("axis"), rank);
}

// x seen as [outer, n, inner] around its `axis` attribute (a scalar is a single element).
AxisView AxisAttrView(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() == 0) return AxisView{};
  const int64_t axis = AxisAttr(ctx, x.rank());
  return ViewAround(x.shape(), axis, axis + 1);
}

// Calls line(base) in parallel for each of the view's outer * inner lines along the axis: the line's
// elements sit at base + i * v.inner for i < v.n. `cost` is per element.
template <typename Line>
void ForEachAxisLine(ThreadPool& pool, const AxisView& v, double cost, Line line) {
  pool.ParallelFor(v.outer * v.inner, cost * static_cast<double>(v.n), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) line((t / v.inner) * v.n * v.inner + t % v.inner);
  });
}

// Runs fn(x, y) on float32 views when the tensors are f16/bf16, else directly.
template <typename Fn>
void WithFloatStaging(const Tensor& x, Tensor& y, Fn&& fn) {
  if (IsHalfDType(x.dtype())) {
    Tensor xf = WidenToFloat(x);
    Tensor yf = Tensor::Uninitialized(DType::kFloat32, y.shape());
    fn(xf, yf);
    NarrowFromFloat(yf, y);
  } else {
    fn(x, y);
  }
}

// ---------------------------------------------------------------------------------------------
// Softmax / LogSoftmax along one axis of an [outer, n, inner] view.

template <typename T>
void SoftmaxView(const T* x, T* y, const AxisView& v, bool log, ThreadPool& pool) {
  const int64_t n = v.n, inner = v.inner;
  if (inner == 1) {
    // The common case (last axis): each row is independent and stays in L1 across the passes.
    pool.ParallelFor(v.outer, 12.0 * static_cast<double>(n) + 10.0, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* xr = x + o * n;
        T* yr = y + o * n;
        const T m = LaneMax(xr, n);
        if (log) {
          const T s = LaneSum<T>(n, [&](int64_t i) { return fastmath::Exp(xr[i] - m); });
          const T shift = m + std::log(s);
          for (int64_t i = 0; i < n; ++i) yr[i] = xr[i] - shift;
        } else {
          const T inv = T(1) / LaneSum<T>(n, [&](int64_t i) { return yr[i] = fastmath::Exp(xr[i] - m); });
          for (int64_t i = 0; i < n; ++i) yr[i] *= inv;
        }
      }
    });
    return;
  }
  // Inner axis > 1: work on blocks of columns so every loop runs over contiguous memory.
  const int64_t kBlock = 512;
  const int64_t nb = (inner + kBlock - 1) / kBlock;
  pool.ParallelFor(v.outer * nb, 12.0 * static_cast<double>(n * std::min(inner, kBlock)), [&](int64_t b, int64_t e) {
    std::vector<T> m(kBlock), s(kBlock);
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / nb, c0 = (t % nb) * kBlock, w = std::min(inner, c0 + kBlock) - c0;
      const T* xb = x + o * n * inner + c0;
      T* yb = y + o * n * inner + c0;
      for (int64_t c = 0; c < w; ++c) { m[c] = -std::numeric_limits<T>::infinity(); s[c] = T(0); }
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < w; ++c) m[c] = xb[r * inner + c] > m[c] ? xb[r * inner + c] : m[c];
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < w; ++c) {
          const T ev = fastmath::Exp(xb[r * inner + c] - m[c]);
          s[c] += ev;
          if (!log) yb[r * inner + c] = ev;
        }
      if (log) {
        for (int64_t c = 0; c < w; ++c) m[c] += std::log(s[c]);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t c = 0; c < w; ++c) yb[r * inner + c] = xb[r * inner + c] - m[c];
      } else {
        for (int64_t c = 0; c < w; ++c) s[c] = T(1) / s[c];
        for (int64_t r = 0; r < n; ++r)
          for (int64_t c = 0; c < w; ++c) yb[r * inner + c] *= s[c];
      }
    }
  });
}

template <bool kLog>
void SoftmaxKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (x0.numel() == 0) return;
  const AxisView v = AxisAttrView(ctx, x0);
  WithFloatStaging(x0, ctx.output(0), [&](const Tensor& x, Tensor& y) {
    DispatchFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      SoftmaxView<T>(x.data<T>(), y.data<T>(), v, kLog, ctx.pool());
    });
  });
}
ONEFLOW_KERNEL(Softmax, SoftmaxKernel<false>);
ONEFLOW_KERNEL(LogSoftmax, SoftmaxKernel<true>);

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere.
void HardmaxKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (x0.numel() == 0) return;
  const AxisView v = AxisAttrView(ctx, x0);
  WithFloatStaging(x0, ctx.output(0), [&](const Tensor& x, Tensor& y) {
    DispatchFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ForEachAxisLine(ctx.pool(), v, 2.0, [&](int64_t base) {
        int64_t best = 0;
        for (int64_t i = 1; i < v.n; ++i)
          if (px[base + i * v.inner] > px[base + best * v.inner]) best = i;
        for (int64_t i = 0; i < v.n; ++i) py[base + i * v.inner] = i == best ? T(1) : T(0);
      });
    });
  });
}
ONEFLOW_KERNEL(Hardmax, HardmaxKernel);

// ---------------------------------------------------------------------------------------------
// Per-row statistics shared by Layer/RMS/Instance/Group normalization. Two passes (mean, then
// squared deviations) keep the variance accurate; rows are short enough to stay in cache.

template <typename T>
struct RowStats {
  T mean;
  T inv_std;
};

template <typename T>
RowStats<T> ComputeRowStats(const T* x, int64_t n, T eps, bool rms) {
  if (rms) {
    const T ms = LaneSum<T>(n, [&](int64_t i) { return x[i] * x[i]; }) / static_cast<T>(n);
    return {T(0), T(1) / std::sqrt(ms + eps)};
  }
  const T mean = LaneSum<T>(n, [&](int64_t i) { return x[i]; }) / static_cast<T>(n);
  const T var = LaneSum<T>(n, [&](int64_t i) { return (x[i] - mean) * (x[i] - mean); }) / static_cast<T>(n);
  return {mean, T(1) / std::sqrt(var + eps)};
}

// Expands parameter `p` (unidirectionally broadcastable to `target`, right-aligned) to a dense
// vector of NumElements(target) values of type T.
template <typename T>
std::vector<T> ExpandParam(const Tensor& p, const Shape& target, const std::string& node, const char* what) {
  const int64_t tr = static_cast<int64_t>(target.size()), pr = p.rank();
  for (int64_t i = 0; i < pr - tr; ++i)
    OF_REQUIRE(p.dim(i) == 1, node, ": ", what, " ", ShapeToString(p.shape()), " does not broadcast to ",
               ShapeToString(target));
  std::vector<int64_t> pstride(static_cast<size_t>(tr), 0);
  int64_t s = 1;
  for (int64_t i = tr - 1, j = pr - 1; i >= 0; --i, --j) {
    if (j < 0) continue;
    const int64_t d = p.dim(j);
    OF_REQUIRE(d == target[i] || d == 1, node, ": ", what, " ", ShapeToString(p.shape()),
               " does not broadcast to ", ShapeToString(target));
    pstride[i] = d == 1 ? 0 : s;
    s *= d;
  }
  const int64_t n = NumElements(target);
  std::vector<T> out(static_cast<size_t>(n));
  DispatchAll(p.dtype(), [&](auto tag) {
    using P = typename decltype(tag)::type;
    const P* src = p.data<P>();
    if (p.numel() == n) {  // same layout: plain conversion
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(CastToDouble(src[i]));
      return;
    }
    std::vector<int64_t> idx(static_cast<size_t>(tr), 0);
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      out[i] = static_cast<T>(CastToDouble(src[off]));
      for (int64_t d = tr - 1; d >= 0; --d) {
        off += pstride[d];
        if (++idx[d] < target[d]) break;
        off -= pstride[d] * target[d];
        idx[d] = 0;
      }
    }
  });
  return out;
}

// Writes per-row statistics into an optional output of any float dtype.
void StoreStats(KernelContext& ctx, size_t out_index, const std::vector<double>& vals) {
  if (!ctx.has_output(out_index)) return;
  Tensor& t = ctx.output(out_index);
  DispatchAll(t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<S>()[i] = CastFromDouble<S>(vals[i]);
  });
}

// Where a normalization op keeps its inputs and outputs (kNone: it has no such slot).
constexpr size_t kNone = static_cast<size_t>(-1);
struct NormSlots {
  bool rms;           // RMS form: no mean subtracted, no bias
  bool skip;          // ONNX Runtime's Skip*: X = input 0 + skip (input 1) + bias, normalized over the last axis
  size_t scale, bias;          // inputs (bias: LayerNorm's B / SkipLayerNorm's beta)
  size_t skip_bias;            // Skip*: the bias added before normalizing
  size_t mean_out, inv_out, sum_out;  // outputs
};

// input 0 (+ skip + bias) as one tensor of the compute type: f32 for f16/bf16 and f32, f64 for f64.
Tensor SkipSum(KernelContext& ctx, const NormSlots& slots) {
  const Tensor& in = ctx.input(0);
  const DType ct = in.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  Tensor sum = Tensor::Uninitialized(ct, in.shape());
  DispatchFloat(ct, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::string node = ctx.node_desc();
    OF_REQUIRE(in.rank() >= 2, node, ": input must have rank >= 2, got ", ShapeToString(in.shape()));
    const std::vector<T> x = ExpandParam<T>(in, in.shape(), node, "input");
    const std::vector<T> skip = ExpandParam<T>(ctx.input(1), in.shape(), node, "skip");
    std::vector<T> bias;
    if (slots.skip_bias != kNone && ctx.has_input(slots.skip_bias))
      bias = ExpandParam<T>(ctx.input(slots.skip_bias), in.shape(), node, "bias");
    T* out = sum.data<T>();
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] + skip[i] + (bias.empty() ? T(0) : bias[i]);
  });
  return sum;
}

// LayerNormalization (opset 17), RMSNormalization (opset 23) and ONNX Runtime's
// SimplifiedLayerNormalization, SkipLayerNormalization and SkipSimplifiedLayerNormalization:
// normalize over axes [axis, rank) (the last axis for the Skip forms), times scale, plus bias.
template <const NormSlots& kSlots>
void LayerNormKernel(KernelContext& ctx) {
  const Tensor sum = kSlots.skip ? SkipSum(ctx, kSlots) : Tensor();
  const Tensor& x0 = kSlots.skip ? sum : ctx.input(0);
  const int64_t axis = kSlots.skip ? x0.rank() - 1 : AxisAttr(ctx, x0.rank());
  const AxisView v = ViewAround(x0.shape(), 0, axis);  // v.n = rows, v.inner = normalized size
  const int64_t rows = v.n, n = v.inner;
  const Shape norm_shape(x0.shape().begin() + axis, x0.shape().end());
  const double eps = ctx.attrs().GetFloat("epsilon");
  auto wants = [&](size_t out) { return out != kNone && ctx.has_output(out); };
  const bool want_stats = wants(kSlots.mean_out) || wants(kSlots.inv_out);
  std::vector<double> means(want_stats ? rows : 0), invs(want_stats ? rows : 0);
  if (wants(kSlots.sum_out)) {
    Tensor& out = ctx.output(kSlots.sum_out);
    if (IsHalfDType(out.dtype())) NarrowFromFloat(sum, out);
    else std::memcpy(out.raw(), sum.raw(), out.nbytes());
  }
  // The Skip forms normalize a sum already widened to f32, so a 16-bit output is staged here.
  Tensor& y_out = ctx.output(0);
  const bool stage_y = kSlots.skip && IsHalfDType(y_out.dtype());
  Tensor y_stage = stage_y ? Tensor::Uninitialized(DType::kFloat32, y_out.shape()) : Tensor();
  if (x0.numel() != 0) {
    WithFloatStaging(x0, stage_y ? y_stage : y_out, [&](const Tensor& x, Tensor& y) {
      DispatchFloat(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const std::string node = ctx.node_desc();
        const std::vector<T> scale = ExpandParam<T>(ctx.input(kSlots.scale), norm_shape, node, "scale");
        std::vector<T> bias;
        if (kSlots.bias != kNone && ctx.has_input(kSlots.bias))
          bias = ExpandParam<T>(ctx.input(kSlots.bias), norm_shape, node, "bias");
        const T* px = x.data<T>();
        T* py = y.data<T>();
        const T* sc = scale.data();
        const T* bi = bias.empty() ? nullptr : bias.data();
        ctx.pool().ParallelFor(rows, 8.0 * static_cast<double>(n) + 10.0, [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            const T* xr = px + r * n;
            T* yr = py + r * n;
            const RowStats<T> st = ComputeRowStats<T>(xr, n, static_cast<T>(eps), kSlots.rms);
            const T mean = st.mean, inv = st.inv_std;
            if (bi) for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * inv * sc[i] + bi[i];
            else for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * inv * sc[i];
            if (want_stats) { means[r] = static_cast<double>(mean); invs[r] = static_cast<double>(inv); }
          }
        });
      });
    });
    if (stage_y) NarrowFromFloat(y_stage, y_out);
  }
  if (want_stats) {
    if (kSlots.mean_out != kNone) StoreStats(ctx, kSlots.mean_out, means);
    if (kSlots.inv_out != kNone) StoreStats(ctx, kSlots.inv_out, invs);
  }
}
constexpr NormSlots kLayerNormSlots{false, false, 1, 2, kNone, 1, 2, kNone};
constexpr NormSlots kRmsNormSlots{true, false, 1, kNone, kNone, kNone, kNone, kNone};
constexpr NormSlots kSimplifiedSlots{true, false, 1, kNone, kNone, kNone, 1, kNone};
constexpr NormSlots kSkipLayerNormSlots{false, true, 2, 3, 4, 1, 2, 3};
constexpr NormSlots kSkipSimplifiedSlots{true, true, 2, kNone, 3, 1, 2, 3};
ONEFLOW_KERNEL(LayerNormalization, LayerNormKernel<kLayerNormSlots>);
ONEFLOW_KERNEL(RMSNormalization, LayerNormKernel<kRmsNormSlots>);
ONEFLOW_KERNEL(SimplifiedLayerNormalization, LayerNormKernel<kSimplifiedSlots>);
ONEFLOW_KERNEL(MsSkipLayerNormalization, LayerNormKernel<kSkipLayerNormSlots>);
ONEFLOW_KERNEL(MsSkipSimplifiedLayerNormalization, LayerNormKernel<kSkipSimplifiedSlots>);

// ---------------------------------------------------------------------------------------------
// BatchNormalization: y = x * a[c] + b[c] with a = scale / sqrt(var + eps). Inference mode uses the
// given mean and var; training mode (opset 14+) the batch's own (biased variance, over N and the
// spatial dims) and outputs running = input * momentum + batch * (1 - momentum) (ONNX-15).

// Per channel mean and biased variance of x over (N, spatial), accumulated in double.
void BatchStats(KernelContext& ctx, const Tensor& x, const AxisView& v, std::vector<double>& mean,
                std::vector<double>& var) {
  const int64_t c_dim = v.n;
  DispatchFloating(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    ctx.pool().ParallelFor(c_dim, 3.0 * static_cast<double>(v.outer * v.inner), [&](int64_t lo, int64_t hi) {
      for (int64_t c = lo; c < hi; ++c) {
        double s = 0, q = 0;
        for (int64_t o = 0; o < v.outer; ++o) {
          const T* xr = px + (o * c_dim + c) * v.inner;
          for (int64_t i = 0; i < v.inner; ++i) s += CastToDouble(xr[i]);
        }
        const double count = static_cast<double>(v.outer * v.inner);
        const double m = count > 0 ? s / count : 0.0;
        for (int64_t o = 0; o < v.outer; ++o) {
          const T* xr = px + (o * c_dim + c) * v.inner;
          for (int64_t i = 0; i < v.inner; ++i) {
            const double d = CastToDouble(xr[i]) - m;
            q += d * d;
          }
        }
        mean[c] = m;
        var[c] = count > 0 ? q / count : 0.0;
      }
    });
  });
}

void BatchNormKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const int64_t c_dim = x0.dim(1);
  const AxisView v = ViewAround(x0.shape(), 1, 2);
  const double eps = ctx.attrs().GetFloat("epsilon");
  const bool training = ctx.attrs().GetInt("training_mode", 0) != 0;
  for (size_t i = 1; i < 5; ++i)
    OF_REQUIRE(ctx.input(i).numel() == c_dim, ctx.node_desc(), ": parameter input ", i, " must have C = ",
               c_dim, " elements");
  const Shape cshape{c_dim};
  const std::string node = ctx.node_desc();
  const auto scale = ExpandParam<double>(ctx.input(1), cshape, node, "scale");
  const auto bias = ExpandParam<double>(ctx.input(2), cshape, node, "B");
  auto mean = ExpandParam<double>(ctx.input(3), cshape, node, "input_mean");
  auto var = ExpandParam<double>(ctx.input(4), cshape, node, "input_var");
  if (training) {
    std::vector<double> bmean(static_cast<size_t>(c_dim)), bvar(static_cast<size_t>(c_dim));
    BatchStats(ctx, x0, v, bmean, bvar);
    const double momentum = ctx.attrs().GetFloat("momentum");
    for (size_t i = 1; i <= 2; ++i) {
      if (!ctx.has_output(i)) continue;
      std::vector<double> running(static_cast<size_t>(c_dim));
      for (int64_t c = 0; c < c_dim; ++c)
        running[c] = (i == 1 ? mean[c] : var[c]) * momentum + (i == 1 ? bmean[c] : bvar[c]) * (1.0 - momentum);
      StoreStats(ctx, i, running);
    }
    mean.swap(bmean);
    var.swap(bvar);
  }
  if (x0.numel() != 0) {
    WithFloatStaging(x0, ctx.output(0), [&](const Tensor& x, Tensor& y) {
      DispatchFloat(x.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        std::vector<T> a(static_cast<size_t>(c_dim)), b(static_cast<size_t>(c_dim));
        for (int64_t c = 0; c < c_dim; ++c) {
          const double s = scale[c] / std::sqrt(var[c] + eps);
          a[c] = static_cast<T>(s);
          b[c] = static_cast<T>(bias[c] - mean[c] * s);
        }
        const T* px = x.data<T>();
        T* py = y.data<T>();
        ctx.pool().ParallelFor(v.outer * c_dim, static_cast<double>(v.inner) + 4.0, [&](int64_t lo, int64_t hi) {
          for (int64_t t = lo; t < hi; ++t) {
            const T ac = a[t % c_dim], bc = b[t % c_dim];
            const T* xr = px + t * v.inner;
            T* yr = py + t * v.inner;
            for (int64_t i = 0; i < v.inner; ++i) yr[i] = xr[i] * ac + bc;
          }
        });
      });
    });
  }
  // Inference mode: any wired running statistics are the given ones.
  if (training) return;
  for (size_t i = 1; i <= 2; ++i)
    if (ctx.has_output(i)) std::memcpy(ctx.output(i).raw(), ctx.input(i + 2).raw(), ctx.output(i).nbytes());
}
ONEFLOW_KERNEL(BatchNormalization, BatchNormKernel);

// ---------------------------------------------------------------------------------------------
// InstanceNormalization and GroupNormalization: statistics per (n, group of channels).

void ChannelGroupNorm(KernelContext& ctx, int64_t groups, bool per_group_params) {
  const Tensor& x0 = ctx.input(0);
  const int64_t N = x0.dim(0), C = x0.dim(1);
  const int64_t spatial = ViewAround(x0.shape(), 2, x0.rank()).n;
  const int64_t cpg = C / groups;
  const int64_t param_len = per_group_params ? groups : C;
  const std::string node = ctx.node_desc();
  OF_REQUIRE(ctx.input(1).numel() == param_len && ctx.input(2).numel() == param_len, node,
             ": scale and bias must have ", param_len, " elements");
  const double eps = ctx.attrs().GetFloat("epsilon");
  if (x0.numel() == 0) return;
  WithFloatStaging(x0, ctx.output(0), [&](const Tensor& x, Tensor& y) {
    DispatchFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const auto scale = ExpandParam<T>(ctx.input(1), {param_len}, node, "scale");
      const auto bias = ExpandParam<T>(ctx.input(2), {param_len}, node, "bias");
      const int64_t len = cpg * spatial;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ctx.pool().ParallelFor(N * groups, 8.0 * static_cast<double>(len) + 10.0, [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t) {
          const int64_t g = t % groups;
          const T* xr = px + t * len;
          T* yr = py + t * len;
          const RowStats<T> st = ComputeRowStats<T>(xr, len, static_cast<T>(eps), false);
          for (int64_t j = 0; j < cpg; ++j) {
            const int64_t p = per_group_params ? g : g * cpg + j;
            const T a = st.inv_std * scale[p];
            const T b = bias[p] - st.mean * a;
            const T* xc = xr + j * spatial;
            T* yc = yr + j * spatial;
            for (int64_t i = 0; i < spatial; ++i) yc[i] = xc[i] * a + b;
          }
        }
      });
    });
  });
}

void InstanceNormKernel(KernelContext& ctx) {
  OF_REQUIRE(ctx.input(0).rank() >= 2, ctx.node_desc(), ": input must have rank >= 2");
  ChannelGroupNorm(ctx, ctx.input(0).dim(1), false);
}
ONEFLOW_KERNEL(InstanceNormalization, InstanceNormKernel);

void GroupNormKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  OF_REQUIRE(x.rank() >= 2, ctx.node_desc(), ": input must have rank >= 2");
  const int64_t g = ctx.attrs().GetInt("num_groups");
  OF_REQUIRE(g > 0 && x.dim(1) % g == 0, ctx.node_desc(), ": channels ", x.dim(1),
             " are not divisible by num_groups ", g);
  // Opset 18 defined scale/bias per group; opset 21 changed them to per channel.
  ChannelGroupNorm(ctx, g, ctx.opset() < 21);
}
ONEFLOW_KERNEL(GroupNormalization, GroupNormKernel);

// ---------------------------------------------------------------------------------------------
// LpNormalization: x / ||x||_p along one axis (p = 1 or 2); a zero norm gives 0.

void LpNormKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  if (x0.numel() == 0) return;
  const bool l1 = ctx.attrs().GetInt("p") == 1;
  const AxisView v = AxisAttrView(ctx, x0);
  WithFloatStaging(x0, ctx.output(0), [&](const Tensor& x, Tensor& y) {
    DispatchFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      ForEachAxisLine(ctx.pool(), v, 4.0, [&](int64_t base) {
        T s = 0;
        for (int64_t i = 0; i < v.n; ++i) {
          const T xv = px[base + i * v.inner];
          s += l1 ? std::abs(xv) : xv * xv;
        }
        const T norm = l1 ? s : std::sqrt(s);
        const T inv = norm == T(0) ? T(0) : T(1) / norm;
        for (int64_t i = 0; i < v.n; ++i) py[base + i * v.inner] = px[base + i * v.inner] * inv;
      });
    });
  });
}
ONEFLOW_KERNEL(LpNormalization, LpNormKernel);

// MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`.
void MvnKernel(KernelContext& ctx) {
  const Tensor& x0 = ctx.input(0);
  const int64_t rank = x0.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : ctx.attrs().GetInts("axes")) reduced[static_cast<size_t>(NormalizeAxis(a, rank))] = true;
  if (x0.numel() == 0) return;
  // Group id of each element = its index over the kept axes, tracked with a multi-index counter.
  std::vector<int64_t> gstride(static_cast<size_t>(rank), 0);
  int64_t groups = 1;
  for (int64_t d = rank - 1; d >= 0; --d)
    if (!reduced[d]) { gstride[d] = groups; groups *= x0.dim(d); }
  std::vector<int64_t> gid(static_cast<size_t>(x0.numel()));
  {
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
    int64_t g = 0;
    for (int64_t i = 0; i < x0.numel(); ++i) {
      gid[i] = g;
      for (int64_t d = rank - 1; d >= 0; --d) {
        g += gstride[d];
        if (++idx[d] < x0.dim(d)) break;
        g -= gstride[d] * x0.dim(d);
        idx[d] = 0;
      }
    }
  }
  const double count = static_cast<double>(x0.numel() / groups);
  WithFloatStaging(x0, ctx.output(0), [&](const Tensor& x, Tensor& y) {
    DispatchFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* px = x.data<T>();
      T* py = y.data<T>();
      std::vector<double> sum(static_cast<size_t>(groups), 0.0), sq(static_cast<size_t>(groups), 0.0);
      for (int64_t i = 0; i < x.numel(); ++i) {
        sum[gid[i]] += px[i];
        sq[gid[i]] += static_cast<double>(px[i]) * px[i];
      }
      std::vector<T> mean(static_cast<size_t>(groups)), inv(static_cast<size_t>(groups));
      for (int64_t g = 0; g < groups; ++g) {
        const double m = sum[g] / count;
        const double var = std::max(sq[g] / count - m * m, 0.0);
        mean[g] = static_cast<T>(m);
        inv[g] = static_cast<T>(1.0 / (std::sqrt(var) + 1e-9));
      }
      for (int64_t i = 0; i < x.numel(); ++i) py[i] = (px[i] - mean[gid[i]]) * inv[gid[i]];
    });
  });
}
ONEFLOW_KERNEL(MeanVarianceNormalization, MvnKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
