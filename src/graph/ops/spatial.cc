// Op family: spatial (pooling, Resize, Einsum, LRN, MaxUnpool, GridSample, AffineGrid, Col2Im): schemas and inference.
#include <cmath>

#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/grad_rules.h"
#include "graph/ops/nn_grad_rules.h"
#include "graph/ops/spatial_util.h"

namespace oneflow {
namespace {

// Requires a rank >= 3 input [N, C, spatial...]; returns false when the rank is unknown.
bool RequireNCSpatial(const InferContext& ctx, const TensorType& x) {
  if (!x.has_rank) return false;
  if (x.rank() < 3) ctx.Error("input must have shape [N, C, D1, ...], got rank ", x.rank());
  return true;
}

void InferPool(InferContext& ctx, bool global) {
  const TensorType& x = ctx.input_type(0);
  if (!RequireNCSpatial(ctx, x)) {
    for (size_t i = 0; i < ctx.num_outputs(); ++i)
      ctx.set_output(i, TensorType::UnknownShape(i == 0 ? x.dtype : DType::kInt64));
    return;
  }
  std::vector<int64_t> in;
  for (int64_t i = 2; i < x.rank(); ++i) in.push_back(x.dims[i].known() ? x.dims[i].value : -1);
  PoolGeometry g = ComputePoolGeometry(ctx.attrs(), in, ctx.node(), global);
  std::vector<Dim> dims = {x.dims[0], x.dims[1]};
  for (int64_t o : g.out) {
    if (o == 0) ctx.Error("pooling produces an empty output");
    dims.push_back(o < 0 ? Dim::Unknown() : Dim::Known(o));
  }
  ctx.set_output(0, TensorType::Of(x.dtype, dims));
  if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType::Of(DType::kInt64, dims));
}

void RequireFloatInput(const InferContext& ctx) {
  if (!IsFloatDType(ctx.input_dtype(0))) ctx.Error("input must be a float tensor, got ", DTypeName(ctx.input_dtype(0)));
}

OpSchema PoolSchema(const char* name, int since) {
  return OpSchema(name).Since(since).Input("X").Output("Y")
      .Attr("auto_pad", Attribute::String("NOTSET"))
      .Attr("ceil_mode", Attribute::Int(0))
      .OptionalAttr("dilations", AttrKind::kInts)
      .RequiredAttr("kernel_shape", AttrKind::kInts)
      .OptionalAttr("pads", AttrKind::kInts)
      .OptionalAttr("strides", AttrKind::kInts);
}

// Resize's output shape: needs the scales or sizes values (constants statically, always at run time).
void InferResize(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const Tensor* scales = ctx.has_input(2) ? ctx.input_value(2) : nullptr;
  const Tensor* sizes = ctx.has_input(3) ? ctx.input_value(3) : nullptr;
  bool have_scales = ctx.has_input(2) && (!scales || scales->numel() > 0);
  bool have_sizes = ctx.has_input(3) && (!sizes || sizes->numel() > 0);
  if (scales && scales->numel() == 0 && !ctx.has_input(3)) ctx.Error("scales is empty and sizes is absent");
  if (have_scales && have_sizes && scales && sizes) ctx.Error("only one of scales and sizes may be given");
  if (!have_scales && !have_sizes) ctx.Error("one of scales and sizes is required");
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (x.rank() < 1) ctx.Error("cannot resize a scalar");
  const Tensor* given = have_sizes ? sizes : scales;
  if (!given) {
    ctx.set_output(0, TensorType::Of(x.dtype, std::vector<Dim>(x.dims.size(), Dim::Unknown())));
    return;
  }
  // Unknown input dims are probed with two different extents: an output dim that comes out equal
  // to its input both times keeps the input's (possibly symbolic) dim, one that comes out the
  // same constant both times is known, anything else is unknown.
  Shape probe1, probe2;
  for (const Dim& d : x.dims) {
    probe1.push_back(d.known() ? d.value : 1);
    probe2.push_back(d.known() ? d.value : 2);
  }
  std::vector<double> sc;
  std::vector<int64_t> out1, out2;
  const Tensor* sc_in = have_scales ? scales : nullptr;
  const Tensor* sz_in = have_sizes ? sizes : nullptr;
  ComputeResizeOutput(ctx.attrs(), ctx.opset(), probe1, sc_in, sz_in, ctx.node(), &sc, &out1);
  ComputeResizeOutput(ctx.attrs(), ctx.opset(), probe2, sc_in, sz_in, ctx.node(), &sc, &out2);
  std::vector<Dim> dims;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    if (out1[d] == probe1[d] && out2[d] == probe2[d]) dims.push_back(x.dims[d]);
    else if (out1[d] == out2[d]) dims.push_back(Dim::Known(out1[d]));
    else dims.push_back(Dim::Unknown());
  }
  ctx.set_output(0, TensorType::Of(x.dtype, dims));
}

// Einsum: parse at inference time to get the output shape.
void InferEinsum(InferContext& ctx) {
  CheckSameDType(ctx);
  DType dt = ctx.input_dtype(0);
  EinsumSpec spec = ParseEinsum(ctx.attrs().GetString("equation"), ctx.num_inputs(), ctx.node());
  std::vector<const TensorType*> types;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType& t = ctx.input_type(i);
    if (!t.has_rank) {
      ctx.set_output(0, TensorType::UnknownShape(dt));
      return;
    }
    types.push_back(&t);
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const TensorType* t : types) {
    std::vector<int64_t> s;
    for (const Dim& d : t->dims) s.push_back(d.known() ? d.value : -1);
    shapes.push_back(s);
  }
  EinsumPlan plan = PlanEinsum(spec, shapes, ctx.node());
  std::vector<Dim> dims;
  for (int64_t d : plan.out_shape) dims.push_back(d < 0 ? Dim::Unknown() : Dim::Known(d));
  ctx.set_output(0, TensorType::Of(dt, dims));
}

void InferLRN(InferContext& ctx) {
  RequireFloatInput(ctx);
  const TensorType& x = ctx.input_type(0);
  RequireNCSpatial(ctx, x);
  const int64_t size = ctx.attrs().GetInt("size");
  // Bounded so that the kernel's window arithmetic cannot overflow; wider than C is no different.
  if (size < 1 || size > kMaxWindowAttr) ctx.Error("size must be in [1, 2^31], got ", size);
  ctx.set_output(0, x);
}

void InferMaxUnpool(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (ctx.input_dtype(1) != DType::kInt64) ctx.Error("indices must be int64");
  if (ctx.has_input(2)) {
    const Tensor* shape = ctx.input_value(2);
    if (!shape) {
      ctx.set_output(0, x.has_rank ? TensorType::Of(x.dtype, std::vector<Dim>(x.dims.size(), Dim::Unknown()))
                                   : TensorType::UnknownShape(x.dtype));
      return;
    }
    std::vector<int64_t> s = shape->ToInt64Vector();
    if (x.has_rank && static_cast<int64_t>(s.size()) != x.rank()) ctx.Error("output_shape must have rank ", x.rank());
    for (int64_t v : s)
      if (v < 0) ctx.Error("output_shape has a negative dim");
    ctx.set_output(0, TensorType::Of(x.dtype, Shape(s)));
    return;
  }
  if (!RequireNCSpatial(ctx, x)) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const size_t r = static_cast<size_t>(x.rank() - 2);
  std::vector<int64_t> k = ctx.attrs().GetInts("kernel_shape");
  std::vector<int64_t> s = ctx.attrs().GetInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> p = ctx.attrs().GetInts("pads", std::vector<int64_t>(2 * r, 0));
  if (k.size() != r || s.size() != r || p.size() != 2 * r) ctx.Error("kernel_shape/strides/pads do not match the input rank");
  // Bounded like pooling's window attributes; the kernel recomputes this shape from them.
  for (size_t i = 0; i < r; ++i) {
    if (k[i] < 1 || s[i] < 1 || k[i] > kMaxWindowAttr || s[i] > kMaxWindowAttr)
      ctx.Error("kernel_shape and strides must be in [1, 2^31], got ", k[i], " and ", s[i]);
    if (p[i] < 0 || p[i + r] < 0 || p[i] > kMaxWindowAttr || p[i + r] > kMaxWindowAttr)
      ctx.Error("pads must be in [0, 2^31], got ", p[i], " and ", p[i + r]);
  }
  std::vector<Dim> dims = {x.dims[0], x.dims[1]};
  for (size_t i = 0; i < r; ++i) {
    const Dim& d = x.dims[i + 2];
    if (!d.known()) {
      dims.push_back(Dim::Unknown());
      continue;
    }
    const int64_t n = CheckedAdd(CheckedMul(d.value - 1, s[i], ctx.node(), "the unpooled size"), k[i] - p[i] - p[i + r],
                                 ctx.node(), "the unpooled size");
    if (n < 0) ctx.Error("pads make spatial dim ", i, " negative (", n, ")");
    dims.push_back(Dim::Known(n));
  }
  ctx.set_output(0, TensorType::Of(x.dtype, dims));
}

void InferGridSample(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& grid = ctx.input_type(1);
  if (!IsFloatDType(grid.dtype)) ctx.Error("grid must be a float tensor");
  if (!x.has_rank || !grid.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (x.rank() < 3 || grid.rank() != x.rank()) ctx.Error("X must be [N, C, D1..Dr] and grid [N, D1'..Dr', r]");
  const Dim& last = grid.dims.back();
  if (last.known() && last.value != x.rank() - 2) ctx.Error("grid's last dim must be ", x.rank() - 2);
  std::vector<Dim> dims = {x.dims[0], x.dims[1]};
  for (int64_t i = 1; i + 1 < grid.rank(); ++i) dims.push_back(grid.dims[i]);
  ctx.set_output(0, TensorType::Of(x.dtype, dims));
}

void InferCol2Im(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const Tensor* image = ctx.input_value(1);
  const Tensor* block = ctx.input_value(2);
  if (!x.has_rank || !image || !block || !x.dims[1].known()) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (x.rank() != 3) ctx.Error("input must be [N, C*prod(block_shape), L]");
  std::vector<int64_t> img = image->ToInt64Vector(), blk = block->ToInt64Vector();
  if (img.size() != blk.size() || img.empty()) ctx.Error("image_shape and block_shape must have the same length");
  int64_t prod = 1;
  for (int64_t b : blk) {
    if (b < 1) ctx.Error("block_shape must be positive");
    prod = CheckedMul(prod, b, ctx.node(), "prod(block_shape)");
  }
  if (x.dims[1].value % prod != 0) ctx.Error("input dim 1 (", x.dims[1].value, ") is not divisible by prod(block_shape)");
  std::vector<Dim> dims = {x.dims[0], Dim::Known(x.dims[1].value / prod)};
  for (int64_t v : img) dims.push_back(Dim::Known(v));
  ctx.set_output(0, TensorType::Of(x.dtype, dims));
}

// AffineGrid: theta [N, r, r+1] and size [N, C, D1..Dr] (r = 2 or 3) give a grid [N, D1..Dr, r].
void InferAffineGrid(InferContext& ctx) {
  const TensorType& theta = ctx.input_type(0);
  if (!IsFloatDType(theta.dtype)) ctx.Error("theta must be a float tensor");
  const Tensor* size = ctx.input_value(1);
  if (!size) {
    ctx.set_output(0, TensorType::UnknownShape(theta.dtype));
    return;
  }
  std::vector<int64_t> s = size->ToInt64Vector();
  if (s.size() != 4 && s.size() != 5) ctx.Error("size must have 4 or 5 values, got ", s.size());
  const int64_t r = static_cast<int64_t>(s.size()) - 2;
  if (theta.has_rank) {
    if (theta.rank() != 3) ctx.Error("theta must be [N, ", r, ", ", r + 1, "]");
    if ((theta.dims[1].known() && theta.dims[1].value != r) || (theta.dims[2].known() && theta.dims[2].value != r + 1))
      ctx.Error("theta must be [N, ", r, ", ", r + 1, "] for a ", r, "-D size");
  }
  for (int64_t v : s)
    if (v < 0) ctx.Error("size has a negative value");
  std::vector<Dim> dims = {Dim::Known(s[0])};
  for (int64_t i = 2; i < static_cast<int64_t>(s.size()); ++i) dims.push_back(Dim::Known(s[i]));
  dims.push_back(Dim::Known(r));
  ctx.set_output(0, TensorType::Of(theta.dtype, dims));
}

}  // namespace

void RegisterSpatialOps(OpRegistry& r) {
  r.Register(PoolSchema(op::kMaxPool, 13).OptionalOutput("Indices").Attr("storage_order", Attribute::Int(0))
                 .Infer([](InferContext& ctx) { InferPool(ctx, false); }).Grad(GradMaxPool));
  r.Register(PoolSchema(op::kAveragePool, 13).Attr("count_include_pad", Attribute::Int(0))
                 .Infer([](InferContext& ctx) { RequireFloatInput(ctx); InferPool(ctx, false); })
                 .Grad(GradAveragePool));
  r.Register(PoolSchema(op::kLpPool, 13).Attr("p", Attribute::Int(2))
                 .Infer([](InferContext& ctx) { RequireFloatInput(ctx); InferPool(ctx, false); }));
  r.Register(OpSchema(op::kGlobalAveragePool).Since(13).Input("X").Output("Y")
                 .Infer([](InferContext& ctx) { RequireFloatInput(ctx); InferPool(ctx, true); })
                 .Grad(GradGlobalAveragePool));
  r.Register(OpSchema(op::kGlobalMaxPool).Since(13).Input("X").Output("Y")
                 .Infer([](InferContext& ctx) { InferPool(ctx, true); }).Grad(GradGlobalMaxPool));
  r.Register(OpSchema(op::kGlobalLpPool).Since(13).Input("X").Output("Y").Attr("p", Attribute::Int(2))
                 .Infer([](InferContext& ctx) { RequireFloatInput(ctx); InferPool(ctx, true); }));
  // One definition for Resize-13/18/19: the 18+ attributes simply keep their defaults in older models.
  r.Register(OpSchema(op::kResize).Since(13).Input("X").OptionalShapeInput("roi").OptionalShapeInput("scales")
                 .OptionalShapeInput("sizes").Output("Y")
                 .Attr("antialias", Attribute::Int(0))
                 .OptionalAttr("axes", AttrKind::kInts)
                 .Attr("coordinate_transformation_mode", Attribute::String("half_pixel"))
                 .Attr("cubic_coeff_a", Attribute::Float(-0.75f))
                 .Attr("exclude_outside", Attribute::Int(0))
                 .Attr("extrapolation_value", Attribute::Float(0.0f))
                 .Attr("keep_aspect_ratio_policy", Attribute::String("stretch"))
                 .Attr("mode", Attribute::String("nearest"))
                 .Attr("nearest_mode", Attribute::String("round_prefer_floor"))
                 .Infer(InferResize));
  r.Register(OpSchema(op::kEinsum).Since(13).VariadicInput("Inputs").Output("Output")
                 .RequiredAttr("equation", AttrKind::kString).Infer(InferEinsum).Grad(GradEinsum));
  r.Register(OpSchema(op::kLRN).Since(13).Input("X").Output("Y")
                 .Attr("alpha", Attribute::Float(0.0001f)).Attr("beta", Attribute::Float(0.75f))
                 .Attr("bias", Attribute::Float(1.0f)).RequiredAttr("size", AttrKind::kInt).Infer(InferLRN));
  r.Register(OpSchema(op::kMaxUnpool).Since(13).Input("X").Input("I").OptionalInput("output_shape").Output("output")
                 .RequiredAttr("kernel_shape", AttrKind::kInts).OptionalAttr("pads", AttrKind::kInts)
                 .OptionalAttr("strides", AttrKind::kInts).Infer(InferMaxUnpool));
  // GridSample-16 is 4-D only with modes bilinear/bicubic; 20 renamed them linear/cubic and went N-D.
  r.Register(OpSchema(op::kGridSample).Since(16).Until(19).Input("X").Input("grid").Output("Y")
                 .Attr("align_corners", Attribute::Int(0)).Attr("mode", Attribute::String("bilinear"))
                 .Attr("padding_mode", Attribute::String("zeros")).Infer(InferGridSample));
  r.Register(OpSchema(op::kGridSample).Since(20).Input("X").Input("grid").Output("Y")
                 .Attr("align_corners", Attribute::Int(0)).Attr("mode", Attribute::String("linear"))
                 .Attr("padding_mode", Attribute::String("zeros")).Infer(InferGridSample));
  r.Register(OpSchema(op::kAffineGrid).Since(20).Input("theta").Input("size").Output("grid")
                 .Attr("align_corners", Attribute::Int(0)).Infer(InferAffineGrid));
  r.Register(OpSchema(op::kCol2Im).Since(18).Input("input").Input("image_shape").Input("block_shape").Output("output")
                 .OptionalAttr("dilations", AttrKind::kInts).OptionalAttr("pads", AttrKind::kInts)
                 .OptionalAttr("strides", AttrKind::kInts).Infer(InferCol2Im));
}

}  // namespace oneflow
