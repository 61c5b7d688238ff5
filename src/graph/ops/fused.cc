// Op family: fused (domain ai.oneflow): ops produced by the fusion pass (passes/fusion.cc).
// Each is its base op plus an epilogue: optional bias/residual and an activation named by the
// "activation" attribute, the name of a unary row of graph/ops/unary_ops.h, with the row's
// parameters in "activation_params" (LeakyRelu: [alpha]; Gelu: [0 none / 1 tanh]; Clip: [min, max]).
// The layout pass (passes/layout.cc) adds channels-last forms: FusedConv with layout "NHWC"
// and NhwcMaxPool / NhwcAveragePool / NhwcGlobalAveragePool, whose X and Y are [N, H, W, C].
// FusedAttention is scaled dot-product attention over [B, H, S, D] tensors (kernels: cpu/attention.cc,
// cuda/attention.cu).
// FusedElementwise is a chain of elementwise ops as one program (graph/fused_elementwise_program.h,
// built by passes/elementwise_fusion.cc).
#include "graph/fused_elementwise_program.h"
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/nn_infer.h"
#include "graph/ops/spatial_util.h"

namespace oneflow {

static OpSchema& ActivationAttrs(OpSchema& s) {
  return s.Attr("activation", Attribute::String("None")).Attr("activation_params", Attribute::Floats({}));
}

static void InferFusedMatMul(InferContext& ctx) {
  InferMatMul(ctx);
  if (!ctx.has_input(2)) return;
  const TensorType& bias = ctx.input_type(2);
  if (bias.dtype != ctx.input_dtype(0)) ctx.Error("bias must have the dtype of A");
  if (bias.has_rank && bias.rank() != 1) ctx.Error("bias must be 1-D, got ", bias.ToString());
}

// [N, H, W, C] <-> [N, C, H, W] on a static type (unknown rank stays unknown).
static TensorType PermuteNhwc(const TensorType& t, bool to_nchw) {
  if (!t.has_rank || t.rank() != 4) return t;
  const auto& d = t.dims;
  return TensorType::Of(t.dtype, to_nchw ? std::vector<Dim>{d[0], d[3], d[1], d[2]}
                                         : std::vector<Dim>{d[0], d[2], d[3], d[1]});
}

// FusedConv: InferConv on the NCHW view of X when layout is "NHWC", then Y back in NHWC.
static void InferFusedConv(InferContext& ctx) {
  const std::string layout = ctx.attrs().GetString("layout");
  if (layout == "NCHW") return InferConv(ctx);
  if (layout != "NHWC") ctx.Error("layout must be NCHW or NHWC, got '", layout, "'");
  const TensorType& x = ctx.input_type(0);
  if (x.has_rank && x.rank() != 4) ctx.Error("NHWC layout needs a 4-D X, got ", x.ToString());
  const TensorType xn = PermuteNhwc(x, true);
  InferContext inner(ctx.attrs(), ctx.opset(), ctx.node(), 1);
  inner.AddInput(&xn, nullptr);
  // Conv's inference reads types only. Handing it no values keeps this one free of input reads,
  // so NodeRunner caches the output shape instead of inferring it on every run.
  for (size_t i = 1; i < ctx.num_inputs(); ++i) inner.AddInput(ctx.has_input(i) ? &ctx.input_type(i) : nullptr, nullptr);
  InferConv(inner);
  ctx.set_output(0, PermuteNhwc(inner.output(0), false));
}

// NHWC 2-D pools: X [N, H, W, C] -> Y [N, OH, OW, C].
static void InferNhwcPool(InferContext& ctx, bool global) {
  const TensorType& x = ctx.input_type(0);
  if (!IsFloatDType(x.dtype)) ctx.Error("input must be a float tensor, got ", DTypeName(x.dtype));
  if (!x.has_rank) return ctx.set_output(0, TensorType::UnknownShape(x.dtype));
  if (x.rank() != 4) ctx.Error("NHWC pooling needs a 4-D X, got ", x.ToString());
  std::vector<int64_t> in;
  for (size_t i = 1; i < 3; ++i) in.push_back(x.dims[i].known() ? x.dims[i].value : -1);
  PoolGeometry g = ComputePoolGeometry(ctx.attrs(), in, ctx.node(), global);
  std::vector<Dim> dims = {x.dims[0]};
  for (int64_t o : g.out) {
    if (o == 0) ctx.Error("pooling produces an empty output");
    dims.push_back(o < 0 ? Dim::Unknown() : Dim::Known(o));
  }
  dims.push_back(x.dims[3]);
  ctx.set_output(0, TensorType::Of(x.dtype, dims));
}

// FusedAttention: Q [B, H, Sq, D], K [B, H, Sk, D], V [B, H, Sk, Dv] -> Y [B, H, Sq, Dv].
static void InferFusedAttention(InferContext& ctx) {
  const TensorType& q = ctx.input_type(0);
  const TensorType& k = ctx.input_type(1);
  const TensorType& v = ctx.input_type(2);
  if (!IsFloatDType(q.dtype)) ctx.Error("Q must be a float tensor, got ", DTypeName(q.dtype));
  if (k.dtype != q.dtype || v.dtype != q.dtype) ctx.Error("Q, K and V must share one dtype");
  for (const TensorType* t : {&q, &k, &v})
    if (t->has_rank && t->rank() != 4) ctx.Error("Q, K and V must be [B, H, S, D], got ", t->ToString());
  if (!q.has_rank || !k.has_rank || !v.has_rank) return ctx.set_output(0, TensorType::UnknownShape(q.dtype));
  auto clash = [](const Dim& a, const Dim& b) { return a.known() && b.known() && a.value != b.value; };
  for (size_t d = 0; d < 2; ++d)
    if (clash(q.dims[d], k.dims[d]) || clash(q.dims[d], v.dims[d])) ctx.Error("Q, K and V disagree on B or H");
  if (clash(q.dims[3], k.dims[3])) ctx.Error("Q and K must share the head size D");
  if (clash(k.dims[2], v.dims[2])) ctx.Error("K and V must share the key length Sk");
  ctx.set_output(0, TensorType::Of(q.dtype, std::vector<Dim>{q.dims[0], q.dims[1], q.dims[2], v.dims[3]}));
}

// FusedElementwise: Y is the broadcast of the inputs (one float dtype); the program must be valid.
static void InferFusedElementwise(InferContext& ctx) {
  EwProgram::FromAttrs(ctx.attrs(), ctx.num_inputs(), ctx.node());
  if (!IsFloatDType(ctx.input_dtype(0))) ctx.Error("inputs must be float tensors, got ", DTypeName(ctx.input_dtype(0)));
  InferBroadcast(ctx);
}

static OpSchema NhwcPoolSchema(const char* name) {
  OpSchema s(name, kOneflowDomain);
  s.Since(1).Input("X").Output("Y")
      .Attr("auto_pad", Attribute::String("NOTSET")).Attr("ceil_mode", Attribute::Int(0))
      .OptionalAttr("dilations", AttrKind::kInts).RequiredAttr("kernel_shape", AttrKind::kInts)
      .OptionalAttr("pads", AttrKind::kInts).OptionalAttr("strides", AttrKind::kInts);
  return s;
}

void RegisterFusedOps(OpRegistry& r) {
  {
    OpSchema s(op::kFusedMatMul, kOneflowDomain);
    s.Since(1).Doc("MatMul + bias[N] + activation").Input("A").Input("B").OptionalInput("Bias").Output("Y");
    r.Register(ActivationAttrs(s).Infer(InferFusedMatMul));
  }
  {
    OpSchema s(op::kFusedGemm, kOneflowDomain);
    s.Since(1).Doc("Gemm + activation").Input("A").Input("B").OptionalInput("C").Output("Y")
        .Attr("alpha", Attribute::Float(1.0f)).Attr("beta", Attribute::Float(1.0f))
        .Attr("transA", Attribute::Int(0)).Attr("transB", Attribute::Int(0));
    r.Register(ActivationAttrs(s).Infer(InferGemm));
  }
  {
    OpSchema s(op::kFusedConv, kOneflowDomain);
    s.Since(1).Doc("Conv + bias + residual Z + activation").Input("X").Input("W").OptionalInput("B")
        .OptionalInput("Z").Output("Y")
        .Attr("auto_pad", Attribute::String("NOTSET")).Attr("group", Attribute::Int(1))
        .OptionalAttr("dilations", AttrKind::kInts).OptionalAttr("kernel_shape", AttrKind::kInts)
        .OptionalAttr("pads", AttrKind::kInts).OptionalAttr("strides", AttrKind::kInts)
        .Attr("layout", Attribute::String("NCHW"));
    r.Register(ActivationAttrs(s).Infer(InferFusedConv));
  }
  {
    OpSchema s(op::kFusedAttention, kOneflowDomain);
    r.Register(s.Since(1)
                   .Doc("softmax(scale * Q K^T [causal mask]) V per batch and head; scale 0 means 1/sqrt(D); "
                        "causal keeps key j for query i when j <= i")
                   .Input("Q").Input("K").Input("V").Output("Y")
                   .Attr("scale", Attribute::Float(0.0f)).Attr("causal", Attribute::Int(0))
                   .Infer(InferFusedAttention));
  }
  {
    OpSchema s(op::kFusedElementwise, kOneflowDomain);
    r.Register(s.Since(1)
                   .Doc("a straight-line program of elementwise ops evaluated per output element (f32 math)")
                   .VariadicInput("X").Output("Y")
                   .RequiredAttr("program", AttrKind::kInts).Attr("constants", Attribute::Floats({}))
                   .RequiredAttr("num_registers", AttrKind::kInt)
                   .Infer(InferFusedElementwise));
  }
  r.Register(NhwcPoolSchema(op::kNhwcMaxPool).Doc("MaxPool on [N, H, W, C]")
                 .Attr("storage_order", Attribute::Int(0))
                 .Infer([](InferContext& ctx) { InferNhwcPool(ctx, false); }));
  r.Register(NhwcPoolSchema(op::kNhwcAveragePool).Doc("AveragePool on [N, H, W, C]")
                 .Attr("count_include_pad", Attribute::Int(0))
                 .Infer([](InferContext& ctx) { InferNhwcPool(ctx, false); }));
  {
    OpSchema s(op::kNhwcGlobalAveragePool, kOneflowDomain);
    r.Register(s.Since(1).Doc("GlobalAveragePool on [N, H, W, C]").Input("X").Output("Y")
                   .Infer([](InferContext& ctx) { InferNhwcPool(ctx, true); }));
  }
}

}  // namespace oneflow
