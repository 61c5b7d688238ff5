// CPU kernel: ConvTranspose (1-D/2-D/3-D, groups, dilations, pads, output_padding, output_shape,
// auto_pad). cols = W_g^T x X_g by GEMM, then col2im scatters each column into the output.
#include "graph/ops/conv_shape.h"
#include "kernels/cpu/half_compute.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

ConvPlan MakeConvPlan(const ConvGeometry& g, const Shape& x, const Shape& w, const Shape& y) {
  ConvPlan p;
  p.N = x[0];
  p.C = x[1];
  p.G = g.group;
  p.Cg = p.C / p.G;
  p.Mg = w[1];
  p.M = y[1];
  OF_REQUIRE(w[0] == p.C && p.Cg * p.G == p.C && p.M == p.Mg * p.G, "ConvTranspose: X ", ShapeToString(x), " and W ",
             ShapeToString(w), " do not match group ", g.group);
  SetConvPlanSpatial(p, g, y.data() + 2, op::kConvTranspose);
  return p;
}

// y[m, i*s - p + k*d] += cols[(m, k), i] for every position that lands inside the output.
// Parallel over output channels: each owns its rows of cols and its output plane.
template <typename T>
void Col2Im(const ConvPlan& p, const T* cols, T* y, ThreadPool& pool) {
  pool.ParallelFor(p.Mg, static_cast<double>(p.kernel_size * p.in_size), [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      T* ym = y + m * p.out_size;
      for (int64_t kd = 0; kd < p.k[0]; ++kd)
        for (int64_t kh = 0; kh < p.k[1]; ++kh)
          for (int64_t kw = 0; kw < p.k[2]; ++kw) {
            const T* src = cols + ((m * p.k[0] + kd) * p.k[1] + kh) * p.k[2] * p.in_size + kw * p.in_size;
            for (int64_t id = 0; id < p.in[0]; ++id) {
              const int64_t od = id * p.s[0] - p.p[0] + kd * p.d[0];
              if (od < 0 || od >= p.out[0]) continue;
              for (int64_t ih = 0; ih < p.in[1]; ++ih) {
                const int64_t oh = ih * p.s[1] - p.p[1] + kh * p.d[1];
                if (oh < 0 || oh >= p.out[1]) continue;
                const T* srow = src + (id * p.in[1] + ih) * p.in[2];
                T* drow = ym + (od * p.out[1] + oh) * p.out[2];
                for (int64_t iw = 0; iw < p.in[2]; ++iw) {
                  const int64_t ow = iw * p.s[2] - p.p[2] + kw * p.d[2];
                  if (ow >= 0 && ow < p.out[2]) drow[ow] += srow[iw];
                }
              }
            }
          }
    }
  });
}

template <typename T>
T* ColsScratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace

ConvTransposeKernel::ConvTransposeKernel(const KernelInitContext& init) {
  const Tensor* w = init.constant_input(1);
  if (w && w->dtype() == DType::kFloat32 && w->rank() >= 3 && !DnnlGemmEnabled()) {
    const int64_t group = init.attrs().GetInt("group", 1);
    const int64_t c = w->dim(0);
    if (group >= 1 && c > 0 && c % group == 0) {  // c > 0: 0 % group == 0 for any group, and rows divides by c
      const int64_t cg = c / group, rows = w->numel() / c;  // rows = Mg * kernel_size
      for (int64_t g = 0; g < group; ++g)
        packed_w_.push_back(PackGemmA(rows, cg, w->data<float>() + g * cg * rows, rows, true));
    }
  }
}

void ConvTransposeKernel::Compute(KernelContext& ctx) {
  if (HasHalfInput(ctx)) return ComputeHalfViaF32(ctx, [this](KernelContext& c) { Compute(c); });
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end()), wk(w.shape().begin() + 2, w.shape().end());
  ConvGeometry geo = ResolveConvTransposeGeometry(ctx.attrs(), in, wk, ctx.node_desc());
  ConvPlan p = MakeConvPlan(geo, x.shape(), w.shape(), y.shape());
  if (y.numel() == 0) return;
  const int64_t rows = p.Mg * p.kernel_size;
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    const T* pw = w.data<T>();
    T* py = y.data<T>();
    T* cols = ColsScratch<T>(static_cast<size_t>(rows * p.in_size));
    for (int64_t n = 0; n < p.N; ++n) {
      for (int64_t g = 0; g < p.G; ++g) {
        const T* xg = px + (n * p.C + g * p.Cg) * p.in_size;
        const T* wg = pw + g * p.Cg * rows;
        if constexpr (std::is_same_v<T, float>) {
          const GemmOperand a = packed_w_.empty() ? GemmOperand::Raw(wg, rows, true)
                                                  : GemmOperand::Packed(packed_w_[static_cast<size_t>(g)]);
          Sgemm(rows, p.in_size, p.Cg, 1.0f, a, GemmOperand::Raw(xg, p.in_size), 0.0f, cols, p.in_size, nullptr,
                &ctx.pool());
        } else {
          ReferenceGemm<T>(rows, p.in_size, p.Cg, T(1), wg, rows, true, xg, p.in_size, false, T(0), cols, p.in_size);
        }
        T* yg = py + (n * p.M + g * p.Mg) * p.out_size;
        for (int64_t m = 0; m < p.Mg; ++m) {
          const T bv = b ? b->data<T>()[g * p.Mg + m] : T(0);
          std::fill(yg + m * p.out_size, yg + (m + 1) * p.out_size, bv);
        }
        Col2Im<T>(p, cols, yg, ctx.pool());
      }
    }
  });
}
ONEFLOW_KERNEL_CLASS(ConvTranspose, ConvTransposeKernel);

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
