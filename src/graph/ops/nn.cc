// Op family: nn (MatMul, Gemm, Conv, ConvTranspose, Det): schemas and shape inference.
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/grad_rules.h"
#include "graph/ops/conv_shape.h"
#include "graph/ops/nn_grad_rules.h"
#include "graph/ops/nn_infer.h"

namespace oneflow {

static Dim KnownOrUnknown(int64_t v) { return v >= 0 ? Dim::Known(v) : Dim::Unknown(); }
static int64_t DimValue(const Dim& d) { return d.known() ? d.value : -1; }

static void CheckFloatOrInt(const InferContext& ctx, DType t) {
  if (!(IsFloatDType(t) || IsIntegerDType(t))) ctx.Error("unsupported dtype ", DTypeName(t));
}

std::vector<Dim> MatMulDims(InferContext& ctx, const TensorType& a, const TensorType& b) {
  if (a.rank() < 1 || b.rank() < 1) ctx.Error("MatMul operands must have rank >= 1");
  std::vector<Dim> ad = a.dims, bd = b.dims;
  if (a.rank() == 1) ad.insert(ad.begin(), Dim::Known(1));
  if (b.rank() == 1) bd.push_back(Dim::Known(1));
  const Dim& ka = ad[ad.size() - 1];
  const Dim& kb = bd[bd.size() - 2];
  if (ka.known() && kb.known() && ka.value != kb.value)
    ctx.Error("inner dimensions differ: A is ", a.ToString(), ", B is ", b.ToString());
  std::vector<Dim> abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2);
  std::vector<Dim> out = BroadcastDims(abatch, bbatch, ctx);
  if (a.rank() > 1) out.push_back(ad[ad.size() - 2]);
  if (b.rank() > 1) out.push_back(bd[bd.size() - 1]);
  return out;
}

void InferMatMul(InferContext& ctx) {
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(1);
  if (a.dtype != b.dtype) ctx.Error("A and B must have the same dtype, got ", DTypeName(a.dtype), " and ", DTypeName(b.dtype));
  CheckFloatOrInt(ctx, a.dtype);
  if (!a.has_rank || !b.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(a.dtype));
    return;
  }
  ctx.set_output(0, TensorType::Of(a.dtype, MatMulDims(ctx, a, b)));
}

void InferGemm(InferContext& ctx) {
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(1);
  if (a.dtype != b.dtype) ctx.Error("A and B must have the same dtype");
  CheckFloatOrInt(ctx, a.dtype);
  if (ctx.has_input(2) && ctx.input_dtype(2) != a.dtype) ctx.Error("C must have the dtype of A");
  if (!a.has_rank || !b.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(a.dtype));
    return;
  }
  if (a.rank() != 2 || b.rank() != 2) ctx.Error("Gemm needs rank-2 A and B, got ", a.ToString(), " and ", b.ToString());
  const bool ta = ctx.attrs().GetInt("transA", 0) != 0, tb = ctx.attrs().GetInt("transB", 0) != 0;
  const Dim m = a.dims[ta ? 1 : 0], ka = a.dims[ta ? 0 : 1];
  const Dim kb = b.dims[tb ? 1 : 0], n = b.dims[tb ? 0 : 1];
  if (ka.known() && kb.known() && ka.value != kb.value)
    ctx.Error("inner dimensions differ: A is ", a.ToString(), ", B is ", b.ToString());
  if (ctx.has_input(2)) {
    const TensorType& c = ctx.input_type(2);
    if (c.has_rank) {
      if (c.rank() > 2) ctx.Error("C must have rank <= 2, got ", c.ToString());
      const Dim* target[2] = {&m, &n};
      for (int64_t i = 0; i < c.rank(); ++i) {
        const Dim& cd = c.dims[static_cast<size_t>(i)];
        const Dim& td = *target[2 - c.rank() + i];
        if (cd.known() && td.known() && cd.value != 1 && cd.value != td.value)
          ctx.Error("C ", c.ToString(), " does not broadcast to [M, N]");
      }
    }
  }
  ctx.set_output(0, TensorType::Of(a.dtype, {m, n}));
}

// Common checks of Conv-like ops; returns false when the rank is not known yet.
static bool ConvInputs(InferContext& ctx, std::vector<int64_t>& in, std::vector<int64_t>& wk) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& w = ctx.input_type(1);
  if (x.dtype != w.dtype) ctx.Error("X and W must have the same dtype, got ", DTypeName(x.dtype), " and ", DTypeName(w.dtype));
  if (!IsFloatDType(x.dtype)) ctx.Error("unsupported dtype ", DTypeName(x.dtype), " (float types only)");
  for (size_t i = 2; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != x.dtype) ctx.Error("input ", i, " must have the dtype of X");
  if (!x.has_rank && !w.has_rank) return false;
  const int64_t rank = x.has_rank ? x.rank() : w.rank();
  if (rank < 3) ctx.Error("X must have rank >= 3 (N, C, spatial...), got rank ", rank);
  if (x.has_rank && w.has_rank && x.rank() != w.rank()) ctx.Error("X ", x.ToString(), " and W ", w.ToString(), " ranks differ");
  in.assign(static_cast<size_t>(rank - 2), -1);
  wk.assign(static_cast<size_t>(rank - 2), -1);
  for (int64_t i = 2; i < rank; ++i) {
    if (x.has_rank) in[static_cast<size_t>(i - 2)] = DimValue(x.dims[static_cast<size_t>(i)]);
    if (w.has_rank) wk[static_cast<size_t>(i - 2)] = DimValue(w.dims[static_cast<size_t>(i)]);
  }
  return true;
}

// Checks the optional bias (1-D with m values; m < 0 when unknown) and sets Y = [N, M, out...].
static void SetConvOutput(InferContext& ctx, int64_t m, Dim m_dim, const std::vector<int64_t>& out_spatial) {
  const TensorType& x = ctx.input_type(0);
  if (ctx.has_input(2) && ctx.input_type(2).has_rank) {
    const TensorType& b = ctx.input_type(2);
    if (b.rank() != 1 || (m >= 0 && b.dims[0].known() && b.dims[0].value != m))
      ctx.Error("bias must be 1-D with ", m, " values, got ", b.ToString());
  }
  std::vector<Dim> out = {x.has_rank ? x.dims[0] : Dim::Unknown(), m_dim};
  for (int64_t o : out_spatial) out.push_back(KnownOrUnknown(o));
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferConv(InferContext& ctx) {
  std::vector<int64_t> in, wk;
  const TensorType& x = ctx.input_type(0);
  const TensorType& w = ctx.input_type(1);
  if (!ConvInputs(ctx, in, wk)) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  ConvGeometry g = ResolveConvGeometry(ctx.attrs(), in, wk, ctx.node());
  const int64_t c = x.has_rank ? DimValue(x.dims[1]) : -1;
  const int64_t m = w.has_rank ? DimValue(w.dims[0]) : -1;
  const int64_t wc = w.has_rank ? DimValue(w.dims[1]) : -1;
  if (c >= 0 && wc >= 0 && c != CheckedMul(wc, g.group, ctx.node(), "W's channels times group"))
    ctx.Error("X has ", c, " channels but W ", w.ToString(), " with group ", g.group, " expects ", wc * g.group);
  if (m >= 0 && m % g.group != 0) ctx.Error("output channels ", m, " are not divisible by group ", g.group);
  SetConvOutput(ctx, m, w.has_rank ? w.dims[0] : Dim::Unknown(), g.out);
}

void InferConvTranspose(InferContext& ctx) {
  std::vector<int64_t> in, wk;
  const TensorType& x = ctx.input_type(0);
  const TensorType& w = ctx.input_type(1);
  if (!ConvInputs(ctx, in, wk)) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  ConvGeometry g = ResolveConvTransposeGeometry(ctx.attrs(), in, wk, ctx.node());
  const int64_t c = x.has_rank ? DimValue(x.dims[1]) : -1;
  const int64_t wc = w.has_rank ? DimValue(w.dims[0]) : -1;
  const int64_t wm = w.has_rank ? DimValue(w.dims[1]) : -1;
  if (c >= 0 && wc >= 0 && c != wc) ctx.Error("X has ", c, " channels but W ", w.ToString(), " expects ", wc);
  if (c >= 0 && c % g.group != 0) ctx.Error("input channels ", c, " are not divisible by group ", g.group);
  const int64_t m = wm >= 0 ? CheckedMul(wm, g.group, ctx.node(), "W's output channels times group") : -1;
  SetConvOutput(ctx, m, KnownOrUnknown(m), g.out);
}

// Det: X[..., M, M] -> Y[...], floating types.
void InferDet(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!IsFloatDType(x.dtype)) ctx.Error("Det takes floating-point matrices, got ", DTypeName(x.dtype));
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (x.rank() < 2) ctx.Error("Det needs a tensor of rank >= 2 ([..., M, M]), got ", x.ToString());
  const Dim& rows = x.dims[x.rank() - 2];
  const Dim& cols = x.dims[x.rank() - 1];
  if (rows.known() && cols.known() && rows.value != cols.value) ctx.Error("Det needs square matrices, got ", x.ToString());
  ctx.set_output(0, TensorType::Of(x.dtype, std::vector<Dim>(x.dims.begin(), x.dims.end() - 2)));
}

// The planner's arithmetic estimates: two operations per multiply-add, or one per output element
// where the shapes do not say more.
namespace {

double OutputElements(const std::vector<Shape>& out) { return out.empty() ? 0.0 : static_cast<double>(NumElements(out[0])); }

double MatMulFlops(const AttrMap&, const std::vector<Shape>& in, const std::vector<Shape>& out) {
  const double y = OutputElements(out);
  return in.empty() || in[0].empty() ? y : 2.0 * y * static_cast<double>(in[0].back());
}

double GemmFlops(const AttrMap& attrs, const std::vector<Shape>& in, const std::vector<Shape>& out) {
  const double y = OutputElements(out);
  if (in.empty() || in[0].size() != 2) return y;
  const int64_t k = attrs.GetInt("transA", 0) ? in[0][0] : in[0][1];
  return 2.0 * y * static_cast<double>(k);
}

double ConvFlops(const AttrMap&, const std::vector<Shape>& in, const std::vector<Shape>& out) {
  const double y = OutputElements(out);  // each output element: C/group * kernel multiply-adds
  return in.size() > 1 && in[1].size() > 1 ? 2.0 * y * static_cast<double>(ShapeProduct(in[1], 1, in[1].size())) : y;
}

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  r.Register(OpSchema(op::kDet).Since(13).Input("X").Output("Y").Infer(InferDet));
  r.Register(OpSchema(op::kMatMul).Since(13).Input("A").Input("B").Output("Y").Infer(InferMatMul).Grad(GradMatMul)
                 .Precision(PrecisionClass::kLow).Flops(MatMulFlops));
  r.Register(OpSchema(op::kGemm).Since(13).Input("A").Input("B").OptionalInput("C").Output("Y")
                 .Attr("alpha", Attribute::Float(1.0f)).Attr("beta", Attribute::Float(1.0f))
                 .Attr("transA", Attribute::Int(0)).Attr("transB", Attribute::Int(0)).Infer(InferGemm)
                 .Grad(GradGemm).Precision(PrecisionClass::kLow).Flops(GemmFlops));
  r.Register(OpSchema(op::kConv).Since(13).Input("X").Input("W").OptionalInput("B").Output("Y")
                 .Precision(PrecisionClass::kLow).Flops(ConvFlops)
                 .Attr("auto_pad", Attribute::String("NOTSET")).Attr("group", Attribute::Int(1))
                 .OptionalAttr("dilations", AttrKind::kInts).OptionalAttr("kernel_shape", AttrKind::kInts)
                 .OptionalAttr("pads", AttrKind::kInts).OptionalAttr("strides", AttrKind::kInts).Infer(InferConv)
                 .Grad(GradConv));
  r.Register(OpSchema(op::kConvTranspose).Since(13).Input("X").Input("W").OptionalInput("B").Output("Y")
                 .Precision(PrecisionClass::kLow)
                 .Attr("auto_pad", Attribute::String("NOTSET")).Attr("group", Attribute::Int(1))
                 .OptionalAttr("dilations", AttrKind::kInts).OptionalAttr("kernel_shape", AttrKind::kInts)
                 .OptionalAttr("output_padding", AttrKind::kInts).OptionalAttr("output_shape", AttrKind::kInts)
                 .OptionalAttr("pads", AttrKind::kInts).OptionalAttr("strides", AttrKind::kInts)
                 .Infer(InferConvTranspose).Grad(GradConvTranspose));
}

}  // namespace oneflow
