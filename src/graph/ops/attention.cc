// Op family: attention (ONNX Attention 23-25, RotaryEmbedding 23, TensorScatter 24: the KV-cache
// update): schemas and shape inference.
// Kernels: kernels/cpu/onnx_attention.cc. The fusion passes' ai.oneflow FusedAttention (ops/fused.cc)
// is the narrower form that exporters' MatMul/Softmax chains are rewritten into.
//
// Attention takes Q, K, V as [B, S, heads * head_size] (with q_num_heads / kv_num_heads) or as
// [B, heads, S, head_size]; K and V may carry fewer heads than Q (grouped-query attention: query
// head h reads key/value head h / (q_heads / kv_heads)). past_key / past_value [B, kv_heads, P, .]
// are prepended to K / V (and returned as present_key / present_value); opset 24's
// nonpad_kv_seqlen [B] instead marks how many keys of each batch row are valid.
#include <string>
#include <vector>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

enum : size_t { kQ = 0, kK = 1, kV = 2, kMask = 3, kPastKey = 4, kPastValue = 5, kNonpad = 6 };

// Declared dims and head-count attributes are untrusted: sums and products are checked.
Dim Sum(const InferContext& ctx, const Dim& a, const Dim& b) {
  if (a.known() && b.known()) return Dim::Known(CheckedAdd(a.value, b.value, ctx.node(), "past + new sequence length"));
  return Dim::Unknown();
}
Dim Times(const InferContext& ctx, const Dim& a, int64_t k) {
  return a.known() ? Dim::Known(CheckedMul(a.value, k, ctx.node(), "q_num_heads times the value head size"))
                   : Dim::Unknown();
}
Dim Over(const Dim& a, int64_t k) { return a.known() && k > 0 ? Dim::Known(a.value / k) : Dim::Unknown(); }

void InferAttention(InferContext& ctx) {
  const TensorType& q = ctx.input_type(kQ);
  const TensorType& k = ctx.input_type(kK);
  const TensorType& v = ctx.input_type(kV);
  if (!IsFloatDType(q.dtype)) ctx.Error("Q must be a float tensor, got ", DTypeName(q.dtype));
  if (k.dtype != q.dtype) ctx.Error("K must have Q's type ", DTypeName(q.dtype), ", got ", DTypeName(k.dtype));
  if (!IsFloatDType(v.dtype)) ctx.Error("V must be a float tensor, got ", DTypeName(v.dtype));
  const bool has_past = ctx.has_input(kPastKey) || ctx.has_input(kPastValue);
  if (has_past && !(ctx.has_input(kPastKey) && ctx.has_input(kPastValue)))
    ctx.Error("past_key and past_value must be given together");
  if (ctx.num_inputs() > kNonpad && ctx.has_input(kNonpad)) {
    if (has_past) ctx.Error("nonpad_kv_seqlen cannot be combined with past_key/past_value");
    if (ctx.input_type(kNonpad).dtype != DType::kInt64)
      ctx.Error("nonpad_kv_seqlen must be int64, got ", DTypeName(ctx.input_type(kNonpad).dtype));
  }
  const int64_t mode = ctx.attrs().GetInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) ctx.Error("qk_matmul_output_mode must be 0, 1, 2 or 3, got ", mode);
  const int64_t qh_attr = ctx.attrs().GetInt("q_num_heads", 0), kvh_attr = ctx.attrs().GetInt("kv_num_heads", 0);
  for (const TensorType* t : {&q, &k, &v})
    if (t->has_rank && t->rank() != 3 && t->rank() != 4)
      ctx.Error("Q, K and V must be 3-D [B, S, hidden] or 4-D [B, heads, S, head_size], got ", t->ToString());
  if (!q.has_rank || !k.has_rank || !v.has_rank) {
    for (size_t o = 0; o < ctx.num_outputs(); ++o) ctx.set_output(o, TensorType::UnknownShape(o == 2 ? v.dtype : q.dtype));
    return;
  }
  if (q.rank() != k.rank() || q.rank() != v.rank()) ctx.Error("Q, K and V must have one rank, got ", q.ToString(), ", ",
                                                              k.ToString(), ", ", v.ToString());
  const bool three_d = q.rank() == 3;
  Dim batch = q.dims[0], q_seq, kv_seq, head, v_head;
  int64_t q_heads = 0, kv_heads = 0;
  if (three_d) {
    if (qh_attr <= 0 || kvh_attr <= 0) ctx.Error("3-D Q, K and V need q_num_heads and kv_num_heads (> 0)");
    q_heads = qh_attr;
    kv_heads = kvh_attr;
    if (q.dims[2].known() && q.dims[2].value % q_heads != 0)
      ctx.Error("Q's hidden size ", q.dims[2].value, " is not a multiple of q_num_heads ", q_heads);
    if (k.dims[2].known() && k.dims[2].value % kv_heads != 0)
      ctx.Error("K's hidden size ", k.dims[2].value, " is not a multiple of kv_num_heads ", kv_heads);
    if (v.dims[2].known() && v.dims[2].value % kv_heads != 0)
      ctx.Error("V's hidden size ", v.dims[2].value, " is not a multiple of kv_num_heads ", kv_heads);
    q_seq = q.dims[1];
    kv_seq = k.dims[1];
    head = Over(q.dims[2], q_heads);
    v_head = Over(v.dims[2], kv_heads);
  } else {
    q_heads = q.dims[1].known() ? q.dims[1].value : 0;
    kv_heads = k.dims[1].known() ? k.dims[1].value : 0;
    q_seq = q.dims[2];
    kv_seq = k.dims[2];
    head = q.dims[3];
    v_head = v.dims[3];
  }
  if (q_heads > 0 && kv_heads > 0 && q_heads % kv_heads != 0)
    ctx.Error("q_num_heads ", q_heads, " is not a multiple of kv_num_heads ", kv_heads);
  Dim total = kv_seq;
  if (has_past) {
    const TensorType& pk = ctx.input_type(kPastKey);
    if (pk.has_rank && pk.rank() != 4) ctx.Error("past_key must be 4-D [B, kv_heads, past, head_size], got ", pk.ToString());
    total = pk.has_rank ? Sum(ctx, pk.dims[2], kv_seq) : Dim::Unknown();
  }
  const Dim qh = q_heads > 0 ? Dim::Known(q_heads) : Dim::Unknown();
  const Dim kvh = kv_heads > 0 ? Dim::Known(kv_heads) : Dim::Unknown();
  ctx.set_output(0, three_d ? TensorType::Of(q.dtype, {batch, q_seq, Times(ctx, v_head, q_heads)})
                            : TensorType::Of(q.dtype, {batch, qh, q_seq, v_head}));
  if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType::Of(q.dtype, {batch, kvh, total, head}));
  if (ctx.num_outputs() > 2) ctx.set_output(2, TensorType::Of(v.dtype, {batch, kvh, total, v_head}));
  if (ctx.num_outputs() > 3) ctx.set_output(3, TensorType::Of(q.dtype, {batch, qh, q_seq, total}));
}

OpSchema AttentionSchema(int since) {
  OpSchema s(op::kAttention);
  s.Since(since).Input("Q").Input("K").Input("V").OptionalInput("attn_mask").OptionalInput("past_key")
      .OptionalInput("past_value");
  if (since >= 24) s.OptionalInput("nonpad_kv_seqlen");
  s.Output("Y").OptionalOutput("present_key").OptionalOutput("present_value").OptionalOutput("qk_matmul_output")
      .Attr("is_causal", Attribute::Int(0)).OptionalAttr("kv_num_heads", AttrKind::kInt)
      .OptionalAttr("q_num_heads", AttrKind::kInt).Attr("qk_matmul_output_mode", Attribute::Int(0))
      .OptionalAttr("scale", AttrKind::kFloat).Attr("softcap", Attribute::Float(0.0f))
      .OptionalAttr("softmax_precision", AttrKind::kInt);
  if (since >= 25) s.Attr("left_window_size", Attribute::Int(-1)).Attr("right_window_size", Attribute::Int(-1));
  return s.Infer(InferAttention);
}

void InferRotaryEmbedding(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!IsFloatDType(x.dtype)) ctx.Error("X must be a float tensor, got ", DTypeName(x.dtype));
  for (size_t i : {size_t{1}, size_t{2}})
    if (ctx.input_type(i).dtype != x.dtype)
      ctx.Error(i == 1 ? "cos_cache" : "sin_cache", " must have X's type ", DTypeName(x.dtype), ", got ",
                DTypeName(ctx.input_type(i).dtype));
  if (ctx.has_input(3) && ctx.input_type(3).dtype != DType::kInt64)
    ctx.Error("position_ids must be int64, got ", DTypeName(ctx.input_type(3).dtype));
  if (x.has_rank && x.rank() != 3 && x.rank() != 4)
    ctx.Error("X must be 3-D [B, S, hidden] or 4-D [B, heads, S, head_size], got ", x.ToString());
  if (x.has_rank && x.rank() == 3 && ctx.attrs().GetInt("num_heads", 0) <= 0)
    ctx.Error("a 3-D X needs num_heads (> 0)");
  ctx.set_output(0, x);
}

// TensorScatter (opset 24): the KV-cache update that goes with Attention's external cache. Writes
// update [.., seq, ..] into a copy of past_cache [.., max_seq, ..] along `axis`, at write_indices[b]
// per batch row (0 without them); mode "circular" wraps positions past max_seq.
void InferTensorScatter(InferContext& ctx) {
  const TensorType& past = ctx.input_type(0);
  const TensorType& update = ctx.input_type(1);
  if (past.dtype == DType::kString) Fail(ErrorCode::kUnsupported, ctx.node(), ": string caches are not supported");
  if (update.dtype != past.dtype)
    ctx.Error("update must have past_cache's type ", DTypeName(past.dtype), ", got ", DTypeName(update.dtype));
  if (ctx.has_input(2) && ctx.input_dtype(2) != DType::kInt64)
    ctx.Error("write_indices must be int64, got ", DTypeName(ctx.input_dtype(2)));
  const std::string mode = ctx.attrs().GetString("mode");
  if (mode != "linear" && mode != "circular") ctx.Error("mode must be linear or circular, got '", mode, "'");
  if (past.has_rank && update.has_rank) {
    if (past.rank() != update.rank() || past.rank() < 2)
      ctx.Error("past_cache and update must have one rank >= 2, got ", past.ToString(), " and ", update.ToString());
    int64_t axis = ctx.attrs().GetInt("axis");
    if (axis < -past.rank() || axis >= past.rank() || axis == 0 || axis == -past.rank())
      ctx.Error("axis ", axis, " must name a dimension after the batch (rank ", past.rank(), ")");
  }
  ctx.set_output(0, past);
}

}  // namespace

void RegisterAttentionOps(OpRegistry& r) {
  r.Register(OpSchema(op::kTensorScatter).Since(24).Input("past_cache").Input("update").OptionalInput("write_indices")
                 .Output("present_cache").Attr("axis", Attribute::Int(-2)).Attr("mode", Attribute::String("linear"))
                 .Infer(InferTensorScatter));
  r.Register(AttentionSchema(23).Until(23));
  r.Register(AttentionSchema(24).Until(24));
  r.Register(AttentionSchema(25));
  r.Register(OpSchema(op::kRotaryEmbedding).Since(23).Input("X").Input("cos_cache").Input("sin_cache")
                 .OptionalInput("position_ids").Output("Y").Attr("interleaved", Attribute::Int(0))
                 .Attr("num_heads", Attribute::Int(0)).Attr("rotary_embedding_dim", Attribute::Int(0))
                 .Infer(InferRotaryEmbedding));
}

}  // namespace oneflow
