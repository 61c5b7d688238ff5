// Op family: ONNX Runtime's attention contrib ops (com.microsoft), with the semantics of its CPU
// kernels; what each computes is in docs/contrib-ops.md. Kernels: kernels/cpu/contrib_attention.cc
// on the shared attention core (kernels/cpu/attention_core.h).
//   Attention(input, weights, bias?, mask_index?, past?, attention_bias?, past_sequence_length?)
//       -> output, present?          BERT/GPT-2 self-attention with the Q/K/V projection folded in
//   QAttention(input, weight, bias, input_scale, weight_scale, mask_index?, input_zero_point?,
//       weight_zero_point?, past?) -> output, present?   the same with 8-bit input and weights
//   MultiHeadAttention(query, key?, value?, bias?, key_padding_mask?, attention_bias?, past_key?,
//       past_value?, past_sequence_length?, cache_indirection?) -> output, present_key?,
//       present_value?, qk?          self/cross attention on projected Q, K, V
//   GroupQueryAttention(query, key?, value?, past_key?, past_value?, seqlens_k,
//       total_sequence_length, cos_cache?, sin_cache?, position_ids?, attention_bias?, head_sink?,
//       ...) -> output, present_key, present_value, output_qk?   the decoder attention of
//                                    onnxruntime-genai's LLMs: a KV cache, rotary, windows
//   RotaryEmbedding(input, position_ids, cos_cache, sin_cache) -> output
//   EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
//       segment_embedding?, gamma, beta, mask?, position_ids?) -> output, mask_index?,
//       embedding_sum?              BERT's embedding sum and LayerNorm
//   DynamicQuantizeLSTM(X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?, W_scale,
//       W_zero_point, R_scale, R_zero_point) -> Y?, Y_h?, Y_c?   LSTM with 8-bit weights
#include <algorithm>
#include <string>
#include <vector>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

Dim KnownOr(int64_t v) { return v >= 0 ? Dim::Known(v) : Dim::Unknown(); }
int64_t DimOr(const TensorType& t, int64_t axis) {
  return t.has_rank && axis < t.rank() && t.dims[static_cast<size_t>(axis)].known() ? t.dims[static_cast<size_t>(axis)].value
                                                                                     : -1;
}
Dim DimAt(const TensorType& t, int64_t axis) { return KnownOr(DimOr(t, axis)); }

void RequireFloat(InferContext& ctx, size_t i, const char* name) {
  if (!IsFloatDType(ctx.input_dtype(i)) || ctx.input_dtype(i) == DType::kFloat64)
    ctx.Error(name, " must be float32, float16 or bfloat16, got ", DTypeName(ctx.input_dtype(i)));
}
void RequireSameType(InferContext& ctx, size_t i, const char* name, DType want) {
  if (ctx.has_input(i) && ctx.input_dtype(i) != want)
    ctx.Error(name, " must have the input's type ", DTypeName(want), ", got ", DTypeName(ctx.input_dtype(i)));
}
void RequireIntType(InferContext& ctx, size_t i, const char* name, bool int64_too) {
  if (!ctx.has_input(i)) return;
  const DType t = ctx.input_dtype(i);
  if (t != DType::kInt32 && !(int64_too && t == DType::kInt64))
    ctx.Error(name, " must be int32", int64_too ? " or int64" : "", ", got ", DTypeName(t));
}
int64_t NumHeads(InferContext& ctx, const char* attr = "num_heads") {
  const int64_t n = ctx.attrs().GetInt(attr, 0);
  if (n <= 0) ctx.Error(attr, " must be > 0, got ", n);
  return n;
}

// The hidden sizes of Q, K and V in Attention's merged weights [in, q + k + v].
struct QkvSizes {
  int64_t q = -1, k = -1, v = -1;
};
QkvSizes AttentionQkvSizes(InferContext& ctx, int64_t total, int64_t heads) {
  QkvSizes s;
  const std::vector<int64_t> sizes = ctx.attrs().GetInts("qkv_hidden_sizes", {});
  if (!sizes.empty()) {
    if (sizes.size() != 3) ctx.Error("qkv_hidden_sizes must hold 3 values, got ", sizes.size());
    if (sizes[0] != sizes[1]) ctx.Error("qkv_hidden_sizes: Q and K must have one hidden size, got ", sizes[0], " and ", sizes[1]);
    for (int64_t v : sizes)
      if (v <= 0 || v % heads != 0) ctx.Error("qkv_hidden_sizes ", v, " is not a positive multiple of num_heads ", heads);
    if (total >= 0 && sizes[0] + sizes[1] + sizes[2] != total)
      ctx.Error("qkv_hidden_sizes sum to ", sizes[0] + sizes[1] + sizes[2], ", but the weights have ", total, " columns");
    return {sizes[0], sizes[1], sizes[2]};
  }
  if (total >= 0) {
    if (total % 3 != 0 || (total / 3) % heads != 0)
      ctx.Error("the weights' ", total, " columns are not 3 * num_heads * head_size (num_heads ", heads, ")");
    s.q = s.k = s.v = total / 3;
  }
  return s;
}

// Attention and QAttention: input [B, S, in], weights [in, q + k + v]; past [2, B, N, P, H].
void InferAttentionLike(InferContext& ctx, bool quantized) {
  const int64_t heads = NumHeads(ctx);
  const TensorType& x = ctx.input_type(0);
  const TensorType& w = ctx.input_type(1);
  DType out = x.dtype;
  if (quantized) {
    if (x.dtype != DType::kUInt8 && x.dtype != DType::kInt8) ctx.Error("input must be uint8 or int8, got ", DTypeName(x.dtype));
    if (w.dtype != DType::kUInt8 && w.dtype != DType::kInt8) ctx.Error("weight must be uint8 or int8, got ", DTypeName(w.dtype));
    RequireFloat(ctx, 3, "input_scale");
    out = ctx.input_dtype(3);
    RequireSameType(ctx, 2, "bias", out);
    RequireSameType(ctx, 4, "weight_scale", out);
    RequireSameType(ctx, 6, "input_zero_point", x.dtype);
    RequireSameType(ctx, 7, "weight_zero_point", w.dtype);
    RequireSameType(ctx, 8, "past", out);
    RequireIntType(ctx, 5, "mask_index", false);
  } else {
    RequireFloat(ctx, 0, "input");
    for (size_t i : {size_t{1}, size_t{2}, size_t{4}, size_t{5}}) RequireSameType(ctx, i, "weights, bias, past and attention_bias", x.dtype);
    RequireIntType(ctx, 3, "mask_index", false);
    RequireIntType(ctx, 6, "past_sequence_length", false);
  }
  if (x.has_rank && x.rank() != 3) ctx.Error("input must be [batch, sequence, input_hidden], got ", x.ToString());
  if (w.has_rank && w.rank() != 2) ctx.Error("weights must be [input_hidden, q + k + v hidden], got ", w.ToString());
  if (DimOr(x, 2) >= 0 && DimOr(w, 0) >= 0 && DimOr(x, 2) != DimOr(w, 0))
    ctx.Error("weights ", w.ToString(), " do not match the input's hidden size ", DimOr(x, 2));
  const QkvSizes s = AttentionQkvSizes(ctx, DimOr(w, 1), heads);
  ctx.set_output(0, TensorType::Of(out, {DimAt(x, 0), DimAt(x, 1), KnownOr(s.v)}));
  if (ctx.num_outputs() < 2) return;
  const size_t past_index = quantized ? 8 : 4;
  Dim total = DimAt(x, 1);
  if (ctx.has_input(past_index)) {
    const TensorType& p = ctx.input_type(past_index);
    if (p.has_rank && p.rank() != 5) ctx.Error("past must be [2, batch, num_heads, past_sequence, head_size], got ", p.ToString());
    total = DimOr(p, 3) >= 0 && total.known() ? Dim::Known(DimOr(p, 3) + total.value) : Dim::Unknown();
  }
  ctx.set_output(1, TensorType::Of(out, {Dim::Known(2), DimAt(x, 0), Dim::Known(heads), total,
                                         KnownOr(s.k >= 0 ? s.k / heads : -1)}));
}

void InferMultiHeadAttention(InferContext& ctx) {
  const int64_t heads = NumHeads(ctx);
  const TensorType& q = ctx.input_type(0);
  RequireFloat(ctx, 0, "query");
  for (size_t i : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{6}, size_t{7}})
    RequireSameType(ctx, i, "key, value, bias, attention_bias and the past", q.dtype);
  RequireIntType(ctx, 4, "key_padding_mask", false);
  if (ctx.has_input(2) && !ctx.has_input(1)) ctx.Error("value is given without key");
  if (ctx.has_input(6) != ctx.has_input(7)) ctx.Error("past_key and past_value must be given together");
  if (q.has_rank && q.rank() != 3 && q.rank() != 5)
    ctx.Error("query must be [batch, sequence, hidden] or packed [batch, sequence, num_heads, 3, head_size], got ", q.ToString());
  Dim v_hidden = Dim::Unknown(), head = Dim::Unknown(), kv_len = Dim::Unknown();
  if (q.has_rank && q.rank() == 5) {
    v_hidden = DimOr(q, 4) >= 0 ? Dim::Known(heads * DimOr(q, 4)) : Dim::Unknown();
    head = DimAt(q, 4);
    kv_len = DimAt(q, 1);
  } else if (ctx.has_input(2)) {
    const TensorType& v = ctx.input_type(2);
    const TensorType& k = ctx.input_type(1);
    if (v.has_rank && v.rank() == 3) v_hidden = DimAt(v, 2);
    if (v.has_rank && v.rank() == 4 && DimOr(v, 3) >= 0) v_hidden = Dim::Known(heads * DimOr(v, 3));
    if (k.has_rank) kv_len = DimAt(k, k.rank() == 4 ? 2 : 1);
    head = DimOr(q, 2) >= 0 ? Dim::Known(DimOr(q, 2) / heads) : Dim::Unknown();
  } else if (ctx.has_input(1)) {  // packed KV [B, L, N, 2, H]
    const TensorType& k = ctx.input_type(1);
    v_hidden = DimOr(k, 4) >= 0 ? Dim::Known(heads * DimOr(k, 4)) : Dim::Unknown();
    head = DimAt(k, 4);
    kv_len = DimAt(k, 1);
  }
  ctx.set_output(0, TensorType::Of(q.dtype, {DimAt(q, 0), DimAt(q, 1), v_hidden}));
  // present holds past + new rows; with past_sequence_length it is the shared buffer itself, and
  // how many keys there are depends on that input's value.
  Dim total = kv_len, present_len = kv_len;
  if (ctx.has_input(6)) {
    const int64_t past = DimOr(ctx.input_type(6), 2);
    total = present_len = past >= 0 && kv_len.known() ? Dim::Known(past + kv_len.value) : Dim::Unknown();
    if (ctx.has_input(8)) {
      present_len = KnownOr(past);
      const Tensor* used = ctx.input_value(8);
      total = used && used->numel() == 1 && used->dtype() == DType::kInt32 && kv_len.known()
                  ? Dim::Known(used->data<int32_t>()[0] + kv_len.value)
                  : Dim::Unknown();
    }
  }
  const Dim v_head = v_hidden.known() ? Dim::Known(v_hidden.value / heads) : Dim::Unknown();
  if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType::Of(q.dtype, {DimAt(q, 0), Dim::Known(heads), present_len, head}));
  if (ctx.num_outputs() > 2) ctx.set_output(2, TensorType::Of(q.dtype, {DimAt(q, 0), Dim::Known(heads), present_len, v_head}));
  if (ctx.num_outputs() > 3) ctx.set_output(3, TensorType::Of(q.dtype, {DimAt(q, 0), Dim::Known(heads), DimAt(q, 1), total}));
}

enum : size_t {
  kGqaQuery = 0, kGqaKey, kGqaValue, kGqaPastKey, kGqaPastValue, kGqaSeqlensK, kGqaTotalLength, kGqaCos, kGqaSin,
  kGqaPositionIds, kGqaAttentionBias, kGqaHeadSink, kGqaKScale, kGqaVScale, kGqaQNorm, kGqaKNorm
};

void InferGroupQueryAttention(InferContext& ctx) {
  const int64_t heads = NumHeads(ctx), kv_heads = NumHeads(ctx, "kv_num_heads");
  if (heads % kv_heads != 0) ctx.Error("num_heads ", heads, " is not a multiple of kv_num_heads ", kv_heads);
  const TensorType& q = ctx.input_type(kGqaQuery);
  RequireFloat(ctx, kGqaQuery, "query");
  for (size_t i : {kGqaKey, kGqaValue, kGqaPastKey, kGqaPastValue, kGqaCos, kGqaSin, kGqaAttentionBias, kGqaHeadSink})
    RequireSameType(ctx, i, "key, value, the past, the rotary caches, attention_bias and head_sink", q.dtype);
  RequireIntType(ctx, kGqaSeqlensK, "seqlens_k", false);
  RequireIntType(ctx, kGqaTotalLength, "total_sequence_length", false);
  if (ctx.has_input(kGqaPositionIds) && ctx.input_dtype(kGqaPositionIds) != DType::kInt64)
    ctx.Error("position_ids must be int64, got ", DTypeName(ctx.input_dtype(kGqaPositionIds)));
  if (ctx.has_input(kGqaKey) != ctx.has_input(kGqaValue)) ctx.Error("key and value must be given together");
  if (ctx.has_input(kGqaPastKey) != ctx.has_input(kGqaPastValue)) ctx.Error("past_key and past_value must be given together");
  if (q.has_rank && q.rank() != 3) ctx.Error("query must be [batch, sequence, hidden], got ", q.ToString());
  int64_t head = -1;
  if (DimOr(q, 2) >= 0) {
    const int64_t parts = ctx.has_input(kGqaKey) ? heads : heads + 2 * kv_heads;
    if (DimOr(q, 2) % parts != 0)
      ctx.Error("query's hidden size ", DimOr(q, 2), " is not a multiple of ", parts,
                ctx.has_input(kGqaKey) ? " (num_heads)" : " (num_heads + 2 * kv_num_heads, packed QKV)");
    head = DimOr(q, 2) / parts;
  }
  ctx.set_output(0, TensorType::Of(q.dtype, {DimAt(q, 0), DimAt(q, 1), KnownOr(head >= 0 ? heads * head : -1)}));
  // The cache holds max(total_sequence_length, past) rows: known once that input's value is.
  const Tensor* total = ctx.input_value(kGqaTotalLength);
  int64_t total_len = -1;
  if (total && total->numel() == 1 && total->dtype() == DType::kInt32) total_len = total->data<int32_t>()[0];
  const int64_t past = ctx.has_input(kGqaPastKey) ? DimOr(ctx.input_type(kGqaPastKey), 2) : 0;
  const int64_t cache_len = total_len >= 0 && past >= 0 ? std::max(total_len, past) : -1;
  for (size_t o : {size_t{1}, size_t{2}})
    if (ctx.num_outputs() > o)
      ctx.set_output(o, TensorType::Of(q.dtype, {DimAt(q, 0), Dim::Known(kv_heads), KnownOr(cache_len), KnownOr(head)}));
  if (ctx.num_outputs() > 3)
    ctx.set_output(3, TensorType::Of(q.dtype, {DimAt(q, 0), Dim::Known(heads), DimAt(q, 1), KnownOr(total_len)}));
}

void InferContribRotaryEmbedding(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloat(ctx, 0, "input");
  RequireSameType(ctx, 2, "cos_cache", x.dtype);
  RequireSameType(ctx, 3, "sin_cache", x.dtype);
  if (ctx.input_dtype(1) != DType::kInt64) ctx.Error("position_ids must be int64, got ", DTypeName(ctx.input_dtype(1)));
  if (x.has_rank && x.rank() != 3 && x.rank() != 4)
    ctx.Error("input must be [batch, sequence, hidden] or [batch, num_heads, sequence, head_size], got ", x.ToString());
  if (ctx.attrs().GetInt("is_packed_batching", 0) != 0)
    Fail(ErrorCode::kUnsupported, ctx.node(), ": is_packed_batching (ragged batches) is not supported");
  ctx.set_output(0, x);
}

void InferEmbedLayerNormalization(InferContext& ctx) {
  const TensorType& ids = ctx.input_type(0);
  const TensorType& word = ctx.input_type(2);
  RequireFloat(ctx, 2, "word_embedding");
  for (size_t i : {size_t{3}, size_t{4}, size_t{5}, size_t{6}})
    RequireSameType(ctx, i, "the embeddings, gamma and beta", word.dtype);
  for (size_t i : {size_t{0}, size_t{1}, size_t{7}, size_t{8}}) RequireIntType(ctx, i, "input_ids, segment_ids, mask and position_ids", true);
  if (ctx.has_input(1) != ctx.has_input(4)) ctx.Error("segment_ids and segment_embedding must be given together");
  if (ids.has_rank && ids.rank() != 2) ctx.Error("input_ids must be [batch, sequence], got ", ids.ToString());
  if (word.has_rank && word.rank() != 2) ctx.Error("word_embedding must be [vocabulary, hidden], got ", word.ToString());
  const Dim hidden = DimAt(word, 1);
  ctx.set_output(0, TensorType::Of(word.dtype, {DimAt(ids, 0), DimAt(ids, 1), hidden}));
  if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType::Of(DType::kInt32, {DimAt(ids, 0)}));
  if (ctx.num_outputs() > 2) ctx.set_output(2, TensorType::Of(word.dtype, {DimAt(ids, 0), DimAt(ids, 1), hidden}));
}

void InferDynamicQuantizeLstm(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  RequireFloat(ctx, 0, "X");
  const DType wt = ctx.input_dtype(1);
  if (wt != DType::kInt8 && wt != DType::kUInt8) ctx.Error("W must be int8 or uint8, got ", DTypeName(wt));
  RequireSameType(ctx, 2, "R", wt);
  for (size_t i : {size_t{3}, size_t{5}, size_t{6}, size_t{7}, size_t{8}, size_t{10}}) RequireSameType(ctx, i, "B, the states, P and the scales", x.dtype);
  RequireSameType(ctx, 9, "W_zero_point", wt);
  RequireSameType(ctx, 11, "R_zero_point", wt);
  RequireIntType(ctx, 4, "sequence_lens", false);
  const std::string dir = ctx.attrs().GetString("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    ctx.Error("direction must be forward, reverse or bidirectional, got '", dir, "'");
  const int64_t D = dir == "bidirectional" ? 2 : 1;
  const TensorType& r = ctx.input_type(2);
  const Dim hidden = DimAt(r, 1);
  if (x.has_rank && x.rank() != 3) ctx.Error("X must be [sequence, batch, input], got ", x.ToString());
  if (ctx.num_outputs() > 0)
    ctx.set_output(0, TensorType::Of(x.dtype, {DimAt(x, 0), Dim::Known(D), DimAt(x, 1), hidden}));
  for (size_t o : {size_t{1}, size_t{2}})
    if (ctx.num_outputs() > o) ctx.set_output(o, TensorType::Of(x.dtype, {Dim::Known(D), DimAt(x, 1), hidden}));
}

}  // namespace

void RegisterContribAttentionOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kMsAttention).Since(1).Input("input").Input("weights").OptionalInput("bias")
                 .OptionalInput("mask_index").OptionalInput("past").OptionalInput("attention_bias")
                 .OptionalInput("past_sequence_length").Output("output").OptionalOutput("present")
                 .RequiredAttr("num_heads", AttrKind::kInt).OptionalAttr("qkv_hidden_sizes", AttrKind::kInts)
                 .Attr("unidirectional", Attribute::Int(0)).Attr("mask_filter_value", Attribute::Float(-10000.0f))
                 .OptionalAttr("scale", AttrKind::kFloat).Attr("do_rotary", Attribute::Int(0))
                 .Attr("rotary_embedding_dim", Attribute::Int(0)).Attr("past_present_share_buffer", Attribute::Int(0))
                 .Infer([](InferContext& ctx) { InferAttentionLike(ctx, false); }));
  r.Register(OpSchema(OpId::kMsQAttention).Since(1).Input("input").Input("weight").Input("bias").Input("input_scale")
                 .Input("weight_scale").OptionalInput("mask_index").OptionalInput("input_zero_point")
                 .OptionalInput("weight_zero_point").OptionalInput("past").Output("output").OptionalOutput("present")
                 .RequiredAttr("num_heads", AttrKind::kInt).Attr("unidirectional", Attribute::Int(0))
                 .Attr("mask_filter_value", Attribute::Float(-10000.0f)).OptionalAttr("scale", AttrKind::kFloat)
                 .Attr("do_rotary", Attribute::Int(0)).Attr("past_present_share_buffer", Attribute::Int(0))
                 .Infer([](InferContext& ctx) { InferAttentionLike(ctx, true); }));
  r.Register(OpSchema(OpId::kMsMultiHeadAttention).Since(1).Input("query").OptionalInput("key").OptionalInput("value")
                 .OptionalInput("bias").OptionalInput("key_padding_mask").OptionalInput("attention_bias")
                 .OptionalInput("past_key").OptionalInput("past_value").OptionalInput("past_sequence_length")
                 .OptionalInput("cache_indirection").Output("output").OptionalOutput("present_key")
                 .OptionalOutput("present_value").OptionalOutput("qk").RequiredAttr("num_heads", AttrKind::kInt)
                 .Attr("unidirectional", Attribute::Int(0)).Attr("mask_filter_value", Attribute::Float(-10000.0f))
                 .OptionalAttr("scale", AttrKind::kFloat).Infer(InferMultiHeadAttention));
  r.Register(OpSchema(OpId::kMsGroupQueryAttention).Since(1).Input("query").OptionalInput("key").OptionalInput("value")
                 .OptionalInput("past_key").OptionalInput("past_value").Input("seqlens_k").Input("total_sequence_length")
                 .OptionalInput("cos_cache").OptionalInput("sin_cache").OptionalInput("position_ids")
                 .OptionalInput("attention_bias").OptionalInput("head_sink").OptionalInput("k_scale")
                 .OptionalInput("v_scale").OptionalInput("q_norm_weight").OptionalInput("k_norm_weight").Output("output")
                 .OptionalOutput("present_key").OptionalOutput("present_value").OptionalOutput("output_qk")
                 .RequiredAttr("num_heads", AttrKind::kInt).RequiredAttr("kv_num_heads", AttrKind::kInt)
                 .OptionalAttr("scale", AttrKind::kFloat).Attr("softcap", Attribute::Float(0.0f))
                 .Attr("local_window_size", Attribute::Int(-1)).Attr("do_rotary", Attribute::Int(0))
                 .Attr("rotary_interleaved", Attribute::Int(0)).Attr("smooth_softmax", Attribute::Int(0))
                 .Attr("qk_output", Attribute::Int(0)).Attr("causal", Attribute::Int(1))
                 .Attr("sliding_window_cache", Attribute::Int(0)).Attr("k_quant_type", Attribute::String("NONE"))
                 .Attr("v_quant_type", Attribute::String("NONE")).Attr("kv_cache_bit_width", Attribute::Int(0))
                 .Attr("qk_norm_epsilon", Attribute::Float(1e-6f)).Infer(InferGroupQueryAttention));
  r.Register(OpSchema(OpId::kMsRotaryEmbedding).Since(1).Input("input").Input("position_ids").Input("cos_cache")
                 .Input("sin_cache").Output("output").Attr("interleaved", Attribute::Int(0))
                 .Attr("num_heads", Attribute::Int(0)).Attr("rotary_embedding_dim", Attribute::Int(0))
                 .Attr("scale", Attribute::Float(1.0f)).Attr("is_packed_batching", Attribute::Int(0))
                 .Infer(InferContribRotaryEmbedding));
  r.Register(OpSchema(OpId::kMsEmbedLayerNormalization).Since(1).Input("input_ids").OptionalInput("segment_ids")
                 .Input("word_embedding").Input("position_embedding").OptionalInput("segment_embedding").Input("gamma")
                 .Input("beta").OptionalInput("mask").OptionalInput("position_ids").Output("output")
                 .OptionalOutput("mask_index").OptionalOutput("embedding_sum").Attr("epsilon", Attribute::Float(1e-12f))
                 .Attr("mask_index_type", Attribute::Int(1)).Infer(InferEmbedLayerNormalization));
  r.Register(OpSchema(OpId::kMsDynamicQuantizeLSTM).Since(1).Input("X").Input("W").Input("R").OptionalInput("B")
                 .OptionalInput("sequence_lens").OptionalInput("initial_h").OptionalInput("initial_c").OptionalInput("P")
                 .Input("W_scale").Input("W_zero_point").Input("R_scale").Input("R_zero_point").OptionalOutput("Y")
                 .OptionalOutput("Y_h").OptionalOutput("Y_c").OptionalAttr("activation_alpha", AttrKind::kFloats)
                 .OptionalAttr("activation_beta", AttrKind::kFloats).OptionalAttr("activations", AttrKind::kStrings)
                 .OptionalAttr("clip", AttrKind::kFloat).Attr("direction", Attribute::String("forward"))
                 .OptionalAttr("hidden_size", AttrKind::kInt).Attr("input_forget", Attribute::Int(0))
                 .Infer(InferDynamicQuantizeLstm));
}

}  // namespace oneflow
