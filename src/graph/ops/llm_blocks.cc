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
//   LinearAttention(query, key, value, past_state?, decay?, beta?) -> output, present_state
//                                     the recurrent form of linear attention over [B, T, H*D]
//                                     inputs: per step the [d_k, d_v] state per key/value head is
//                                     decayed by exp(decay) ("gated"), corrected toward v by beta
//                                     ("delta": v' = beta (v - S^T k)), updated by k v'^T, and
//                                     read by each query head of its group: scale q^T S. The
//                                     update rules "linear", "gated", "delta", "gated_delta"
//                                     (default) need decay/beta exactly as named
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

void InferLinearAttention(InferContext& ctx) {
  const std::string& rule = ctx.attrs().GetString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    ctx.Error("update_rule must be \"linear\", \"gated\", \"delta\" or \"gated_delta\", got \"", rule, "\"");
  const bool gated = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gated != ctx.has_input(4))
    ctx.Error("update_rule \"", rule, "\" ", gated ? "needs" : "takes no", " decay input");
  if (delta != ctx.has_input(5))
    ctx.Error("update_rule \"", rule, "\" ", delta ? "needs" : "takes no", " beta input");
  const int64_t hq = ctx.attrs().GetInt("q_num_heads"), hkv = ctx.attrs().GetInt("kv_num_heads");
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    ctx.Error("q_num_heads (", hq, ") must be a positive multiple of kv_num_heads (", hkv, ")");
  const TensorType& q = ctx.input_type(0);
  const TensorType& k = ctx.input_type(1);
  const TensorType& v = ctx.input_type(2);
  if (!IsFloatDType(q.dtype) || q.dtype == DType::kFloat64) ctx.Error("query must be float32, float16 or bfloat16");
  if (k.dtype != q.dtype || v.dtype != q.dtype) ctx.Error("key and value must have query's type ", DTypeName(q.dtype));
  for (const TensorType* t : {&q, &k, &v})
    if (t->has_rank && t->rank() != 3) ctx.Error("query, key and value must be [batch, time, heads * dim], got ", t->ToString());
  auto last = [](const TensorType& t) { return t.has_rank && t.dims[2].known() ? t.dims[2].value : -1; };
  if (last(q) >= 0 && last(q) % hq != 0) ctx.Error("query's last dim ", last(q), " is not divisible by q_num_heads ", hq);
  if (last(v) >= 0 && last(v) % hkv != 0) ctx.Error("value's last dim ", last(v), " is not divisible by kv_num_heads ", hkv);
  const int64_t dk = last(q) >= 0 ? last(q) / hq : -1, dv = last(v) >= 0 ? last(v) / hkv : -1;
  if (last(k) >= 0 && dk >= 0 && last(k) != hkv * dk)
    ctx.Error("key's last dim ", last(k), " must be kv_num_heads * d_k = ", hkv * dk);
  const DType state_type = ctx.has_input(3) ? ctx.input_dtype(3) : q.dtype;
  if (!IsFloatDType(state_type) || state_type == DType::kFloat64) ctx.Error("past_state must be float32, float16 or bfloat16");
  auto known = [](int64_t n) { return n >= 0 ? Dim::Known(n) : Dim::Unknown(); };
  const Dim batch = q.has_rank ? q.dims[0] : Dim::Unknown();
  if (ctx.has_input(3)) {
    const TensorType& past = ctx.input_type(3);
    if (past.has_rank && past.rank() != 4) ctx.Error("past_state must be [batch, kv_num_heads, d_k, d_v], got ", past.ToString());
  }
  // hkv * dk <= last(q) above, but q_num_heads may exceed kv_num_heads by any factor: checked.
  const int64_t out_dim = dv >= 0 ? CheckedMul(hq, dv, ctx.node(), "q_num_heads * d_v") : -1;
  ctx.set_output(0, q.has_rank ? TensorType::Of(q.dtype, {q.dims[0], q.dims[1], known(out_dim)})
                               : TensorType::UnknownShape(q.dtype));
  ctx.set_output(1, TensorType::Of(state_type, {batch, Dim::Known(hkv), known(dk), known(dv)}));
}

}  // namespace

void RegisterLlmBlockOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kLinearAttention).Since(27).Input("query").Input("key").Input("value")
                 .OptionalInput("past_state").OptionalInput("decay").OptionalInput("beta").Output("output")
                 .Output("present_state").Attr("chunk_size", Attribute::Int(64)).RequiredAttr("kv_num_heads", AttrKind::kInt)
                 .RequiredAttr("q_num_heads", AttrKind::kInt).Attr("scale", Attribute::Float(0.0f))
                 .Attr("update_rule", Attribute::String("gated_delta")).Infer(InferLinearAttention));
  r.Register(OpSchema(OpId::kSwiGLU).Since(28).Input("A").Input("B").Output("Y").Attr("alpha", Attribute::Float(1.0f))
                 .Infer(InferSwiGLU));
  r.Register(OpSchema(OpId::kCausalConvWithState).Since(27).Input("input").Input("weight").OptionalInput("bias")
                 .OptionalInput("past_state").Output("output").Output("present_state")
                 .Attr("activation", Attribute::String("none")).Infer(InferCausalConvWithState));
}

}  // namespace oneflow
