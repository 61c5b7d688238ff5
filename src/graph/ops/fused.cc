// Op family: fused (domain ai.oneflow): ops produced by the fusion pass (graph/passes/fusion.cc).
// Each is its base op plus an epilogue: optional bias/residual and an activation named by the
// "activation" attribute (Relu, LeakyRelu, Sigmoid, Tanh, Gelu, GeluTanh, Clip, HardSwish) with
// its parameters in "activation_params" (LeakyRelu: [alpha]; Clip: [min, max]).
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/nn_infer.h"

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

void RegisterFusedOps(OpRegistry& r) {
  {
    OpSchema s("FusedMatMul", kOneflowDomain);
    s.Since(1).Doc("MatMul + bias[N] + activation").Input("A").Input("B").OptionalInput("Bias").Output("Y");
    r.Register(ActivationAttrs(s).Infer(InferFusedMatMul));
  }
  {
    OpSchema s("FusedGemm", kOneflowDomain);
    s.Since(1).Doc("Gemm + activation").Input("A").Input("B").OptionalInput("C").Output("Y")
        .Attr("alpha", Attribute::Float(1.0f)).Attr("beta", Attribute::Float(1.0f))
        .Attr("transA", Attribute::Int(0)).Attr("transB", Attribute::Int(0));
    r.Register(ActivationAttrs(s).Infer(InferGemm));
  }
  {
    OpSchema s("FusedConv", kOneflowDomain);
    s.Since(1).Doc("Conv + bias + residual Z + activation").Input("X").Input("W").OptionalInput("B")
        .OptionalInput("Z").Output("Y")
        .Attr("auto_pad", Attribute::String("NOTSET")).Attr("group", Attribute::Int(1))
        .OptionalAttr("dilations", AttrKind::kInts).OptionalAttr("kernel_shape", AttrKind::kInts)
        .OptionalAttr("pads", AttrKind::kInts).OptionalAttr("strides", AttrKind::kInts);
    r.Register(ActivationAttrs(s).Infer(InferConv));
  }
}

}  // namespace oneflow
