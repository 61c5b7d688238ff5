// Op family: deformable convolution (DeformConv, opset 19: the layer of deformable ConvNets and of
// detectors built on them). Kernel: kernels/cpu/deform_conv.cc.
//   DeformConv(X [N, C, H, W], W [M, C / group, kH, kW], offset [N, 2 kH kW G, oH, oW], B? [M],
//              mask? [N, kH kW G, oH, oW]) -> Y [N, M, oH, oW]
//   a 2-D convolution whose kernel taps sample X at their place plus a learned (dy, dx) offset per
//   output position, bilinearly (zero outside X), scaled by the mask; the C input channels form G
//   offset groups, each with its own offsets and mask. The geometry (pads, strides, dilations) is
//   Conv's; offset channel ((g kH + i) kW + j) 2 + {0: dy, 1: dx} belongs to tap (i, j) of group g.
#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/conv_shape.h"

namespace oneflow {
namespace {

int64_t DimOr(const TensorType& t, size_t d) { return t.has_rank && t.dims[d].known() ? t.dims[d].value : -1; }

void ExpectDim(InferContext& ctx, const TensorType& t, size_t d, int64_t want, const char* name, const char* what) {
  const int64_t got = DimOr(t, d);
  if (want >= 0 && got >= 0 && got != want)
    ctx.Error(name, " ", t.ToString(), " has ", got, " ", what, "; expected ", want);
}

void InferDeformConv(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& w = ctx.input_type(1);
  const TensorType& offset = ctx.input_type(2);
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64)
    ctx.Error("X must be float32 or float64, got ", x.ToString());
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_type(i).dtype != x.dtype)
      ctx.Error("input ", i, " is ", ctx.input_type(i).ToString(), "; X is ", DTypeName(x.dtype));
  for (const TensorType* t : {&x, &w, &offset})
    if (t->has_rank && t->rank() != 4)
      ctx.Error("X, W and offset must be 4-D (only 2-D deformable convolution is supported), got ", t->ToString());
  if (ctx.has_input(4) && ctx.input_type(4).has_rank && ctx.input_type(4).rank() != 4)
    ctx.Error("mask must be 4-D, got ", ctx.input_type(4).ToString());
  const std::vector<int64_t> in = {DimOr(x, 2), DimOr(x, 3)}, wk = {DimOr(w, 2), DimOr(w, 3)};
  if ((wk[0] < 0 || wk[1] < 0) && !ctx.attrs().has("kernel_shape")) {  // no geometry until W's shape is known
    ctx.set_output(0, TensorType::Of(x.dtype, std::vector<Dim>(4, Dim::Unknown())));
    return;
  }
  const ConvGeometry g = ResolveConvGeometry(ctx.attrs(), in, wk, ctx.node());
  const int64_t groups = ctx.attrs().GetInt("offset_group");
  if (groups < 1 || groups > kMaxWindowAttr) ctx.Error("offset_group must be in [1, 2^31], got ", groups);
  const int64_t c = DimOr(x, 1), m = DimOr(w, 0), wc = DimOr(w, 1);
  if (c >= 0 && wc >= 0 && c != CheckedMul(wc, g.group, ctx.node(), "W's channels times group"))
    ctx.Error("X has ", c, " channels but W ", w.ToString(), " with group ", g.group, " expects ", wc * g.group);
  if (m >= 0 && m % g.group != 0) ctx.Error("output channels ", m, " are not divisible by group ", g.group);
  if (c >= 0 && c % groups != 0) ctx.Error("X's ", c, " channels are not divisible by offset_group ", groups);
  const int64_t taps = CheckedMul(g.kernel[0], g.kernel[1], ctx.node(), "the kernel's taps");
  const int64_t offset_channels = CheckedMul(CheckedMul(taps, groups, ctx.node(), "offset channels"), 2, ctx.node(),
                                             "offset channels");
  ExpectDim(ctx, offset, 0, DimOr(x, 0), "offset", "batch rows");
  ExpectDim(ctx, offset, 1, offset_channels, "offset", "channels (2 per kernel tap and offset group)");
  for (size_t d = 0; d < 2; ++d) ExpectDim(ctx, offset, 2 + d, g.out[d], "offset", "output positions");
  if (ctx.has_input(3)) {
    const TensorType& b = ctx.input_type(3);
    if (b.has_rank && b.rank() != 1) ctx.Error("B must be 1-D, got ", b.ToString());
    ExpectDim(ctx, b, 0, m, "B", "values");
  }
  if (ctx.has_input(4)) {
    const TensorType& mask = ctx.input_type(4);
    ExpectDim(ctx, mask, 0, DimOr(x, 0), "mask", "batch rows");
    ExpectDim(ctx, mask, 1, taps * groups, "mask", "channels (1 per kernel tap and offset group)");
    for (size_t d = 0; d < 2; ++d) ExpectDim(ctx, mask, 2 + d, g.out[d], "mask", "output positions");
  }
  std::vector<Dim> out = {x.has_rank ? x.dims[0] : Dim::Unknown(), w.has_rank ? w.dims[0] : Dim::Unknown()};
  for (int64_t o : g.out) out.push_back(o >= 0 ? Dim::Known(o) : Dim::Unknown());
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

}  // namespace

void RegisterDeformConvOps(OpRegistry& r) {
  r.Register(OpSchema(op::kDeformConv).Since(19).Input("X").Input("W").Input("offset").OptionalInput("B")
                 .OptionalInput("mask").Output("Y").OptionalAttr("dilations", AttrKind::kInts)
                 .Attr("group", Attribute::Int(1)).OptionalAttr("kernel_shape", AttrKind::kInts)
                 .Attr("offset_group", Attribute::Int(1)).OptionalAttr("pads", AttrKind::kInts)
                 .OptionalAttr("strides", AttrKind::kInts).Infer(InferDeformConv));
}

}  // namespace oneflow
