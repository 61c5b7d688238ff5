// CPU kernel: DeformConv (graph/ops/deform_conv.cc), f32 and f64. Per image: a column matrix of
// [C kH kW, oH oW] holding, for each input channel and kernel tap, X sampled bilinearly at the tap's
// place plus its offset (taps between pixels blend their four neighbours; neighbours outside X count
// as zero, as GridSample with align_corners and zero padding gives), times the mask; then per group
// Y_g = W_g [M / group, C / group kH kW] x columns_g, and the bias. Columns are filled in parallel over
// input channels.
#include <cmath>
#include <type_traits>
#include <vector>

#include "graph/ops/conv_shape.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa_region.h"
#include "kernels/kernel.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

template <typename T>
T Bilinear(const T* image, int64_t h, int64_t w, double y, double x) {
  if (!(y > -1.0 && y < static_cast<double>(h) && x > -1.0 && x < static_cast<double>(w))) return T(0);  // NaN too
  const double y0f = std::floor(y), x0f = std::floor(x);
  const int64_t y0 = static_cast<int64_t>(y0f), x0 = static_cast<int64_t>(x0f);
  const double dy = y - y0f, dx = x - x0f;
  auto at = [&](int64_t r, int64_t c) -> double {
    return r >= 0 && r < h && c >= 0 && c < w ? static_cast<double>(image[r * w + c]) : 0.0;
  };
  return static_cast<T>((1 - dy) * ((1 - dx) * at(y0, x0) + dx * at(y0, x0 + 1)) +
                        dy * ((1 - dx) * at(y0 + 1, x0) + dx * at(y0 + 1, x0 + 1)));
}

class DeformConvKernel final : public OpKernel {
 public:
  explicit DeformConvKernel(const KernelInitContext&) {}

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& offset = ctx.input(2);
    Tensor& y = ctx.output(0);
    const ConvGeometry g = ResolveConvGeometry(ctx.attrs(), {x.dim(2), x.dim(3)}, {w.dim(2), w.dim(3)}, ctx.node_desc());
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
    const int64_t m = w.dim(0), kh = g.kernel[0], kw = g.kernel[1], taps = kh * kw;
    const int64_t oh = y.dim(2), ow = y.dim(3), positions = oh * ow;
    const int64_t groups = ctx.attrs().GetInt("offset_group"), group = g.group;
    const int64_t channels_per_offset_group = c / groups;
    const int64_t k = c / group * taps;  // the GEMM's inner dimension per group
    DispatchFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xd = x.data<T>();
      const T* wdata = w.data<T>();
      const T* od = offset.data<T>();
      const T* mask = ctx.has_input(4) ? ctx.input(4).data<T>() : nullptr;
      const T* bias = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
      T* yd = y.data<T>();
      std::vector<T> columns(static_cast<size_t>(c * taps * positions));
      for (int64_t b = 0; b < n; ++b) {
        ctx.pool().ParallelFor(c, static_cast<double>(taps * positions) * 12.0, [&](int64_t begin, int64_t end) {
          for (int64_t ch = begin; ch < end; ++ch) {
            const int64_t og = ch / channels_per_offset_group;
            const T* image = xd + (b * c + ch) * h * wd;
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t tap = i * kw + j;
                const T* dy = od + ((b * groups + og) * taps * 2 + tap * 2) * positions;
                const T* dx = dy + positions;
                const T* scale = mask ? mask + ((b * groups + og) * taps + tap) * positions : nullptr;
                T* col = columns.data() + (ch * taps + tap) * positions;
                for (int64_t p = 0; p < oh; ++p)
                  for (int64_t q = 0; q < ow; ++q) {
                    const int64_t pos = p * ow + q;
                    const double sy = static_cast<double>(p * g.strides[0] - g.pad_begin[0] + i * g.dilations[0]) +
                                      static_cast<double>(dy[pos]);
                    const double sx = static_cast<double>(q * g.strides[1] - g.pad_begin[1] + j * g.dilations[1]) +
                                      static_cast<double>(dx[pos]);
                    const T v = Bilinear(image, h, wd, sy, sx);
                    col[pos] = scale ? v * scale[pos] : v;
                  }
              }
          }
        });
        const int64_t mg = m / group;
        for (int64_t gi = 0; gi < group; ++gi) {
          T* out = yd + (b * m + gi * mg) * positions;
          const T* a = wdata + gi * mg * k;
          const T* cols = columns.data() + gi * k * positions;
          if constexpr (std::is_same_v<T, float>) {
            Sgemm(mg, positions, k, 1.0f, GemmOperand::Raw(a, k), GemmOperand::Raw(cols, positions), 0.0f, out,
                  positions, nullptr, &ctx.pool());
          } else {
            ReferenceGemm<T>(mg, positions, k, T(1), a, k, false, cols, positions, false, T(0), out, positions);
          }
          if (bias)
            for (int64_t o = 0; o < mg; ++o)
              for (int64_t pos = 0; pos < positions; ++pos) out[o * positions + pos] += bias[gi * mg + o];
        }
      }
    });
  }
};
ONEFLOW_KERNEL_CLASS(DeformConv, DeformConvKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
