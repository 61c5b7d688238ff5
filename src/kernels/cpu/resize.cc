// CPU kernels: Resize (nearest / N-linear / cubic, antialias, all coordinate modes) and GridSample.
#include <cmath>
#include <cstring>

#include "graph/ops/spatial_util.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// Resize is separable: each resized axis maps every output position to a few input positions
// with weights (taps). Taps are precomputed per axis, then applied one axis at a time.
struct AxisTaps {
  int64_t in = 0, out = 0, n = 1;   // n taps per output position
  std::vector<int64_t> idx;         // out * n, clamped to [0, in)
  std::vector<double> w;            // out * n
  std::vector<char> extrapolate;    // per output position (tf_crop_and_resize outside the input)
};

struct ResizeParams {
  std::string mode, coord, nearest_mode;
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false, antialias = false;
};

// Maps output coordinate y to the input coordinate per coordinate_transformation_mode.
double SourceCoord(const std::string& coord, double y, double scale, int64_t in, int64_t out_int, double roi_s,
                   double roi_e, const std::string& node) {
  const double out_w = scale * static_cast<double>(in);  // the reference uses the unrounded length
  const double n = static_cast<double>(in);
  if (coord == "half_pixel") return (y + 0.5) / scale - 0.5;
  if (coord == "asymmetric") return y / scale;
  if (coord == "align_corners") return out_w == 1 ? 0.0 : y * (n - 1) / (out_w - 1);
  if (coord == "pytorch_half_pixel") return out_w == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (coord == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out_int) / out_w;
    return n / 2 * (1 - adjustment) + (y + 0.5) / scale - 0.5;
  }
  if (coord == "tf_crop_and_resize") {
    double x = out_w == 1 ? (roi_e - roi_s) * (n - 1) / 2 : y * (roi_e - roi_s) * (n - 1) / (out_w - 1);
    return x + roi_s * (n - 1);
  }
  Fail(ErrorCode::kUnsupported, node, ": unsupported coordinate_transformation_mode '", coord, "'");
}

double CubicWeight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

AxisTaps ComputeTaps(const ResizeParams& p, int64_t in, int64_t out, double scale, double roi_s, double roi_e,
                     const std::string& node) {
  AxisTaps t;
  t.in = in;
  t.out = out;
  const bool nearest = p.mode == "nearest";
  const double s_eff = p.antialias && !nearest ? std::min(scale, 1.0) : 1.0;
  int64_t start = 0;
  if (!nearest) {
    if (p.mode == "linear") start = p.antialias ? static_cast<int64_t>(std::floor(-1 / s_eff)) + 1 : 0;
    else if (p.mode == "cubic") start = p.antialias ? static_cast<int64_t>(std::floor(-2 / s_eff)) + 1 : -1;
    else Fail(ErrorCode::kUnsupported, node, ": unsupported Resize mode '", p.mode, "'");
    t.n = 2 - 2 * start;
  }
  t.idx.resize(static_cast<size_t>(out * t.n));
  t.w.resize(static_cast<size_t>(out * t.n));
  t.extrapolate.assign(static_cast<size_t>(out), 0);
  for (int64_t o = 0; o < out; ++o) {
    const double x = SourceCoord(p.coord, static_cast<double>(o), scale, in, out, roi_s, roi_e, node);
    if (p.coord == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1))) t.extrapolate[o] = 1;
    // Prefer the pixel left of x: an integral x is treated as base x-1 with ratio 1.
    const double fl = std::floor(x);
    const bool integral = x == fl;
    const int64_t base = static_cast<int64_t>(fl) - (integral ? 1 : 0);
    const double r = integral ? 1.0 : x - fl;
    int64_t* idx = &t.idx[o * t.n];
    double* w = &t.w[o * t.n];
    if (nearest) {
      bool up;
      if (integral) up = true;
      else if (p.nearest_mode == "round_prefer_floor") up = r > 0.5;
      else if (p.nearest_mode == "round_prefer_ceil") up = r >= 0.5;
      else if (p.nearest_mode == "floor") up = false;
      else if (p.nearest_mode == "ceil") up = true;
      else Fail(ErrorCode::kUnsupported, node, ": unsupported nearest_mode '", p.nearest_mode, "'");
      idx[0] = std::min(std::max<int64_t>(base + (up ? 1 : 0), 0), in - 1);
      w[0] = 1.0;
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < t.n; ++j) {
      const double d = (static_cast<double>(start + j) - r) * s_eff;
      w[j] = p.mode == "linear" ? std::max(0.0, 1.0 - std::fabs(d)) : CubicWeight(d, p.cubic_a);
      idx[j] = base + start + j;
      sum += w[j];
    }
    if (p.antialias && sum != 0)
      for (int64_t j = 0; j < t.n; ++j) w[j] /= sum;
    if (p.exclude_outside) {
      sum = 0;
      for (int64_t j = 0; j < t.n; ++j) {
        if (idx[j] < 0 || idx[j] >= in) w[j] = 0;
        sum += w[j];
      }
      if (sum != 0)
        for (int64_t j = 0; j < t.n; ++j) w[j] /= sum;
    }
    for (int64_t j = 0; j < t.n; ++j) idx[j] = std::min(std::max<int64_t>(idx[j], 0), in - 1);
  }
  return t;
}

// Resizes axis `axis` of `src` (shape `shape`) into `dst`; updates shape[axis].
template <typename A>
void ApplyTaps(ThreadPool& pool, const A* src, A* dst, Shape& shape, size_t axis, const AxisTaps& t, A extrap) {
  const int64_t outer = ShapeProduct(shape, 0, axis), inner = ShapeProduct(shape, axis + 1, shape.size());
  const int64_t in = t.in, out = t.out, n = t.n;
  pool.ParallelFor(outer * out, static_cast<double>(n * inner) * 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t b = i / out, o = i % out;
      A* d = dst + i * inner;
      if (t.extrapolate[o]) {
        for (int64_t k = 0; k < inner; ++k) d[k] = extrap;
        continue;
      }
      const A* s = src + b * in * inner;
      const A w0 = static_cast<A>(t.w[o * n]);
      const A* s0 = s + t.idx[o * n] * inner;
      for (int64_t k = 0; k < inner; ++k) d[k] = w0 * s0[k];
      for (int64_t j = 1; j < n; ++j) {
        const A wj = static_cast<A>(t.w[o * n + j]);
        if (wj == A(0)) continue;
        const A* sj = s + t.idx[o * n + j] * inner;
        for (int64_t k = 0; k < inner; ++k) d[k] += wj * sj[k];
      }
    }
  });
  shape[axis] = out;
}

template <typename T>
T SaturateFrom(double v) {
  // SaturatingCast, not a clamp to double(max): for 64-bit types that bound rounds up to 2^63,
  // whose conversion is undefined.
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return SaturatingCast<T>(v);
  else return CastFromDouble<T>(v);
}

// Nearest mode needs no arithmetic: a gather with one input index per output position per axis.
template <typename T>
void NearestGather(ThreadPool& pool, const Tensor& x, Tensor& y, const std::vector<AxisTaps>& taps, T extrap) {
  const Shape& in = x.shape();
  const Shape& out = y.shape();
  const size_t r = in.size();
  std::vector<int64_t> stride(r);
  int64_t s = 1;
  for (size_t d = r; d-- > 0;) { stride[d] = s; s *= in[d]; }
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const int64_t row = r ? out[r - 1] : 1;
  const int64_t rows = row > 0 ? y.numel() / row : 0;
  const AxisTaps* last = r ? &taps[r - 1] : nullptr;
  pool.ParallelFor(rows, static_cast<double>(row) * 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int64_t rem = i, base = 0;
      bool ext = false;
      for (size_t d = r - 1; d-- > 0;) {
        const int64_t o = rem % out[d];
        rem /= out[d];
        base += taps[d].idx[o] * stride[d];
        ext = ext || taps[d].extrapolate[o];
      }
      T* dst = py + i * row;
      if (ext) {
        for (int64_t o = 0; o < row; ++o) dst[o] = extrap;
        continue;
      }
      if (!last) { dst[0] = px[0]; continue; }
      for (int64_t o = 0; o < row; ++o) dst[o] = last->extrapolate[o] ? extrap : px[base + last->idx[o]];
    }
  });
}

void ResizeKernel(KernelContext& ctx) {
  const std::string node = ctx.node_desc();
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const AttrMap& a = ctx.attrs();
  const int opset = ctx.opset();
  ResizeParams p;
  p.mode = a.GetString("mode");
  p.coord = a.GetString("coordinate_transformation_mode");
  p.nearest_mode = a.GetString("nearest_mode");
  p.cubic_a = a.GetFloat("cubic_coeff_a");
  p.extrapolation = a.GetFloat("extrapolation_value");
  p.exclude_outside = a.GetInt("exclude_outside") != 0;
  p.antialias = opset >= 18 && a.GetInt("antialias", 0) != 0;
  OF_CHECK(p.coord != "half_pixel_symmetric" || opset >= 19, kUnsupported, node,
           ": half_pixel_symmetric requires opset 19");
  const Tensor* scales = ctx.has_input(2) && ctx.input(2).numel() > 0 ? &ctx.input(2) : nullptr;
  const Tensor* sizes = ctx.has_input(3) && ctx.input(3).numel() > 0 ? &ctx.input(3) : nullptr;
  std::vector<double> scale;
  std::vector<int64_t> out_shape;
  ComputeResizeOutput(a, opset, x.shape(), scales, sizes, node, &scale, &out_shape);
  OF_ASSERT(out_shape == y.shape());
  const size_t r = static_cast<size_t>(x.rank());

  // Axes in the order they are resized (the axes attribute's order, else 0..r-1) and the roi per dim.
  std::vector<int64_t> axes;
  if (opset >= 18 && a.has("axes")) {
    for (int64_t v : a.GetInts("axes")) axes.push_back(v < 0 ? v + static_cast<int64_t>(r) : v);
  } else {
    for (size_t d = 0; d < r; ++d) axes.push_back(static_cast<int64_t>(d));
  }
  std::vector<double> roi_s(r, 0.0), roi_e(r, 1.0);
  if (p.coord == "tf_crop_and_resize") {
    OF_REQUIRE(ctx.has_input(1) && ctx.input(1).numel() == static_cast<int64_t>(2 * axes.size()), node,
               ": tf_crop_and_resize needs roi with ", 2 * axes.size(), " values");
    const Tensor& roi = ctx.input(1);
    for (size_t i = 0; i < axes.size(); ++i) {
      roi_s[axes[i]] = roi.GetAsDouble(static_cast<int64_t>(i));
      roi_e[axes[i]] = roi.GetAsDouble(static_cast<int64_t>(i + axes.size()));
    }
  }
  std::vector<AxisTaps> taps(r);
  std::vector<bool> identity(r, false);
  for (size_t d = 0; d < r; ++d) {
    const int64_t in = x.dim(static_cast<int64_t>(d));
    identity[d] = out_shape[d] == in && std::fabs(scale[d] - 1.0) < 1e-9 && roi_s[d] == 0.0 && roi_e[d] == 1.0;
    if (in == 0 || out_shape[d] == 0) identity[d] = out_shape[d] == in;
    OF_REQUIRE(in > 0 || out_shape[d] == 0, node, ": cannot resize an empty axis to a non-empty one");
    if (identity[d] || in == 0) {
      taps[d].in = taps[d].out = in;
      taps[d].idx.resize(static_cast<size_t>(in));
      for (int64_t i = 0; i < in; ++i) taps[d].idx[i] = i;
      taps[d].w.assign(static_cast<size_t>(in), 1.0);
      taps[d].extrapolate.assign(static_cast<size_t>(in), 0);
    } else {
      taps[d] = ComputeTaps(p, in, out_shape[d], scale[d], roi_s[d], roi_e[d], node);
    }
  }
  if (y.numel() == 0) return;

  if (p.mode == "nearest") {
    DispatchAll(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      NearestGather<T>(ctx.pool(), x, y, taps, SaturateFrom<T>(p.extrapolation));
    });
    return;
  }
  DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      Fail(ErrorCode::kUnsupported, node, ": linear/cubic Resize of bool tensors");
    } else {
      // float, f16 and bf16 interpolate in float; double and integers in double.
      using A = std::conditional_t<std::is_same_v<T, float> || kIsHalfType<T>, float, double>;
      std::vector<A> cur(static_cast<size_t>(x.numel()));
      const T* px = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) cur[i] = static_cast<A>(CastToDouble(px[i]));
      Shape shape = x.shape();
      std::vector<A> next;
      for (int64_t axis : axes) {
        if (identity[axis]) continue;
        int64_t n = 1;
        for (size_t d = 0; d < r; ++d) n *= d == static_cast<size_t>(axis) ? out_shape[d] : shape[d];
        next.resize(static_cast<size_t>(n));
        ApplyTaps<A>(ctx.pool(), cur.data(), next.data(), shape, static_cast<size_t>(axis), taps[axis],
                     static_cast<A>(p.extrapolation));
        cur.swap(next);
      }
      T* py = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) py[i] = SaturateFrom<T>(static_cast<double>(cur[i]));
    }
  });
}
ONEFLOW_KERNEL(Resize, ResizeKernel);

// ---- GridSample ----

double Reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void GridSampleKernel(KernelContext& ctx) {
  const std::string node = ctx.node_desc();
  const Tensor& x = ctx.input(0);
  const Tensor& grid = ctx.input(1);
  Tensor& y = ctx.output(0);
  std::string mode = ctx.attrs().GetString("mode");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  const std::string padding = ctx.attrs().GetString("padding_mode");
  const bool align = ctx.attrs().GetInt("align_corners") != 0;
  OF_CHECK(mode == "linear" || mode == "cubic" || mode == "nearest", kUnsupported, node, ": unsupported mode '",
           mode, "'");
  OF_CHECK(padding == "zeros" || padding == "border" || padding == "reflection", kUnsupported, node,
           ": unsupported padding_mode '", padding, "'");
  const int64_t r = x.rank() - 2;
  OF_REQUIRE(grid.dim(0) == x.dim(0), node, ": grid batch ", grid.dim(0), " differs from X batch ", x.dim(0));
  OF_CHECK(mode != "cubic" || r == 2, kUnsupported, node, ": cubic GridSample is only supported for 4-D inputs");
  const int64_t N = x.dim(0), C = x.dim(1);
  std::vector<int64_t> dims(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> stride(r);
  int64_t plane = 1;
  for (int64_t d = r; d-- > 0;) { stride[d] = plane; plane *= dims[d]; }
  const int64_t outs = N > 0 && C > 0 ? y.numel() / (N * C) : 0;
  const int64_t ntap = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  int64_t combos = 1;
  for (int64_t d = 0; d < r; ++d) combos *= ntap;

  DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      Fail(ErrorCode::kUnsupported, node, ": GridSample of bool tensors");
    } else {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      DispatchAll(grid.dtype(), [&](auto gtag) {
        using G = typename decltype(gtag)::type;
        const G* pg = grid.data<G>();
        ctx.pool().ParallelFor(N * outs, static_cast<double>(C * combos) * 4, [&](int64_t begin, int64_t end) {
          std::vector<int64_t> idx(static_cast<size_t>(r * ntap));
          std::vector<char> ok(static_cast<size_t>(r * ntap));
          std::vector<double> w(static_cast<size_t>(r * ntap));
          for (int64_t i = begin; i < end; ++i) {
            const int64_t n = i / outs, o = i % outs;
            for (int64_t d = 0; d < r; ++d) {
              // grid's last dim lists coordinates innermost-first (x = width, y = height, ...).
              const double g = CastToDouble(pg[i * r + (r - 1 - d)]);
              const double len = static_cast<double>(dims[d]);
              double c = align ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2;
              const double lo = align ? 0.0 : -0.5, hi = align ? len - 1 : len - 0.5;
              if (mode == "nearest") c = std::nearbyint(c);  // round half to even, like PyTorch
              if (c < lo || c > hi) {
                if (padding == "border") c = std::min(std::max(c, 0.0), len - 1);
                else if (padding == "reflection") c = Reflect(c, lo, hi);
              }
              int64_t first;
              if (mode == "nearest") {
                first = static_cast<int64_t>(c);  // truncation, as the reference casts to int
                w[d * ntap] = 1;
              } else {
                const double f = std::floor(c), t = c - f;
                first = static_cast<int64_t>(f) - (ntap == 4 ? 1 : 0);
                for (int64_t j = 0; j < ntap; ++j)
                  w[d * ntap + j] = ntap == 2 ? (j == 0 ? 1 - t : t) : CubicWeight(static_cast<double>(j - 1) - t, -0.75);
              }
              for (int64_t j = 0; j < ntap; ++j) {
                int64_t k = first + j;
                bool inside = k >= 0 && k < dims[d];
                if (!inside && padding == "border") { k = std::min(std::max<int64_t>(k, 0), dims[d] - 1); inside = true; }
                if (!inside && padding == "reflection") {
                  k = static_cast<int64_t>(Reflect(static_cast<double>(k), lo, hi));
                  k = std::min(std::max<int64_t>(k, 0), dims[d] - 1);
                  inside = true;
                }
                idx[d * ntap + j] = k;
                ok[d * ntap + j] = inside;
              }
            }
            for (int64_t c = 0; c < C; ++c) {
              const T* src = px + (n * C + c) * plane;
              double acc = 0;
              for (int64_t combo = 0; combo < combos; ++combo) {
                int64_t rem = combo, off = 0;
                double weight = 1;
                bool inside = true;
                for (int64_t d = r; d-- > 0;) {
                  const int64_t j = rem % ntap;
                  rem /= ntap;
                  weight *= w[d * ntap + j];
                  inside = inside && ok[d * ntap + j];
                  off += idx[d * ntap + j] * stride[d];
                }
                if (inside && weight != 0) acc += weight * CastToDouble(src[off]);
              }
              py[(n * C + c) * outs + o] = SaturateFrom<T>(acc);
            }
          }
        });
      });
    }
  });
}
ONEFLOW_KERNEL(GridSample, GridSampleKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
