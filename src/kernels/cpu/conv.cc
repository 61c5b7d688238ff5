// CPU kernel: Conv (1-D/2-D/3-D, groups, dilations, pads, strides, auto_pad) and FusedConv.
// f32 2-D with constant weights (grouped and depthwise included): oneDNN. Otherwise f32: im2col +
// the packed SGEMM (weights packed once per group), bias/residual/activation in the GEMM epilogue;
// 1x1 stride-1 convs skip im2col; depthwise convs use a direct loop. f64: im2col + reference GEMM.
// FusedConv in NHWC (layout pass): oneDNN with the epilogue as post-ops, else the NCHW path
// between transposes.
#include <cstring>

#include "graph/ops/conv_shape.h"
#include "kernels/cpu/half_compute.h"
#include "kernels/cpu/conv_direct.h"
#include "kernels/cpu/conv_dnnl.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/tensor_copy.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

void SetConvPlanSpatial(ConvPlan& p, const ConvGeometry& g, const int64_t* out_spatial, const char* op) {
  const int64_t lead = 3 - g.spatial;
  OF_REQUIRE(lead >= 0, op, ": at most 3 spatial dims are supported, got ", g.spatial);
  for (int64_t i = 0; i < 3; ++i) {
    const bool real = i >= lead;
    const size_t j = static_cast<size_t>(i - lead);
    p.in[i] = real ? g.in[j] : 1;
    p.out[i] = real ? out_spatial[j] : 1;
    p.k[i] = real ? g.kernel[j] : 1;
    p.s[i] = real ? g.strides[j] : 1;
    p.d[i] = real ? g.dilations[j] : 1;
    p.p[i] = real ? g.pad_begin[j] : 0;
  }
  p.in_size = p.in[0] * p.in[1] * p.in[2];
  p.out_size = p.out[0] * p.out[1] * p.out[2];
  p.kernel_size = p.k[0] * p.k[1] * p.k[2];
}

namespace {

// Grow-only per-thread scratch for the im2col matrix: no page faults on every run.
template <typename T>
T* ColScratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

ConvPlan MakePlan(const ConvGeometry& g, const Shape& x, const Shape& w) {
  ConvPlan p;
  p.N = x[0];
  p.C = x[1];
  p.M = w[0];
  p.G = g.group;
  p.Cg = p.C / p.G;
  p.Mg = p.M / p.G;
  OF_REQUIRE(p.Cg * p.G == p.C && w[1] == p.Cg && p.Mg * p.G == p.M, "Conv: X ", ShapeToString(x), " and W ",
             ShapeToString(w), " do not match group ", g.group);
  SetConvPlanSpatial(p, g, g.out.data(), op::kConv);
  return p;
}

// col[(c, kd, kh, kw), (od, oh, ow)] = x[c, od*s - p + kd*d, ...] or 0 outside the input.
template <typename T>
void Im2Col(const ConvPlan& p, const T* x, T* col, ThreadPool& pool) {
  const int64_t rows = p.Cg * p.kernel_size;
  pool.ParallelFor(rows, static_cast<double>(p.out_size), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t rem = r;
      const int64_t kw = rem % p.k[2];
      rem /= p.k[2];
      const int64_t kh = rem % p.k[1];
      rem /= p.k[1];
      const int64_t kd = rem % p.k[0];
      const int64_t c = rem / p.k[0];
      const T* xc = x + c * p.in_size;
      T* dst = col + r * p.out_size;
      for (int64_t od = 0; od < p.out[0]; ++od) {
        const int64_t id = od * p.s[0] - p.p[0] + kd * p.d[0];
        for (int64_t oh = 0; oh < p.out[1]; ++oh) {
          T* drow = dst + (od * p.out[1] + oh) * p.out[2];
          const int64_t ih = oh * p.s[1] - p.p[1] + kh * p.d[1];
          if (id < 0 || id >= p.in[0] || ih < 0 || ih >= p.in[1]) {
            std::fill(drow, drow + p.out[2], T(0));
            continue;
          }
          const T* srow = xc + (id * p.in[1] + ih) * p.in[2];
          const int64_t off = kw * p.d[2] - p.p[2];
          // Valid ow range: 0 <= ow*s + off < in.
          int64_t lo = off >= 0 ? 0 : (-off + p.s[2] - 1) / p.s[2];
          int64_t hi = p.in[2] - off <= 0 ? 0 : (p.in[2] - off - 1) / p.s[2] + 1;
          lo = std::min(lo, p.out[2]);
          hi = std::max(lo, std::min(hi, p.out[2]));
          std::fill(drow, drow + lo, T(0));
          if (p.s[2] == 1) {
            std::memcpy(drow + lo, srow + lo + off, static_cast<size_t>(hi - lo) * sizeof(T));
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) drow[ow] = srow[ow * p.s[2] + off];
          }
          std::fill(drow + hi, drow + p.out[2], T(0));
        }
      }
    }
  });
}

// Depthwise (one input and one output channel per group): direct accumulation per channel.
void DepthwiseConv(const ConvPlan& p, const float* x, const float* w, const float* bias, const float* z,
                   const ActivationParams& act, float* y, ThreadPool& pool) {
  pool.ParallelFor(p.N * p.C, static_cast<double>(p.out_size * p.kernel_size) * 2, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t c = nc % p.C;
      const float* xc = x + nc * p.in_size;
      const float* wc = w + c * p.kernel_size;
      float* yc = y + nc * p.out_size;
      std::fill(yc, yc + p.out_size, bias ? bias[c] : 0.0f);
      for (int64_t kd = 0; kd < p.k[0]; ++kd)
        for (int64_t kh = 0; kh < p.k[1]; ++kh)
          for (int64_t kw = 0; kw < p.k[2]; ++kw) {
            const float wv = wc[(kd * p.k[1] + kh) * p.k[2] + kw];
            const int64_t off = kw * p.d[2] - p.p[2];
            int64_t lo = off >= 0 ? 0 : (-off + p.s[2] - 1) / p.s[2];
            int64_t hi = p.in[2] - off <= 0 ? 0 : (p.in[2] - off - 1) / p.s[2] + 1;
            lo = std::min(lo, p.out[2]);
            hi = std::max(lo, std::min(hi, p.out[2]));
            for (int64_t od = 0; od < p.out[0]; ++od) {
              const int64_t id = od * p.s[0] - p.p[0] + kd * p.d[0];
              if (id < 0 || id >= p.in[0]) continue;
              for (int64_t oh = 0; oh < p.out[1]; ++oh) {
                const int64_t ih = oh * p.s[1] - p.p[1] + kh * p.d[1];
                if (ih < 0 || ih >= p.in[1]) continue;
                const float* src = xc + (id * p.in[1] + ih) * p.in[2] + off;
                float* dst = yc + (od * p.out[1] + oh) * p.out[2];
                if (p.s[2] == 1) {
                  for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += wv * src[ow];
                } else {
                  for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += wv * src[ow * p.s[2]];
                }
              }
            }
          }
      if (z) {
        const float* zc = z + nc * p.out_size;
        for (int64_t i = 0; i < p.out_size; ++i) yc[i] += zc[i];
      }
      ApplyActivation(act, yc, p.out_size);
    }
  });
}

DirectConvGeometry DirectGeometry(const AttrMap& attrs, int64_t h, int64_t w, const Tensor& weights,
                                  const std::string& node) {
  const ConvGeometry geo = ResolveConvGeometry(attrs, {h, w}, {weights.dim(2), weights.dim(3)}, node);
  return DirectConvGeometry{0, h, w, weights.dim(1), weights.dim(0), weights.dim(2), weights.dim(3),
                            geo.strides[0], geo.strides[1], geo.dilations[0], geo.dilations[1],
                            geo.pad_begin[0], geo.pad_begin[1], geo.out[0], geo.out[1]};
}

// A k x 1 conv over a width-1 map (a 1-D conv as TF and JAX exporters write it: [N, C, L, 1]) as
// the 1 x k conv over [N, C, 1, L]. Input, weights and output have a unit axis on both sides, so
// their memory is the same in NCHW and in NHWC; oneDNN runs 1 x k rows at full vector width, where
// the k x 1 form gives it L rows one pixel wide (measured 3-4x slower, bench: conv_k5x1).
DnnlConvParams TransposedSpatialAxes(DnnlConvParams p) {
  std::swap(p.h, p.w);
  std::swap(p.kh, p.kw);
  std::swap(p.sh, p.sw);
  std::swap(p.dh, p.dw);
  std::swap(p.pt, p.pl);
  std::swap(p.pb, p.pr);
  std::swap(p.oh, p.ow);
  return p;
}

bool IsPointwise(const ConvPlan& p) {
  for (int i = 0; i < 3; ++i)
    if (p.k[i] != 1 || p.s[i] != 1 || p.p[i] != 0 || p.in[i] != p.out[i]) return false;
  return true;
}

}  // namespace

ConvKernel::ConvKernel(const KernelInitContext& init) : act_(ReadActivation(init.attrs())), attrs_(init.attrs()) {
  nhwc_ = attrs_.GetString("layout", "NCHW") == "NHWC";
  has_bias_ = init.node().has_input(2);
  has_residual_ = init.node().has_input(3);
  const Tensor* w = init.constant_input(1);
  const AttrMap& attrs = init.attrs();
  // NHWC, few input channels, 3-wide kernel at unit column stride (an image net's first conv):
  // the direct kernel.
  const std::vector<int64_t> strides = attrs.GetInts("strides", {1, 1}), dilations = attrs.GetInts("dilations", {1, 1});
  if (nhwc_ && w && w->dtype() == DType::kFloat32 && w->rank() == 4 && attrs.GetInt("group", 1) == 1 &&
      strides.size() == 2 && dilations.size() == 2 &&
      DirectConvNhwc::Applies(w->dim(1), w->dim(0), w->dim(3), strides[1], dilations[1])) {
    direct_ = std::make_shared<DirectConvNhwc>(w->dim(0), w->dim(1), w->dim(2), w->dim(3), w->data<float>(), act_);
    const TensorType& xt = init.input_type(0);
    if (xt.has_rank && xt.rank() == 4 && xt.dims[1].known() && xt.dims[2].known())
      direct_geo_ = DirectGeometry(attrs, xt.dims[1].value, xt.dims[2].value, *w, init.node().Describe());
    return;
  }
  // 2-D, constant f32 weights, any groups: oneDNN (measured faster than im2col + GEMM, and for
  // depthwise than our direct loop: 2.25 -> 1.69 ms on 3x3 over 96 channels at 112x112, 1 thread).
  if (w && w->dtype() == DType::kFloat32 && w->rank() == 4 && DnnlConvEnabled()) {
    dnnl_candidate_ = true;
    dnnl_weights_ = *w;
    const TensorType& xt = init.input_type(0);
    if (xt.fully_known() && xt.dtype == DType::kFloat32 && xt.rank() == 4) {
      Shape xs = xt.ToShape();
      if (nhwc_) xs = {xs[0], xs[3], xs[1], xs[2]};  // plans are keyed by the NCHW shape
      DnnlPlan(xs, init.node().Describe());
    }
  }
  if (dnnl_candidate_ || DnnlGemmEnabled()) return;
  if (w && w->dtype() == DType::kFloat32 && w->rank() >= 3) {
    const int64_t group = init.attrs().GetInt("group", 1);
    const int64_t m = w->dim(0);
    // m > 0: 0 % group == 0 for any group (the attribute's, up to 2^31 packs), and kdim divides by m.
    if (group >= 1 && m > 0 && m % group == 0 && !(w->dim(1) == 1 && m == group)) {
      const int64_t mg = m / group, kdim = w->numel() / m;
      for (int64_t g = 0; g < group; ++g)
        packed_w_.push_back(PackGemmA(mg, kdim, w->data<float>() + g * mg * kdim, kdim, false));
    }
  }
}

std::shared_ptr<DnnlConv2d> ConvKernel::DnnlPlan(const Shape& xs, const std::string& node) const {
  std::lock_guard<std::mutex> lock(dnnl_mutex_);
  auto it = dnnl_plans_.find(xs);
  if (it != dnnl_plans_.end()) return it->second;
  std::shared_ptr<DnnlConv2d> plan;
  const Tensor& w = dnnl_weights_;
  const int64_t group = attrs_.GetInt("group", 1);
  if (xs.size() == 4 && group >= 1 && xs[1] == w.dim(1) * group && w.dim(0) % group == 0 && NumElements(xs) > 0) {
    ConvGeometry g = ResolveConvGeometry(attrs_, {xs[2], xs[3]}, {w.dim(2), w.dim(3)}, node);
    DnnlConvParams p{xs[0], xs[1], xs[2], xs[3], w.dim(0), g.kernel[0], g.kernel[1], g.strides[0], g.strides[1],
                     g.dilations[0], g.dilations[1], g.pad_begin[0], g.pad_begin[1], g.pad_end[0], g.pad_end[1],
                     g.out[0], g.out[1], group};
    if (p.w == 1 && p.kw == 1 && p.pl == 0 && p.pr == 0 && p.kh > 1) p = TransposedSpatialAxes(p);
    if (p.oh > 0 && p.ow > 0 && p.m > 0) {
      DnnlConvEpilogue ep{has_bias_, has_residual_, act_};
      plan = CreateDnnlConv2d(p, w.data<float>(), nhwc_ ? &ep : nullptr);
    }
  }
  // A model fed many shapes keeps at most a few plans; the rest run on im2col.
  if (dnnl_plans_.size() < 8) dnnl_plans_[xs] = plan;
  return plan;
}

void ConvKernel::Compute(KernelContext& ctx) {
  if (HasHalfInput(ctx)) return ComputeHalfViaF32(ctx, [this](KernelContext& c) { Compute(c); });
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  const Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  Tensor& y = ctx.output(0);
  if (nhwc_) {
    ComputeNhwc(ctx, x, w, b, z, y);
  } else {
    ComputeNchw(ctx, x, w, b, z, y, dnnl_candidate_);
  }
}
ONEFLOW_KERNEL_CLASS(Conv, ConvKernel);
ONEFLOW_KERNEL_CLASS(FusedConv, ConvKernel);

void ConvKernel::ComputeNhwc(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* z,
                             Tensor& y) {
  OF_REQUIRE(x.rank() == 4 && w.rank() == 4, ctx.node_desc(), ": NHWC layout needs a 2-D conv, got X ",
             ShapeToString(x.shape()));
  if (z) OF_REQUIRE(z->shape() == y.shape(), ctx.node_desc(), ": residual shape ", ShapeToString(z->shape()),
                    " differs from the output ", ShapeToString(y.shape()));
  if (y.numel() == 0) return;
  if (direct_ && x.dtype() == DType::kFloat32) {
    // The geometry of the static input shape is resolved once; other shapes every run.
    DirectConvGeometry g = direct_geo_.h == x.dim(1) && direct_geo_.w == x.dim(2)
                               ? direct_geo_
                               : DirectGeometry(ctx.attrs(), x.dim(1), x.dim(2), w, ctx.node_desc());
    g.n = x.dim(0);
    OF_CHECK(g.oh == y.dim(1) && g.ow == y.dim(2) && g.c == x.dim(3), kInternal, ctx.node_desc(),
             ": direct conv geometry does not match the shapes");
    direct_->Run(g, x.data<float>(), b ? b->data<float>() : nullptr, z ? z->data<float>() : nullptr, y.data<float>(),
                 ctx.pool());
    return;
  }
  const Shape xs{x.dim(0), x.dim(3), x.dim(1), x.dim(2)};
  if (dnnl_candidate_ && x.dtype() == DType::kFloat32) {
    if (std::shared_ptr<DnnlConv2d> plan = DnnlPlan(xs, ctx.node_desc())) {
      RunDnnlConv2dNhwc(*plan, x.data<float>(), b ? b->data<float>() : nullptr, z ? z->data<float>() : nullptr,
                        y.data<float>(), ctx.pool());
      return;
    }
  }
  // No oneDNN plan: the NCHW path between layout copies.
  const std::vector<int64_t> to_nchw{0, 3, 1, 2}, to_nhwc{0, 2, 3, 1};
  const size_t es = DTypeSize(x.dtype());
  Tensor xn = Tensor::Uninitialized(x.dtype(), xs);
  TransposeCopy(x.raw(), xn.raw(), x.shape(), to_nchw, es, &ctx.pool());
  const Shape ys{y.dim(0), y.dim(3), y.dim(1), y.dim(2)};
  Tensor zn;
  if (z) {
    zn = Tensor::Uninitialized(z->dtype(), ys);
    TransposeCopy(z->raw(), zn.raw(), z->shape(), to_nchw, es, &ctx.pool());
  }
  Tensor yn = Tensor::Uninitialized(y.dtype(), ys);
  ComputeNchw(ctx, xn, w, b, z ? &zn : nullptr, yn, false);
  TransposeCopy(yn.raw(), y.raw(), ys, to_nhwc, es, &ctx.pool());
}

void ConvKernel::ComputeNchw(KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor* b, const Tensor* z,
                             Tensor& y, bool use_dnnl) {
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end()), wk(w.shape().begin() + 2, w.shape().end());
  ConvGeometry geo = ResolveConvGeometry(ctx.attrs(), in, wk, ctx.node_desc());
  ConvPlan p = MakePlan(geo, x.shape(), w.shape());
  if (z) OF_REQUIRE(z->shape() == y.shape(), ctx.node_desc(), ": residual shape ", ShapeToString(z->shape()),
                    " differs from the output ", ShapeToString(y.shape()));
  if (y.numel() == 0) return;
  const int64_t kdim = p.Cg * p.kernel_size;
  if (x.dtype() == DType::kFloat32) {
    const float* px = x.data<float>();
    const float* pw = w.data<float>();
    const float* pb = b ? b->data<float>() : nullptr;
    float* py = y.data<float>();
    if (use_dnnl) {
      if (std::shared_ptr<DnnlConv2d> plan = DnnlPlan(x.shape(), ctx.node_desc())) {
        RunDnnlConv2d(*plan, px, pb, z ? z->data<float>() : nullptr, act_, py, ctx.pool());
        return;
      }
    }
    if (p.Cg == 1 && p.Mg == 1) {
      DepthwiseConv(p, px, pw, pb, z ? z->data<float>() : nullptr, act_, py, ctx.pool());
      return;
    }
    const bool pointwise = IsPointwise(p);
    float* col = pointwise ? nullptr : ColScratch<float>(static_cast<size_t>(kdim * p.out_size));
    for (int64_t n = 0; n < p.N; ++n) {
      for (int64_t g = 0; g < p.G; ++g) {
        const float* xg = px + (n * p.C + g * p.Cg) * p.in_size;
        if (!pointwise) Im2Col<float>(p, xg, col, ctx.pool());
        const int64_t yoff = (n * p.M + g * p.Mg) * p.out_size;
        GemmEpilogue ep;
        ep.row_bias = pb ? pb + g * p.Mg : nullptr;
        ep.residual = z ? z->data<float>() + yoff : nullptr;
        ep.act = act_;
        const GemmOperand a = packed_w_.empty() ? GemmOperand::Raw(pw + g * p.Mg * kdim, kdim)
                                                : GemmOperand::Packed(packed_w_[static_cast<size_t>(g)]);
        Sgemm(p.Mg, p.out_size, kdim, 1.0f, a, GemmOperand::Raw(pointwise ? xg : col, p.out_size), 0.0f, py + yoff,
              p.out_size, &ep, &ctx.pool());
      }
    }
    return;
  }
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    T* py = y.data<T>();
    T* col = ColScratch<T>(static_cast<size_t>(kdim * p.out_size));
    for (int64_t n = 0; n < p.N; ++n) {
      for (int64_t g = 0; g < p.G; ++g) {
        Im2Col<T>(p, px + (n * p.C + g * p.Cg) * p.in_size, col, ctx.pool());
        T* yg = py + (n * p.M + g * p.Mg) * p.out_size;
        ReferenceGemm<T>(p.Mg, p.out_size, kdim, T(1), pw + g * p.Mg * kdim, kdim, false, col, p.out_size, false, T(0),
                         yg, p.out_size);
        for (int64_t m = 0; m < p.Mg; ++m) {
          T* row = yg + m * p.out_size;
          const T bv = b ? b->data<T>()[g * p.Mg + m] : T(0);
          const T* zr = z ? z->data<T>() + (row - py) : nullptr;
          for (int64_t i = 0; i < p.out_size; ++i) row[i] += bv + (zr ? zr[i] : T(0));
          ApplyActivation(act_, row, p.out_size);
        }
      }
    }
  });
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
