// Op family: blocks of recent language models that ONNX standardised in opsets 27-28. Kernels:
// kernels/cpu/llm_blocks.cc.
//   SwiGLU(A, B) -> Y                 Swish_alpha(A) * B, A and B of one shape (no broadcasting):
//                                     the gated MLP activation of Llama-style models
//   CausalConvWithState(input, weight, bias?, past_state?) -> output, present_state
//                                     depthwise causal 1-D conv over [batch, channels, length],
//                                     weight [channels, 1, k], left-padded by past_state (zeros
//                                     when absent), optional fused SiLU; present_state is the
//                                     last k - 1 positions of the padded input: the short conv
//                                     of Mamba and Gated DeltaNet, carried across decode steps
#include <string>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

void InferSwiGLU(InferContext& ctx) {
  const TensorType& a = ctx.input_type(0);
  const TensorType& b = ctx.input_type(1);
  if (!IsFloatDType(a.dtype)) ctx.Error("A must be a float tensor, got ", DTypeName(a.dtype));
  if (b.dtype != a.dtype) ctx.Error("B must have A's type ", DTypeName(a.dtype), ", got ", DTypeName(b.dtype));
  if (a.has_rank && b.has_rank) {
    bool same = a.rank() == b.rank();
    for (size_t i = 0; same && i < a.dims.size(); ++i)
      same = !(a.dims[i].known() && b.dims[i].known() && a.dims[i].value != b.dims[i].value);
    if (!same) ctx.Error("A ", a.ToString(), " and B ", b.ToString(), " must have one shape (SwiGLU does not broadcast)");
  }
  ctx.set_output(0, a.has_rank ? a : b);
}

void InferCausalConvWithState(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& w = ctx.input_type(1);
  if (!IsFloatDType(x.dtype)) ctx.Error("input must be a float tensor, got ", DTypeName(x.dtype));
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != x.dtype)
      ctx.Error("input ", i, " has type ", DTypeName(ctx.input_dtype(i)), "; input has ", DTypeName(x.dtype));
  const std::string& activation = ctx.attrs().GetString("activation", "none");
  if (activation != "none" && activation != "silu" && activation != "swish")
    ctx.Error("activation must be \"none\", \"silu\" or \"swish\", got \"", activation, "\"");
  if (x.has_rank && x.rank() != 3) ctx.Error("input must be [batch, channels, length], got ", x.ToString());
  if (w.has_rank && w.rank() != 3) ctx.Error("weight must be [channels, 1, k], got ", w.ToString());
  if (w.has_rank && w.dims[1].known() && w.dims[1].value != 1)
    ctx.Error("weight must be [channels, 1, k] (depthwise), got ", w.ToString());
  if (x.has_rank && w.has_rank && x.dims[1].known() && w.dims[0].known() && x.dims[1].value != w.dims[0].value)
    ctx.Error("weight ", w.ToString(), " does not match the ", x.dims[1].value, " channels of input ", x.ToString());
  if (w.has_rank && w.dims[2].known() && w.dims[2].value < 1) ctx.Error("the kernel size must be >= 1, got ", w.ToString());
  ctx.set_output(0, x);
  if (!x.has_rank) {
    ctx.set_output(1, TensorType::UnknownShape(x.dtype));
    return;
  }
  const Dim k_minus_1 = w.has_rank && w.dims[2].known() ? Dim::Known(w.dims[2].value - 1) : Dim::Unknown();
  if (ctx.has_input(3)) {
    const TensorType& past = ctx.input_type(3);
    if (past.has_rank && past.rank() != 3) ctx.Error("past_state must be [batch, channels, k - 1], got ", past.ToString());
    if (past.has_rank && k_minus_1.known() && past.dims[2].known() && past.dims[2].value != k_minus_1.value)
      ctx.Error("past_state ", past.ToString(), " must hold k - 1 = ", k_minus_1.value, " positions");
  }
  ctx.set_output(1, TensorType::Of(x.dtype, {x.dims[0], x.dims[1], k_minus_1}));
}

}  // namespace

void RegisterLlmBlockOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kSwiGLU).Since(28).Input("A").Input("B").Output("Y").Attr("alpha", Attribute::Float(1.0f))
                 .Infer(InferSwiGLU));
  r.Register(OpSchema(OpId::kCausalConvWithState).Since(27).Input("input").Input("weight").OptionalInput("bias")
                 .OptionalInput("past_state").Output("output").Output("present_state")
                 .Attr("activation", Attribute::String("none")).Infer(InferCausalConvWithState));
}

}  // namespace oneflow
