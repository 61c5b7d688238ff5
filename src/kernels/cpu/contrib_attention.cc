// CPU kernels: ONNX Runtime's attention contrib ops (graph/ops/contrib_attention.cc). Each stages
// its Q, K and V in f32 (projecting, adding biases, rotating, joining the cache) and hands them to
// the shared core (attention_core.h); f16/bf16 inputs are widened and outputs narrowed once.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "kernels/cpu/attention_core.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/integer_gemm.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

using integer_gemm::PackedB;

// A float input in f32: the tensor itself, or a widened copy.
Tensor AsFloat(const Tensor& t) { return t.dtype() == DType::kFloat32 ? t : WidenToFloat(t); }

// An output computed in f32: the output itself when it is f32, else a scratch that Finish narrows.
class FloatOutput {
 public:
  explicit FloatOutput(Tensor& out)
      : out_(out), f32_(out.dtype() == DType::kFloat32 ? out : Tensor::Uninitialized(DType::kFloat32, out.shape())) {}
  float* data() { return f32_.data<float>(); }
  void Finish() {
    if (out_.dtype() != DType::kFloat32) NarrowFromFloat(f32_, out_);
  }

 private:
  Tensor& out_;
  Tensor f32_;
};

void Require(bool ok, const std::string& node, const std::string& what) { OF_REQUIRE(ok, node, ": ", what); }

// ONNX Runtime's attention masks (Attention's mask_index, MultiHeadAttention's key_padding_mask),
// int32, as the keys each query row may not see (a raw mask hides where its value is <= 0):
//   [B]          right padding: keys j >= m[b]
//   [2B]         also left padding: keys j >= m[b] or j < m[B + b]
//   [3B + 2]     onnxruntime's packed form; its CPU kernels read the first B values as [B]
//   [B, 1]       a placeholder that masks nothing (as onnxruntime treats it)
//   [B, T]       raw, per key
//   [B, S, T]    raw, per query row and key
//   [B, 1, M, M] raw, a max-length square read at rows past + i, columns j (GPT-2 exports)
class KeyMask {
 public:
  KeyMask() = default;
  KeyMask(const Tensor& m, int64_t B, int64_t S, int64_t T, int64_t past, const std::string& node)
      : data_(m.data<int32_t>()), B_(B), S_(S), T_(T), past_(past) {
    const Shape& s = m.shape();
    if (m.rank() == 1 && (s[0] == B || s[0] == 3 * B + 2)) kind_ = kEnd;
    else if (m.rank() == 1 && s[0] == 2 * B) kind_ = kEndStart;
    else if (m.rank() == 2 && s[0] == B && s[1] == 1 && T != 1) kind_ = kNone;
    else if (m.rank() == 2 && s[0] == B && s[1] == T) kind_ = kPerKey;
    else if (m.rank() == 3 && s[0] == B && s[1] == S && s[2] == T) kind_ = kPerRow;
    else if (m.rank() == 4 && s[0] == B && s[1] == 1 && s[2] == s[3] && s[2] >= past + S && s[2] >= T) {
      kind_ = kSquare;
      M_ = s[2];
    } else {
      Fail(ErrorCode::kInvalidArgument, node, ": the mask ", ShapeToString(s), " is none of [", B, "], [", 2 * B, "], [",
           3 * B + 2, "], [", B, ", ", T, "], [", B, ", ", S, ", ", T, "] and [", B, ", 1, M, M] with M >= ", T,
           " (T = past + new sequence length)");
    }
    if (kind_ == kEnd || kind_ == kEndStart)
      for (int64_t i = 0; i < (kind_ == kEnd ? B : 2 * B); ++i)
        OF_REQUIRE(data_[i] >= 0, node, ": mask value ", data_[i], " at index ", i, " is negative (it is a key position)");
  }
  bool present() const { return kind_ != kNone; }
  bool Masked(int64_t b, int64_t i, int64_t j) const {
    switch (kind_) {
      case kNone: return false;
      case kEnd: return j >= data_[b];
      case kEndStart: return j >= data_[b] || j < data_[B_ + b];
      case kPerKey: return data_[b * T_ + j] <= 0;
      case kPerRow: return data_[(b * S_ + i) * T_ + j] <= 0;
      case kSquare: return data_[(b * M_ + past_ + i) * M_ + j] <= 0;
    }
    return false;
  }

 private:
  enum Kind { kNone, kEnd, kEndStart, kPerKey, kPerRow, kSquare } kind_ = kNone;
  const int32_t* data_ = nullptr;
  int64_t B_ = 0, S_ = 0, T_ = 0, M_ = 0, past_ = 0;
};

// attention_bias [B or 1, N or 1, S, T] (f32), added to the scores.
struct AttentionBias {
  const float* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, S = 0, T = 0;
  static AttentionBias Read(const Tensor& t, int64_t B, int64_t N, int64_t S, int64_t T, const std::string& node) {
    Require(t.rank() == 4 && (t.dim(0) == B || t.dim(0) == 1) && (t.dim(1) == N || t.dim(1) == 1) && t.dim(2) == S &&
                t.dim(3) == T,
            node, "attention_bias " + ShapeToString(t.shape()) + " must be [" + std::to_string(B) + " or 1, " +
                      std::to_string(N) + " or 1, " + std::to_string(S) + ", " + std::to_string(T) + "]");
    return {t.data<float>(), t.dim(0) == 1 ? 0 : t.dim(1) * S * T, t.dim(1) == 1 ? 0 : S * T, S, T};
  }
  const float* Row(int64_t b, int64_t h, int64_t i) const { return data + b * batch_stride + h * head_stride + i * T; }
};

// The ONNX Runtime mask arithmetic shared by Attention, QAttention and MultiHeadAttention. A key
// the mask hides gets mask_filter_value, not -inf: a row whose every key is hidden then weighs
// them as if unmasked, as onnxruntime does. A key past the causal frontier (j > past + i) gets the
// lowest float, which no attention_bias lifts; then attention_bias is added.
std::function<void(int64_t, int64_t, int64_t, float*)> OrtMaskBias(const KeyMask& mask, bool causal, int64_t past,
                                                                   float filter, const AttentionBias& bias, int64_t T) {
  if (!mask.present() && !causal && !bias.data) return {};
  return [&mask, causal, past, filter, bias, T](int64_t b, int64_t h, int64_t i, float* out) {
    if (mask.present())
      for (int64_t j = 0; j < T; ++j)
        if (mask.Masked(b, i, j)) out[j] = filter;
    if (causal)
      for (int64_t j = past + i + 1; j < T; ++j) out[j] = std::numeric_limits<float>::lowest();
    if (bias.data) {
      const float* row = bias.Row(b, h, i);
      for (int64_t j = 0; j < T; ++j) out[j] += row[j];
    }
  };
}

// A KV cache [B, N, capacity, H] (the present layout): each (b, n) gets the `past_rows` rows of
// past [B, N, past_rows, H] (may be null when 0), then the L rows of `fresh` (any view of
// [B, N, L, H]) at rows [write_at, write_at + L).
void JoinCache(const float* past, int64_t past_rows, int64_t write_at, const HeadView<const float>& fresh, int64_t B,
               int64_t N, int64_t L, int64_t H, float* out, int64_t capacity) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      float* dst = out + (b * N + n) * capacity * H;
      if (past_rows)
        std::memcpy(dst, past + (b * N + n) * past_rows * H, static_cast<size_t>(past_rows * H) * sizeof(float));
      for (int64_t l = 0; l < L; ++l)
        std::memcpy(dst + (write_at + l) * H, fresh.At(b, n, l), static_cast<size_t>(H) * sizeof(float));
    }
}
HeadView<const float> CacheView(const float* data, int64_t N, int64_t capacity, int64_t H) {
  return {data, N * capacity * H, capacity * H, H};
}

float ScaleAttr(const KernelContext& ctx, int64_t head_size) {
  const float s = ctx.attrs().GetFloat("scale", 0.0f);
  return s != 0.0f ? s : 1.0f / std::sqrt(static_cast<float>(head_size));
}

// What Attention, QAttention and MultiHeadAttention share once Q, K and V are staged: the mask
// and attention_bias read against the T = past + new keys, onnxruntime's mask arithmetic, the core;
// Y written as [B, S, N * Hv], `qk` (may be null) as [B, N, S, T] scores before the softmax.
void RunOrtAttention(KernelContext& ctx, const HeadView<const float>& q, const HeadView<const float>& k,
                     const HeadView<const float>& v, int64_t B, int64_t N, int64_t S, int64_t P, int64_t T, int64_t H,
                     int64_t Hv, const Tensor* mask_index, const Tensor* attention_bias, FloatOutput* qk) {
  const std::string& node = ctx.node_desc();
  KeyMask mask;
  if (mask_index) mask = KeyMask(*mask_index, B, S, T, P, node);
  Tensor bias_f;
  AttentionBias bias;
  if (attention_bias) {
    bias_f = AsFloat(*attention_bias);
    bias = AttentionBias::Read(bias_f, B, N, S, T, node);
  }
  const bool causal = ctx.attrs().GetInt("unidirectional", 0) != 0;
  FloatOutput y(ctx.output(0));
  AttentionProblem<float> p;
  p.SetDims(B, N, N, S, T, H, Hv);
  p.q = q;
  p.k = k;
  p.v = v;
  p.y = HeadView<float>::Bsnh(y.data(), S, N, Hv);
  p.scale = ScaleAttr(ctx, H);
  // The causal frontier is key_end; the bias shows it only to the qk output (which sees every key).
  p.bias = OrtMaskBias(mask, causal && qk, P, ctx.attrs().GetFloat("mask_filter_value", -10000.0f), bias, T);
  if (causal) p.key_end = [P](int64_t, int64_t i) { return P + i + 1; };
  if (qk) {
    float* out = qk->data();
    p.observe = [out, S, N, T](AttentionStage stage, int64_t b, int64_t h, int64_t i, const float* row) {
      if (stage == AttentionStage::kBiased) std::copy_n(row, T, out + ((b * N + h) * S + i) * T);
    };
  }
  RunAttention(p, ctx.pool());
  y.Finish();
}

// ---- Attention and QAttention ---------------------------------------------------------------------

// The part Attention and QAttention share once Q, K and V are projected: qkv [B, S, q + k + v]
// f32, `past` [2, B, N, P, H] or empty.
void AttentionAfterProjection(KernelContext& ctx, const float* qkv, int64_t B, int64_t S, int64_t N, int64_t q_hidden,
                              int64_t v_hidden, const Tensor& past, const Tensor* mask_index,
                              const Tensor* attention_bias) {
  const std::string& node = ctx.node_desc();
  const int64_t H = q_hidden / N, Hv = v_hidden / N, width = 2 * q_hidden + v_hidden;
  int64_t P = 0;
  if (past.defined()) {
    Require(past.rank() == 5 && past.dim(0) == 2 && past.dim(1) == B && past.dim(2) == N && past.dim(4) == H && H == Hv, node,
            "past " + ShapeToString(past.shape()) + " must be [2, " + std::to_string(B) + ", " + std::to_string(N) +
                ", past_sequence, " + std::to_string(H) + "] (Q, K and V of one head size)");
    P = past.dim(3);
  }
  const int64_t T = P + S;
  // K and V joined with the past, [2, B, N, T, H] as `present` holds them (written there directly).
  float* kv = nullptr;
  std::unique_ptr<FloatOutput> present;
  std::vector<float> kv_scratch;
  const bool same_heads = H == Hv;
  if (ctx.has_output(1)) {
    Require(same_heads, node, "present needs Q, K and V of one head size");
    present = std::make_unique<FloatOutput>(ctx.output(1));
    kv = present->data();
  } else {
    kv_scratch.resize(static_cast<size_t>(B * N * T * (H + Hv)));
    kv = kv_scratch.data();
  }
  const Tensor past_f = past.defined() ? AsFloat(past) : Tensor();
  const float* past_k = past.defined() ? past_f.data<float>() : nullptr;
  const float* past_v = past.defined() ? past_k + B * N * P * H : nullptr;
  float* k = kv;
  float* v = kv + B * N * T * H;
  JoinCache(past_k, P, P, {qkv + q_hidden, S * width, H, width}, B, N, S, H, k, T);
  JoinCache(past_v, P, P, {qkv + 2 * q_hidden, S * width, Hv, width}, B, N, S, Hv, v, T);

  RunOrtAttention(ctx, {qkv, S * width, H, width}, HeadView<const float>::Bnsh(k, T, N, H),
                  HeadView<const float>::Bnsh(v, T, N, Hv), B, N, S, P, T, H, Hv, mask_index, attention_bias, nullptr);
  if (present) present->Finish();
}

// Attention's attributes that the CPU path does not implement, refused by name.
void RefuseAttentionExtras(const KernelContext& ctx) {
  OF_CHECK(ctx.attrs().GetInt("do_rotary", 0) == 0, kUnsupported, ctx.node_desc(),
           ": do_rotary is not supported (onnxruntime's CPU kernel has no rotary Attention either)");
  OF_CHECK(ctx.attrs().GetInt("past_present_share_buffer", 0) == 0, kUnsupported, ctx.node_desc(),
           ": past_present_share_buffer is not supported");
}

// Attention: qkv = input weights + bias, then the shared part.
class AttentionKernel final : public OpKernel {
 public:
  explicit AttentionKernel(const KernelInitContext& init) {
    const Tensor* w = init.constant_input(1);
    if (w && w->dtype() == DType::kFloat32 && w->rank() == 2)
      packed_ = std::make_unique<PackedMatrix>(PackGemmB(w->dim(0), w->dim(1), w->data<float>(), w->dim(1), false));
  }
  void Compute(KernelContext& ctx) override {
    RefuseAttentionExtras(ctx);
    const std::string& node = ctx.node_desc();
    OF_CHECK(!ctx.has_input(6), kUnsupported, node, ": past_sequence_length (a shared past/present buffer) is not supported");
    const Tensor x = AsFloat(ctx.input(0)), w = AsFloat(ctx.input(1));
    const int64_t N = ctx.attrs().GetInt("num_heads");
    Require(x.rank() == 3 && w.rank() == 2 && w.dim(0) == x.dim(2), node,
            "input " + ShapeToString(x.shape()) + " and weights " + ShapeToString(w.shape()) +
                " must be [B, S, in] and [in, q + k + v]");
    const int64_t B = x.dim(0), S = x.dim(1), in = x.dim(2), width = w.dim(1);
    std::vector<int64_t> sizes = ctx.attrs().GetInts("qkv_hidden_sizes", {});
    if (sizes.empty()) sizes.assign(3, width / 3);
    Require(sizes.size() == 3 && sizes[0] == sizes[1] && sizes[0] + sizes[1] + sizes[2] == width && sizes[0] % N == 0 &&
                sizes[2] % N == 0 && sizes[0] > 0,
            node, "the weights' " + std::to_string(width) + " columns do not split into Q, K and V of num_heads " +
                      std::to_string(N) + " heads");
    std::vector<float> qkv(static_cast<size_t>(B * S * width));
    Tensor bias;
    GemmEpilogue ep;
    if (ctx.has_input(2)) {
      bias = AsFloat(ctx.input(2));
      Require(bias.numel() == width, node, "bias must have " + std::to_string(width) + " entries");
      ep.col_bias = bias.data<float>();
    }
    const GemmOperand b = packed_ && ctx.input(1).dtype() == DType::kFloat32
                              ? GemmOperand::PackedOrRaw(*packed_, w.data<float>(), width)
                              : GemmOperand::Raw(w.data<float>(), width);
    Sgemm(B * S, width, in, 1.0f, GemmOperand::Raw(x.data<float>(), in), b, 0.0f, qkv.data(), width,
          ep.empty() ? nullptr : &ep, &ctx.pool());
    AttentionAfterProjection(ctx, qkv.data(), B, S, N, sizes[0], sizes[2], ctx.has_input(4) ? ctx.input(4) : Tensor(),
                             ctx.has_input(3) ? &ctx.input(3) : nullptr, ctx.has_input(5) ? &ctx.input(5) : nullptr);
  }

 private:
  std::unique_ptr<PackedMatrix> packed_;
};
ONEFLOW_KERNEL_CLASS(MsAttention, AttentionKernel);

// QAttention: qkv = (input - zi)(weight - zw) * input_scale * weight_scale + bias through the 8-bit
// GEMM (weights packed once when constant), then the shared part.
class QAttentionKernel final : public OpKernel {
 public:
  explicit QAttentionKernel(const KernelInitContext& init) {
    const Tensor* w = init.constant_input(1);
    const Tensor* zw = init.constant_input(7);
    const bool zw_absent = !init.node().has_input(7);
    if (w && w->rank() == 2 && (zw || zw_absent)) {
      const DType a_type = init.input_type(0).dtype;
      const std::vector<int16_t> zero_points =
          integer_gemm::ZeroPointEntries(zw, init.node().Describe(), "weight_zero_point", w->dim(1));
      packed_.Pack(w->raw(), w->dtype(), w->dim(1), zero_points.data(), w->dim(0), w->dim(1), a_type);
      has_packed_ = true;
    }
  }
  void Compute(KernelContext& ctx) override {
    RefuseAttentionExtras(ctx);
    const std::string& node = ctx.node_desc();
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const int64_t N = ctx.attrs().GetInt("num_heads");
    Require(x.rank() == 3 && w.rank() == 2 && w.dim(0) == x.dim(2) && w.dim(1) % 3 == 0 && (w.dim(1) / 3) % N == 0, node,
            "input " + ShapeToString(x.shape()) + " and weight " + ShapeToString(w.shape()) +
                " must be [B, S, in] and [in, 3 * num_heads * head_size]");
    const int64_t B = x.dim(0), S = x.dim(1), in = x.dim(2), width = w.dim(1), M = B * S;
    const Tensor bias = AsFloat(ctx.input(2)), x_scale = AsFloat(ctx.input(3)), w_scale = AsFloat(ctx.input(4));
    Require(bias.numel() == width, node, "bias must have " + std::to_string(width) + " entries");
    Require(x_scale.numel() == 1, node, "input_scale must be a scalar (per-tensor)");
    Require(w_scale.numel() == 1 || w_scale.numel() == width, node,
            "weight_scale must be a scalar or have " + std::to_string(width) + " entries");
    for (const Tensor* t : {&x_scale, &w_scale})
      for (int64_t i = 0; i < t->numel(); ++i)
        Require(std::isfinite(t->data<float>()[i]) && t->data<float>()[i] != 0.0f, node,
                std::string(t == &x_scale ? "input_scale" : "weight_scale") + " holds " +
                    std::to_string(t->data<float>()[i]) + ": scales must be finite and nonzero");
    const std::vector<int16_t> zx =
        integer_gemm::ZeroPointEntries(ctx.has_input(6) ? &ctx.input(6) : nullptr, node, "input_zero_point", 1);
    const std::vector<int16_t> za(static_cast<size_t>(M), zx[0]);
    PackedB per_run;
    const PackedB* packed = &packed_;
    if (!has_packed_ || packed_.k() != in || packed_.n() != width) {
      const std::vector<int16_t> zw =
          integer_gemm::ZeroPointEntries(ctx.has_input(7) ? &ctx.input(7) : nullptr, node, "weight_zero_point", width);
      per_run.Pack(w.raw(), w.dtype(), width, zw.data(), in, width, x.dtype());
      packed = &per_run;
    }
    std::vector<int32_t> acc(static_cast<size_t>(M * width));
    packed->Multiply(ctx.pool(), x.raw(), M, in, za.data(), acc.data(), width);
    std::vector<float> qkv(acc.size());
    const float sx = x_scale.data<float>()[0];
    const float* sw = w_scale.data<float>();
    const float* pb = bias.data<float>();
    const bool per_column = w_scale.numel() == width;
    ctx.pool().ParallelFor(M, static_cast<double>(width) * 2, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m)
        for (int64_t c = 0; c < width; ++c)
          qkv[static_cast<size_t>(m * width + c)] =
              static_cast<float>(acc[static_cast<size_t>(m * width + c)]) * (sx * sw[per_column ? c : 0]) + pb[c];
    });
    AttentionAfterProjection(ctx, qkv.data(), B, S, N, width / 3, width / 3, ctx.has_input(8) ? ctx.input(8) : Tensor(),
                             ctx.has_input(5) ? &ctx.input(5) : nullptr, nullptr);
  }

 private:
  PackedB packed_;  // the constant weight, less its zero points
  bool has_packed_ = false;
};
ONEFLOW_KERNEL_CLASS(MsQAttention, QAttentionKernel);

// ---- MultiHeadAttention ---------------------------------------------------------------------------

// Q, K and V of MultiHeadAttention in f32 with the projection bias added: Q as [B, S, N*H]; K and V
// as [B, N, T, H] joined with the past (the present layout).
void MultiHeadAttentionKernel(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const int64_t N = ctx.attrs().GetInt("num_heads");
  OF_CHECK(!ctx.has_input(9), kUnsupported, node, ": cache_indirection (beam search) is not supported");
  const Tensor q0 = AsFloat(ctx.input(0));
  const bool packed_qkv = q0.rank() == 5, packed_kv = !packed_qkv && ctx.has_input(1) && ctx.input(1).rank() == 5;
  Require(q0.rank() == 3 || packed_qkv, node, "query must be [B, S, hidden] or [B, S, N, 3, H], got " + ShapeToString(q0.shape()));
  const int64_t B = q0.dim(0), S = q0.dim(1);
  Tensor k0, v0;
  if (!packed_qkv) {
    Require(ctx.has_input(1), node, "key is required unless query packs Q, K and V");
    k0 = AsFloat(ctx.input(1));
    if (!packed_kv) {
      Require(ctx.has_input(2), node, "value is required unless key packs K and V");
      v0 = AsFloat(ctx.input(2));
    }
  } else {
    Require(!ctx.has_input(1) && !ctx.has_input(2), node, "packed Q, K and V take no key or value");
  }
  // Head sizes and the fresh K/V rows as views.
  int64_t H = 0, Hv = 0, L = 0;
  HeadView<const float> q, k, v;
  bool kv_is_cache = false;  // key/value given as [B, N, L, H]: a finished cache
  if (packed_qkv) {
    Require(q0.dim(2) == N && q0.dim(3) == 3, node, "packed query must be [B, S, " + std::to_string(N) + ", 3, H]");
    H = Hv = q0.dim(4);
    L = S;
    const float* d = q0.data<float>();
    const int64_t row = N * 3 * H;
    q = {d, S * row, 3 * H, row};
    k = {d + H, S * row, 3 * H, row};
    v = {d + 2 * H, S * row, 3 * H, row};
  } else {
    Require(q0.dim(2) % N == 0, node, "query's hidden size is not a multiple of num_heads");
    H = q0.dim(2) / N;
    q = HeadView<const float>::Bsnh(q0.data<float>(), S, N, H);
    if (packed_kv) {
      Require(k0.dim(0) == B && k0.dim(2) == N && k0.dim(3) == 2 && k0.dim(4) == H, node,
              "packed key must be [B, L, " + std::to_string(N) + ", 2, " + std::to_string(H) + "]");
      L = k0.dim(1);
      Hv = H;
      const int64_t row = N * 2 * H;
      k = {k0.data<float>(), L * row, 2 * H, row};
      v = {k0.data<float>() + H, L * row, 2 * H, row};
    } else if (k0.rank() == 4) {
      Require(v0.rank() == 4 && k0.dim(0) == B && k0.dim(1) == N && k0.dim(3) == H && v0.dim(0) == B && v0.dim(1) == N &&
                  v0.dim(2) == k0.dim(2),
              node, "key/value as a cache must be [B, N, L, H], got " + ShapeToString(k0.shape()) + " and " +
                        ShapeToString(v0.shape()));
      L = k0.dim(2);
      Hv = v0.dim(3);
      kv_is_cache = true;
      k = HeadView<const float>::Bnsh(k0.data<float>(), L, N, H);
      v = HeadView<const float>::Bnsh(v0.data<float>(), L, N, Hv);
    } else {
      Require(k0.rank() == 3 && v0.rank() == 3 && k0.dim(0) == B && v0.dim(0) == B && k0.dim(1) == v0.dim(1) &&
                  k0.dim(2) == N * H && v0.dim(2) % N == 0,
              node, "key " + ShapeToString(k0.shape()) + " and value " + ShapeToString(v0.shape()) +
                        " must be [B, L, " + std::to_string(N * H) + "] and [B, L, N * v_head]");
      L = k0.dim(1);
      Hv = v0.dim(2) / N;
      k = HeadView<const float>::Bsnh(k0.data<float>(), L, N, H);
      v = HeadView<const float>::Bsnh(v0.data<float>(), L, N, Hv);
    }
  }
  // The projection bias: Q's, K's and V's slices added to copies (K's and V's only where they are
  // projections: a [B, N, L, H] key/value is a finished cache, as onnxruntime treats it).
  std::vector<float> qb, kb, vb;
  if (ctx.has_input(3)) {
    const Tensor bias = AsFloat(ctx.input(3));
    Require(bias.numel() == N * (2 * H + Hv), node, "bias must have " + std::to_string(N * (2 * H + Hv)) + " entries");
    auto add = [&](const HeadView<const float>& src, int64_t rows, int64_t dim, const float* b, std::vector<float>& out) {
      out.resize(static_cast<size_t>(B * rows * N * dim));
      for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t n = 0; n < N; ++n) {
            const float* s = src.At(bb, n, r);
            float* d = out.data() + ((bb * rows + r) * N + n) * dim;
            for (int64_t c = 0; c < dim; ++c) d[c] = s[c] + b[n * dim + c];
          }
      return HeadView<const float>::Bsnh(out.data(), rows, N, dim);
    };
    const float* pb = bias.data<float>();
    q = add(q, S, H, pb, qb);
    if (!kv_is_cache) {
      k = add(k, L, H, pb + N * H, kb);
      v = add(v, L, Hv, pb + 2 * N * H, vb);
    }
  }
  // The past: past_key/past_value [B, N, P, H] are joined with the new rows. With
  // past_sequence_length (a buffer shared between past and present) they are [B, N, capacity, H]
  // whose first past_sequence_length rows are valid; the new rows are written after those.
  int64_t past_rows = 0, P = 0;
  Tensor past_k, past_v;
  if (ctx.has_input(6)) {
    past_k = AsFloat(ctx.input(6));
    past_v = AsFloat(ctx.input(7));
    Require(past_k.rank() == 4 && past_k.dim(0) == B && past_k.dim(1) == N && past_k.dim(3) == H &&
                past_v.shape() == Shape({B, N, past_k.dim(2), Hv}),
            node, "past_key " + ShapeToString(past_k.shape()) + " / past_value " + ShapeToString(past_v.shape()) +
                      " must be [B, N, P, H] / [B, N, P, v_head]");
    past_rows = P = past_k.dim(2);
  }
  const bool shared = ctx.has_input(8);
  if (shared) {
    const Tensor& pl = ctx.input(8);
    Require(pl.numel() == 1 && pl.dtype() == DType::kInt32, node, "past_sequence_length must be one int32");
    Require(ctx.has_input(6), node, "past_sequence_length needs past_key and past_value (the shared buffers)");
    P = pl.data<int32_t>()[0];
    Require(P >= 0 && P + L <= past_rows, node,
            "past_sequence_length " + std::to_string(P) + " plus " + std::to_string(L) + " new rows exceeds the " +
                std::to_string(past_rows) + " rows of the shared buffer");
  }
  const int64_t T = P + L, capacity = shared ? past_rows : T;
  std::unique_ptr<FloatOutput> present_k, present_v;
  std::vector<float> kc, vc;
  if (past_rows > 0 || ctx.has_output(1) || ctx.has_output(2)) {
    auto join = [&](size_t out, const Tensor& past, const HeadView<const float>& fresh, int64_t dim,
                    std::unique_ptr<FloatOutput>& present, std::vector<float>& scratch) {
      float* dst;
      if (ctx.has_output(out)) {
        present = std::make_unique<FloatOutput>(ctx.output(out));
        dst = present->data();
      } else {
        scratch.resize(static_cast<size_t>(B * N * capacity * dim));
        dst = scratch.data();
      }
      JoinCache(past_rows ? past.data<float>() : nullptr, past_rows, P, fresh, B, N, L, dim, dst, capacity);
      return CacheView(dst, N, capacity, dim);
    };
    k = join(1, past_k, k, H, present_k, kc);
    v = join(2, past_v, v, Hv, present_v, vc);
  }
  std::unique_ptr<FloatOutput> qk;
  if (ctx.has_output(3)) qk = std::make_unique<FloatOutput>(ctx.output(3));
  RunOrtAttention(ctx, q, k, v, B, N, S, P, T, H, Hv, ctx.has_input(4) ? &ctx.input(4) : nullptr,
                  ctx.has_input(5) ? &ctx.input(5) : nullptr, qk.get());
  if (present_k) present_k->Finish();
  if (present_v) present_v->Finish();
  if (qk) qk->Finish();
}
ONEFLOW_KERNEL(MsMultiHeadAttention, MultiHeadAttentionKernel);

// ---- GroupQueryAttention -------------------------------------------------------------------------

enum : size_t {
  kGqaQuery = 0, kGqaKey, kGqaValue, kGqaPastKey, kGqaPastValue, kGqaSeqlensK, kGqaTotalLength, kGqaCos, kGqaSin,
  kGqaPositionIds, kGqaAttentionBias, kGqaHeadSink, kGqaKScale, kGqaVScale, kGqaQNorm, kGqaKNorm
};

// The rotary caches [M, rot / 2] and the position of each new token.
struct RotaryTable {
  Tensor cos, sin;  // f32
  int64_t rows = 0, half = 0;
  void Read(const Tensor& c, const Tensor& s, int64_t head, const std::string& node) {
    cos = AsFloat(c);
    sin = AsFloat(s);
    Require(cos.rank() == 2 && cos.shape() == sin.shape() && 2 * cos.dim(1) <= head && cos.dim(1) > 0, node,
            "cos_cache " + ShapeToString(cos.shape()) + " and sin_cache " + ShapeToString(sin.shape()) +
                " must share one shape [max_position, rotary_dim / 2] with rotary_dim <= head size " + std::to_string(head));
    rows = cos.dim(0);
    half = cos.dim(1);
  }
  void Rotate(float* x, int64_t head, int64_t pos, bool interleaved, const std::string& node) const {
    OF_REQUIRE(pos >= 0 && pos < rows, node, ": position ", pos, " is outside the rotary caches' ", rows, " rows");
    RotateHead(x, x, head, 2 * half, interleaved, cos.data<float>() + pos * half, sin.data<float>() + pos * half);
  }
};

void GroupQueryAttentionKernel(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const auto& attrs = ctx.attrs();
  const int64_t N = attrs.GetInt("num_heads"), Nkv = attrs.GetInt("kv_num_heads");
  OF_CHECK(!ctx.has_input(kGqaQNorm) && !ctx.has_input(kGqaKNorm), kUnsupported, node,
           ": q_norm_weight / k_norm_weight (the per-head RMS norm prologue) are not supported");
  OF_CHECK(!ctx.has_input(kGqaKScale) && !ctx.has_input(kGqaVScale) && attrs.GetString("k_quant_type", "NONE") == "NONE" &&
               attrs.GetString("v_quant_type", "NONE") == "NONE",
           kUnsupported, node, ": a quantized KV cache (k_scale/v_scale, k_quant_type/v_quant_type) is not supported");
  OF_CHECK(attrs.GetInt("sliding_window_cache", 0) == 0, kUnsupported, node,
           ": sliding_window_cache (a window-sized cache) is not supported");
  const int64_t causal = attrs.GetInt("causal", 1), window = attrs.GetInt("local_window_size", -1);
  const int64_t qk_mode = attrs.GetInt("qk_output", 0);
  Require(causal == 0 || causal == 1, node, "causal must be 0 or 1");
  Require(causal == 1 || window == -1, node, "local_window_size must be -1 when causal is 0");
  Require(qk_mode >= 0 && qk_mode <= 2, node, "qk_output must be 0, 1 or 2");
  Require(N > 0 && Nkv > 0 && N % Nkv == 0, node, "num_heads must be a positive multiple of kv_num_heads");

  const Tensor query = AsFloat(ctx.input(kGqaQuery));
  Require(query.rank() == 3, node, "query must be [B, S, hidden], got " + ShapeToString(query.shape()));
  const bool packed = !ctx.has_input(kGqaKey);
  const int64_t B = query.dim(0), S = query.dim(1), parts = packed ? N + 2 * Nkv : N;
  Require(query.dim(2) % parts == 0, node, "query's hidden size is not a multiple of " + std::to_string(parts) + " heads");
  const int64_t H = query.dim(2) / parts;
  Tensor key, value;
  if (!packed) {
    key = AsFloat(ctx.input(kGqaKey));
    value = AsFloat(ctx.input(kGqaValue));
    Require(key.shape() == Shape({B, S, Nkv * H}) && value.shape() == key.shape(), node,
            "key " + ShapeToString(key.shape()) + " and value " + ShapeToString(value.shape()) + " must be [" +
                std::to_string(B) + ", " + std::to_string(S) + ", " + std::to_string(Nkv * H) + "]");
  }
  // The new rows of Q, K and V as views of [B, S, heads * H].
  const int64_t qrow = query.dim(2);
  const float* qd = query.data<float>();
  HeadView<const float> q_new{qd, S * qrow, H, qrow};
  HeadView<const float> k_new = packed ? HeadView<const float>{qd + N * H, S * qrow, H, qrow}
                                       : HeadView<const float>::Bsnh(key.data<float>(), S, Nkv, H);
  HeadView<const float> v_new = packed ? HeadView<const float>{qd + (N + Nkv) * H, S * qrow, H, qrow}
                                       : HeadView<const float>::Bsnh(value.data<float>(), S, Nkv, H);

  // Lengths: P past rows in the buffers, Tmax the batch's longest total, Tb = seqlens_k[b] + 1.
  Tensor past_k, past_v;
  int64_t P = 0;
  if (ctx.has_input(kGqaPastKey)) {
    past_k = AsFloat(ctx.input(kGqaPastKey));
    past_v = AsFloat(ctx.input(kGqaPastValue));
    Require(past_k.rank() == 4 && past_k.dim(0) == B && past_k.dim(1) == Nkv && past_k.dim(3) == H &&
                past_v.shape() == past_k.shape(),
            node, "past_key " + ShapeToString(past_k.shape()) + " and past_value " + ShapeToString(past_v.shape()) +
                      " must be [" + std::to_string(B) + ", " + std::to_string(Nkv) + ", past, " + std::to_string(H) + "]");
    P = past_k.dim(2);
  }
  const Tensor& total_t = ctx.input(kGqaTotalLength);
  Require(total_t.numel() == 1 && total_t.dtype() == DType::kInt32, node, "total_sequence_length must be one int32");
  const int64_t Tmax = total_t.data<int32_t>()[0];
  Require(P > 0 ? (Tmax == P + S || (Tmax <= P && Tmax >= S)) : Tmax == S, node,
          "total_sequence_length " + std::to_string(Tmax) + " must equal past (" + std::to_string(P) +
              ") + new (" + std::to_string(S) + ") rows, or be at most the past rows of a static cache");
  const bool first_prompt = S == Tmax;
  Require(first_prompt || S == 1 || B == 1, node, "a prompt continuing a cache (sequence > 1) needs batch 1");
  const int64_t capacity = std::max(Tmax, P);
  const Tensor& seqlens = ctx.input(kGqaSeqlensK);
  Require(seqlens.numel() == B && seqlens.dtype() == DType::kInt32, node, "seqlens_k must be int32 [batch]");
  std::vector<int64_t> total(static_cast<size_t>(B)), past_len(static_cast<size_t>(B));
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t t = seqlens.data<int32_t>()[b] + 1;
    Require(t >= 1 && t <= capacity, node,
            "seqlens_k[" + std::to_string(b) + "] = " + std::to_string(t - 1) + " is outside [0, " + std::to_string(capacity) + ")");
    Require(first_prompt || t >= S, node, "seqlens_k[" + std::to_string(b) + "] + 1 is shorter than the new rows");
    total[static_cast<size_t>(b)] = t;
    past_len[static_cast<size_t>(b)] = first_prompt || P == 0 ? 0 : t - S;
    longest = std::max(longest, t);
  }

  // Rotary on the new Q and K rows (copied into [B, S, heads, H] scratch).
  std::vector<float> q_rot, k_rot;
  if (attrs.GetInt("do_rotary", 0) != 0) {
    Require(ctx.has_input(kGqaCos) && ctx.has_input(kGqaSin), node, "do_rotary needs cos_cache and sin_cache");
    RotaryTable table;
    table.Read(ctx.input(kGqaCos), ctx.input(kGqaSin), H, node);
    const bool interleaved = attrs.GetInt("rotary_interleaved", 0) != 0;
    const Tensor* ids = ctx.has_input(kGqaPositionIds) ? &ctx.input(kGqaPositionIds) : nullptr;
    if (ids) Require(ids->numel() >= 1 && (first_prompt || ids->numel() >= B * S), node, "position_ids must be [batch, sequence]");
    // The first prompt counts from position_ids[0, 0] (or 0) for every row; later steps continue
    // each row's sequence (or read position_ids[b, s]).
    auto position = [&](int64_t b, int64_t s) -> int64_t {
      if (first_prompt) return (ids ? ids->data<int64_t>()[0] : 0) + s;
      return ids ? ids->data<int64_t>()[b * S + s] : total[static_cast<size_t>(b)] - S + s;
    };
    auto rotate = [&](const HeadView<const float>& src, int64_t heads, std::vector<float>& out) {
      out.resize(static_cast<size_t>(B * S * heads * H));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t pos = position(b, s);
          for (int64_t n = 0; n < heads; ++n) {
            float* dst = out.data() + ((b * S + s) * heads + n) * H;
            std::memcpy(dst, src.At(b, n, s), static_cast<size_t>(H) * sizeof(float));
            table.Rotate(dst, H, pos, interleaved, node);
          }
        }
      return HeadView<const float>::Bsnh(out.data(), S, heads, H);
    };
    q_new = rotate(q_new, N, q_rot);
    k_new = rotate(k_new, Nkv, k_rot);
  }

  // present = zeros, each row's past, then its new rows at [past_len[b], past_len[b] + S).
  std::unique_ptr<FloatOutput> present_k, present_v;
  std::vector<float> kc, vc;
  auto cache = [&](size_t out, const Tensor& past, const HeadView<const float>& fresh, std::unique_ptr<FloatOutput>& present,
                   std::vector<float>& scratch) {
    float* dst;
    if (ctx.has_output(out)) {
      Require(ctx.output(out).shape() == Shape({B, Nkv, capacity, H}), node, "present has an unexpected shape");
      present = std::make_unique<FloatOutput>(ctx.output(out));
      dst = present->data();
    } else {
      scratch.resize(static_cast<size_t>(B * Nkv * capacity * H));
      dst = scratch.data();
    }
    std::fill_n(dst, B * Nkv * capacity * H, 0.0f);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t keep = past_len[static_cast<size_t>(b)];
      for (int64_t n = 0; n < Nkv; ++n) {
        float* rows = dst + (b * Nkv + n) * capacity * H;
        if (keep) std::memcpy(rows, past.data<float>() + (b * Nkv + n) * P * H, static_cast<size_t>(keep * H) * sizeof(float));
        for (int64_t s = 0; s < S && keep + s < capacity; ++s)
          std::memcpy(rows + (keep + s) * H, fresh.At(b, n, s), static_cast<size_t>(H) * sizeof(float));
      }
    }
    return CacheView(dst, Nkv, capacity, H);
  };
  const HeadView<const float> k = cache(1, past_k, k_new, present_k, kc);
  const HeadView<const float> v = cache(2, past_v, v_new, present_v, vc);

  Tensor bias_f, sink_f;
  AttentionBias bias;
  if (ctx.has_input(kGqaAttentionBias)) {
    bias_f = AsFloat(ctx.input(kGqaAttentionBias));
    bias = AttentionBias::Read(bias_f, B, N, S, Tmax, node);
    Require(longest <= Tmax, node, "attention_bias covers " + std::to_string(Tmax) + " keys, but a row has " +
                                       std::to_string(longest));
  }
  std::vector<float> sinks;
  if (ctx.has_input(kGqaHeadSink)) {
    sink_f = AsFloat(ctx.input(kGqaHeadSink));
    Require(sink_f.numel() == N, node, "head_sink must have num_heads (" + std::to_string(N) + ") entries");
    sinks.assign(sink_f.data<float>(), sink_f.data<float>() + N);
  } else if (attrs.GetInt("smooth_softmax", 0) != 0) {
    sinks.assign(static_cast<size_t>(N), 0.0f);  // softmax with 1 (= exp(0 - 0)) more in the denominator
  }

  FloatOutput y(ctx.output(0));
  AttentionProblem<float> p;
  p.SetDims(B, N, Nkv, S, longest, H, H);  // no row sees a key past its total length
  p.q = q_new;
  p.k = k;
  p.v = v;
  p.y = HeadView<float>::Bsnh(y.data(), S, N, H);
  p.scale = ScaleAttr(ctx, H);
  p.softcap = std::max(0.0f, attrs.GetFloat("softcap", 0.0f));
  p.sinks = sinks.empty() ? nullptr : sinks.data();
  // Row s of batch b sees keys [lo, hi): causal up to its own position, never past the row's total
  // length, and with a window only the last `window` of those.
  // key_end below bounds each row; the bias adds the window's start and attention_bias, and shows the
  // whole frontier to the output_qk observer (which sees every key).
  if (window >= 0 || bias.data || ctx.has_output(3)) p.bias = [&](int64_t b, int64_t h, int64_t s, float* out) {
    const int64_t tb = total[static_cast<size_t>(b)];
    const int64_t hi = causal ? std::min(past_len[static_cast<size_t>(b)] + s + 1, tb) : tb;
    const int64_t lo = window >= 0 && hi > window ? hi - window : 0;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const float* brow = bias.data ? bias.Row(b, h, s) : nullptr;
    for (int64_t j = 0; j < longest; ++j) out[j] = j < lo || j >= hi ? neg_inf : (brow ? brow[j] : 0.0f);
  };
  p.key_end = [&](int64_t b, int64_t s) {
    const int64_t tb = total[static_cast<size_t>(b)];
    return causal ? std::min(past_len[static_cast<size_t>(b)] + s + 1, tb) : tb;
  };
  std::unique_ptr<FloatOutput> qk;
  if (ctx.has_output(3)) {
    Require(qk_mode != 0, node, "output_qk is requested but qk_output is 0");
    qk = std::make_unique<FloatOutput>(ctx.output(3));
    float* out = qk->data();
    std::fill_n(out, B * N * S * Tmax, 0.0f);
    const AttentionStage want = qk_mode == 1 ? AttentionStage::kBiased : AttentionStage::kProbs;
    // Hidden keys read 0, as onnxruntime's output_qk has them.
    p.observe = [out, want, S, N, Tmax, longest](AttentionStage stage, int64_t b, int64_t h, int64_t i, const float* row) {
      if (stage != want) return;
      float* dst = out + ((b * N + h) * S + i) * Tmax;
      for (int64_t j = 0; j < std::min(longest, Tmax); ++j) dst[j] = std::isinf(row[j]) && row[j] < 0 ? 0.0f : row[j];
    };
  }
  RunAttention(p, ctx.pool());
  y.Finish();
  if (present_k) present_k->Finish();
  if (present_v) present_v->Finish();
  if (qk) qk->Finish();
}
ONEFLOW_KERNEL(MsGroupQueryAttention, GroupQueryAttentionKernel);

// ---- RotaryEmbedding (com.microsoft) --------------------------------------------------------------

// input [B, S, N * H] or [B, N, S, H]; position_ids one start offset (positions offset + s) or
// [B, S]; caches [M, rot / 2 or H / 2]. num_heads 0 takes H from the caches (H = 2 * their width).
void ContribRotaryEmbeddingKernel(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const Tensor x = AsFloat(ctx.input(0));
  const Tensor& ids = ctx.input(1);
  const Tensor cos = AsFloat(ctx.input(2)), sin = AsFloat(ctx.input(3));
  Require((x.rank() == 3 || x.rank() == 4) && cos.rank() == 2 && cos.shape() == sin.shape(), node,
          "input must be 3-D or 4-D and cos_cache/sin_cache one [max_position, width] shape");
  const bool bnsh = x.rank() == 4;
  const int64_t B = x.dim(0), S = bnsh ? x.dim(2) : x.dim(1), width = cos.dim(1), M = cos.dim(0);
  int64_t N = ctx.attrs().GetInt("num_heads", 0), rot = ctx.attrs().GetInt("rotary_embedding_dim", 0);
  const int64_t hidden = bnsh ? x.dim(1) * x.dim(3) : x.dim(2);
  Require(rot == 0 || N > 0, node, "num_heads must be given with rotary_embedding_dim");
  if (bnsh) N = x.dim(1);
  const int64_t H = N > 0 ? hidden / N : 2 * width;
  if (N <= 0) N = H > 0 ? hidden / H : 0;
  Require(H > 0 && N > 0 && N * H == hidden, node, "the hidden size " + std::to_string(hidden) + " does not split into heads of " +
                                                       std::to_string(H));
  if (rot == 0) rot = H;
  Require(rot % 2 == 0 && rot <= H && (width == H / 2 || width == rot / 2), node,
          "rotary_embedding_dim " + std::to_string(rot) + " and the caches' width " + std::to_string(width) +
              " do not fit the head size " + std::to_string(H));
  std::vector<int64_t> pos(static_cast<size_t>(B * S));
  if (ids.numel() == 1) {
    const int64_t start = ids.data<int64_t>()[0];
    Require(start >= 0 && start + S <= M, node, "position_ids start " + std::to_string(start) + " with sequence length " +
                                                     std::to_string(S) + " exceeds the caches' " + std::to_string(M) + " rows");
    for (int64_t i = 0; i < B * S; ++i) pos[static_cast<size_t>(i)] = start + i % S;
  } else {
    Require(ids.shape() == Shape({B, S}), node, "position_ids must be [1] or [" + std::to_string(B) + ", " +
                                                    std::to_string(S) + "], got " + ShapeToString(ids.shape()));
    for (int64_t i = 0; i < B * S; ++i) {
      pos[static_cast<size_t>(i)] = ids.data<int64_t>()[i];
      Require(pos[static_cast<size_t>(i)] >= 0 && pos[static_cast<size_t>(i)] < M, node,
              "position id " + std::to_string(pos[static_cast<size_t>(i)]) + " is outside the caches' " + std::to_string(M) + " rows");
    }
  }
  const bool interleaved = ctx.attrs().GetInt("interleaved", 0) != 0;
  const HeadView<const float> in = bnsh ? HeadView<const float>::Bnsh(x.data<float>(), S, N, H)
                                        : HeadView<const float>::Bsnh(x.data<float>(), S, N, H);
  FloatOutput y(ctx.output(0));
  const HeadView<float> out = bnsh ? HeadView<float>::Bnsh(y.data(), S, N, H) : HeadView<float>::Bsnh(y.data(), S, N, H);
  ctx.pool().ParallelFor(B * S, static_cast<double>(N * H * 4), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / S, s = r % S, p = pos[static_cast<size_t>(r)];
      for (int64_t n = 0; n < N; ++n)
        RotateHead(in.At(b, n, s), out.At(b, n, s), H, rot, interleaved, cos.data<float>() + p * width,
                   sin.data<float>() + p * width);
    }
  });
  y.Finish();
}
ONEFLOW_KERNEL(MsRotaryEmbedding, ContribRotaryEmbeddingKernel);

// ---- EmbedLayerNormalization ----------------------------------------------------------------------

// One index input (int32 or int64) as int64 values, each checked against `rows`.
std::vector<int64_t> Ids(const Tensor& t, int64_t rows, const char* name, const std::string& node) {
  std::vector<int64_t> v = t.ToInt64Vector();
  for (size_t i = 0; i < v.size(); ++i)
    OF_REQUIRE(v[i] >= 0 && v[i] < rows, node, ": ", name, "[", i, "] = ", v[i], " is outside the table's ", rows, " rows");
  return v;
}

// out[b, s] = LayerNorm(word[ids] + position[pid] + segment[sid]) * gamma + beta over the hidden
// axis; embedding_sum is the sum before normalizing; mask_index counts each row's mask entries
// equal to 1 (what onnxruntime reports).
void EmbedLayerNormalizationKernel(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const Tensor& ids_t = ctx.input(0);
  const Tensor word = AsFloat(ctx.input(2)), position = AsFloat(ctx.input(3)), gamma = AsFloat(ctx.input(5)),
               beta = AsFloat(ctx.input(6));
  Require(ids_t.rank() == 2 && word.rank() == 2 && position.rank() == 2, node,
          "input_ids must be [B, S] and the embeddings [rows, hidden]");
  const int64_t B = ids_t.dim(0), S = ids_t.dim(1), hidden = word.dim(1);
  Require(position.dim(1) == hidden && gamma.numel() == hidden && beta.numel() == hidden, node,
          "position_embedding, gamma and beta must have the word embedding's hidden size " + std::to_string(hidden));
  const std::vector<int64_t> ids = Ids(ids_t, word.dim(0), "input_ids", node);
  Tensor segment;
  std::vector<int64_t> seg;
  if (ctx.has_input(1)) {
    segment = AsFloat(ctx.input(4));
    Require(ctx.input(1).shape() == ids_t.shape() && segment.rank() == 2 && segment.dim(1) == hidden, node,
            "segment_ids must be [B, S] and segment_embedding [rows, hidden]");
    seg = Ids(ctx.input(1), segment.dim(0), "segment_ids", node);
  }
  std::vector<int64_t> pid(static_cast<size_t>(B * S));
  if (ctx.has_input(8)) {
    const Tensor& p = ctx.input(8);
    Require(p.rank() == 2 && (p.dim(0) == 1 || p.dim(0) == B) && p.dim(1) == S, node,
            "position_ids must be [1, S] or [B, S], got " + ShapeToString(p.shape()));
    const std::vector<int64_t> v = Ids(p, position.dim(0), "position_ids", node);
    for (int64_t i = 0; i < B * S; ++i) pid[static_cast<size_t>(i)] = v[static_cast<size_t>(p.dim(0) == 1 ? i % S : i)];
  } else {
    Require(S <= position.dim(0), node, "the sequence (" + std::to_string(S) + ") is longer than position_embedding's " +
                                            std::to_string(position.dim(0)) + " rows");
    for (int64_t i = 0; i < B * S; ++i) pid[static_cast<size_t>(i)] = i % S;
  }
  const float eps = ctx.attrs().GetFloat("epsilon", 1e-12f);
  FloatOutput out(ctx.output(0));
  std::unique_ptr<FloatOutput> sum_out;
  if (ctx.has_output(2)) sum_out = std::make_unique<FloatOutput>(ctx.output(2));
  ctx.pool().ParallelFor(B * S, static_cast<double>(hidden * 6), [&](int64_t r0, int64_t r1) {
    std::vector<float> e(static_cast<size_t>(hidden));
    for (int64_t r = r0; r < r1; ++r) {
      const float* w = word.data<float>() + ids[static_cast<size_t>(r)] * hidden;
      const float* p = position.data<float>() + pid[static_cast<size_t>(r)] * hidden;
      const float* sg = seg.empty() ? nullptr : segment.data<float>() + seg[static_cast<size_t>(r)] * hidden;
      double mean = 0;
      for (int64_t c = 0; c < hidden; ++c) {
        e[static_cast<size_t>(c)] = w[c] + p[c] + (sg ? sg[c] : 0.0f);
        mean += e[static_cast<size_t>(c)];
      }
      mean /= static_cast<double>(hidden);
      double var = 0;
      for (int64_t c = 0; c < hidden; ++c) var += (e[static_cast<size_t>(c)] - mean) * (e[static_cast<size_t>(c)] - mean);
      const float inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(hidden) + eps));
      float* o = out.data() + r * hidden;
      for (int64_t c = 0; c < hidden; ++c)
        o[c] = (e[static_cast<size_t>(c)] - static_cast<float>(mean)) * inv * gamma.data<float>()[c] + beta.data<float>()[c];
      if (sum_out) std::copy(e.begin(), e.end(), sum_out->data() + r * hidden);
    }
  });
  out.Finish();
  if (sum_out) sum_out->Finish();
  if (ctx.has_output(1)) {
    int32_t* mask_index = ctx.output(1).data<int32_t>();
    std::fill_n(mask_index, B, 0);
    if (ctx.has_input(7)) {
      const Tensor& m = ctx.input(7);
      Require(m.shape() == ids_t.shape(), node, "mask must be [B, S] like input_ids");
      const std::vector<int64_t> v = m.ToInt64Vector();
      for (int64_t i = 0; i < B * S; ++i) mask_index[i / S] += v[static_cast<size_t>(i)] == 1 ? 1 : 0;
    }
  }
}
ONEFLOW_KERNEL(MsEmbedLayerNormalization, EmbedLayerNormalizationKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
