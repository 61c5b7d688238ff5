// CPU kernel: DequantizeLinear (graph/ops/quantization.cc). With x viewed as [outer, D, inner]
// around `axis`, element (o, a, i) reads scale and zero point entry
//   o * outer_stride + (a / block) * axis_stride + i * inner_stride,
// which covers the three granularities: per tensor all strides are 0; per axis (a [D] scale) only
// axis_stride is 1; blocked (a scale of shape [outer, ceil(D / block), inner]) they are the
// scale's own strides. x - zero_point is exact (64-bit), then float: onnxruntime's arithmetic
// without its int32 wrap-around (onnx.reference rounds x and the zero point to float first, which
// differs only for int32 values past 2^24). The product is rounded once into the output type.
#include <cstdint>

#include "base/dtype.h"
#include "kernels/kernel.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

void DequantizeLinearKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zero_point = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  Tensor& y = ctx.output(0);
  const Shape& s = x.shape();
  const int64_t r = static_cast<int64_t>(s.size());
  const int64_t block_attr = ctx.attrs().GetInt("block_size", 0);
  OF_REQUIRE(!zero_point || zero_point->shape() == scale.shape(), ctx.node_desc(), ": x_zero_point ",
             ShapeToString(zero_point ? zero_point->shape() : Shape{}), " must have x_scale's shape ",
             ShapeToString(scale.shape()));

  int64_t outer = 1, d = 1, inner = 1, block = 1;
  int64_t outer_stride = 0, axis_stride = 0, inner_stride = 0;
  if (scale.numel() != 1) {
    int64_t axis = ctx.attrs().GetInt("axis", 1);
    OF_REQUIRE(axis >= -r && axis < r, ctx.node_desc(), ": axis ", axis, " is out of range for x of rank ", r);
    if (axis < 0) axis += r;
    for (int64_t k = 0; k < axis; ++k) outer *= s[static_cast<size_t>(k)];
    d = s[static_cast<size_t>(axis)];
    for (int64_t k = axis + 1; k < r; ++k) inner *= s[static_cast<size_t>(k)];
    // Inference checked the shapes when they were known; a symbolic dim is checked here.
    if (block_attr == 0) {
      OF_REQUIRE(scale.shape().size() == 1 && scale.shape()[0] == d, ctx.node_desc(), ": x_scale ",
                 ShapeToString(scale.shape()), " does not match axis ", axis, " of x ", ShapeToString(s));
      axis_stride = 1;
    } else {
      const int64_t entries = (d + block_attr - 1) / block_attr;
      Shape want = s;
      want[static_cast<size_t>(axis)] = entries;
      OF_REQUIRE(scale.shape() == want, ctx.node_desc(), ": x_scale ", ShapeToString(scale.shape()),
                 " does not block x ", ShapeToString(s), " by ", block_attr, " (want ", ShapeToString(want), ")");
      block = block_attr;
      outer_stride = entries * inner;
      axis_stride = inner;
      inner_stride = 1;
    }
  } else {
    d = x.numel();  // per tensor: x as [1, numel, 1]; every stride stays 0
  }

  DispatchInteger(x.dtype(), [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    DispatchFloating(scale.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      const X* xs = x.data<X>();
      const X* zs = zero_point ? zero_point->data<X>() : nullptr;
      const S* ss = scale.data<S>();
      S* out = y.data<S>();
      ctx.pool().ParallelFor(outer * d, static_cast<double>(inner) * 2.0, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {  // row = o * d + a
          const int64_t o = row / d, a = row % d;
          const int64_t first = o * outer_stride + (a / block) * axis_stride;
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t q = first + i * inner_stride;
            const int64_t diff = static_cast<int64_t>(xs[row * inner + i]) - (zs ? static_cast<int64_t>(zs[q]) : 0);
            const float v = static_cast<float>(diff) * static_cast<float>(CastToDouble(ss[q]));
            out[row * inner + i] = CastFromDouble<S>(v);
          }
        }
      });
    });
  });
}
ONEFLOW_KERNEL(DequantizeLinear, DequantizeLinearKernel);

}  // namespace

}  // namespace oneflow
