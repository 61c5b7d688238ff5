// CPU kernels: ONNX Attention (opsets 23-25), RotaryEmbedding (23) and TensorScatter (24)
// (graph/ops/attention.cc).
//
// Attention computes in f32 (f64 for f64 data; f16/bf16 widen to f32) through the shared core
// (attention_core.h): scores = scale * q K^T, softcapped (softcap * tanh(s / softcap)), plus the bias that
//   attn_mask (boolean: 0 / -inf; else added as is; a short last dim padded with -inf), the
//   causal frontier (key j <= i + offset), the sliding window (opset 25) and nonpad_kv_seqlen
//   (key j < n[b]) make, softmax, times V. offset is the past length (past_key given), else
//   nonpad_kv_seqlen[b] - q_seq (opset 24's external cache), else 0. A row whose bias masks every
//   key yields zeros (not NaN), in Y and in the mode-3 probabilities alike.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/dtype.h"
#include "kernels/cpu/attention_core.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

enum : size_t { kQ = 0, kK = 1, kV = 2, kMask = 3, kPastKey = 4, kPastValue = 5, kNonpad = 6 };

// [B, S, heads * d] -> [B, heads, S, d] (3-D inputs), or a copy of a 4-D [B, heads, S, d].
template <typename C>
std::vector<C> HeadsFirst(const Tensor& t, int64_t heads) {
  std::vector<C> v = LoadCompute<C>(t);
  if (t.rank() == 4) return v;
  const int64_t B = t.dim(0), S = t.dim(1), d = t.dim(2) / heads;
  std::vector<C> out(v.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t h = 0; h < heads; ++h)
        std::copy_n(v.data() + ((b * S + s) * heads + h) * d, d, out.data() + ((b * heads + h) * S + s) * d);
  return out;
}

// The attention mask broadcast to [B, Hq, Sq, total] on the fly: right-aligned strides (0 where
// the mask's dim is 1), keys past its last dim masked.
struct MaskView {
  std::vector<float> bias;  // the mask as an additive bias (boolean: 0 / -inf)
  int64_t stride[4] = {0, 0, 0, 0};
  int64_t keys = 0;  // the mask's last dim
  bool present = false;

  float At(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (!present) return 0.0f;
    if (j >= keys) return -std::numeric_limits<float>::infinity();
    return bias[static_cast<size_t>(b * stride[0] + h * stride[1] + i * stride[2] + j * stride[3])];
  }
};

MaskView ReadMask(const Tensor& m, int64_t B, int64_t H, int64_t Sq, const std::string& node) {
  MaskView v;
  v.present = true;
  OF_REQUIRE(m.rank() >= 1 && m.rank() <= 4, node, ": attn_mask must have rank 1 to 4, got ", ShapeToString(m.shape()));
  const int64_t want[4] = {B, H, Sq, -1};
  int64_t dims[4] = {1, 1, 1, 1};
  for (int64_t i = 0; i < m.rank(); ++i) dims[4 - m.rank() + i] = m.dim(i);
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    OF_REQUIRE(i == 3 || dims[i] == 1 || dims[i] == want[i], node, ": attn_mask ", ShapeToString(m.shape()),
               " does not broadcast to [", B, ", ", H, ", ", Sq, ", total]");
    v.stride[i] = dims[i] == 1 && i != 3 ? 0 : stride;
    stride *= dims[i];
  }
  v.keys = dims[3];
  v.bias.resize(static_cast<size_t>(m.numel()));
  const bool boolean = m.dtype() == DType::kBool;
  for (int64_t i = 0; i < m.numel(); ++i)
    v.bias[static_cast<size_t>(i)] = boolean ? (m.data<bool>()[i] ? 0.0f : -std::numeric_limits<float>::infinity())
                                             : static_cast<float>(m.GetAsDouble(i));
  return v;
}

template <typename C>
void AttentionCompute(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const Tensor& q0 = ctx.input(kQ);
  const Tensor& k0 = ctx.input(kK);
  const Tensor& v0 = ctx.input(kV);
  const bool three_d = q0.rank() == 3;
  OF_REQUIRE((q0.rank() == 3 || q0.rank() == 4) && k0.rank() == q0.rank() && v0.rank() == q0.rank(), node,
             ": Q, K and V must all be 3-D or all 4-D, got ", ShapeToString(q0.shape()), ", ", ShapeToString(k0.shape()),
             ", ", ShapeToString(v0.shape()));
  const int64_t Hq = three_d ? ctx.attrs().GetInt("q_num_heads", 0) : q0.dim(1);
  const int64_t Hkv = three_d ? ctx.attrs().GetInt("kv_num_heads", 0) : k0.dim(1);
  OF_REQUIRE(Hq > 0 && Hkv > 0 && Hq % Hkv == 0 && (three_d || v0.dim(1) == Hkv), node, ": ", Hq,
             " query heads cannot share ", Hkv, " key/value heads");
  const int64_t B = q0.dim(0);
  const int64_t Sq = three_d ? q0.dim(1) : q0.dim(2);
  const int64_t Skv = three_d ? k0.dim(1) : k0.dim(2);
  OF_REQUIRE(!three_d || (q0.dim(2) % Hq == 0 && k0.dim(2) % Hkv == 0 && v0.dim(2) % Hkv == 0), node,
             ": hidden sizes are not multiples of the head counts");
  const int64_t D = three_d ? q0.dim(2) / Hq : q0.dim(3);
  const int64_t Dk = three_d ? k0.dim(2) / Hkv : k0.dim(3);
  const int64_t Dv = three_d ? v0.dim(2) / Hkv : v0.dim(3);
  OF_REQUIRE(Dk == D, node, ": Q's head size ", D, " differs from K's ", Dk);
  OF_REQUIRE(k0.dim(0) == B && v0.dim(0) == B && (three_d ? v0.dim(1) : v0.dim(2)) == Skv, node,
             ": K and V must share Q's batch and one sequence length");
  const std::vector<C> q = HeadsFirst<C>(q0, Hq);
  std::vector<C> k = HeadsFirst<C>(k0, Hkv);
  std::vector<C> v = HeadsFirst<C>(v0, Hkv);

  // The cache: present = past ++ new along the sequence.
  int64_t past = 0;
  if (ctx.has_input(kPastKey)) {
    const Tensor& pk = ctx.input(kPastKey);
    const Tensor& pv = ctx.input(kPastValue);
    OF_REQUIRE(pk.rank() == 4 && pv.rank() == 4 && pk.dim(0) == B && pk.dim(1) == Hkv && pk.dim(3) == D &&
                   pv.dim(0) == B && pv.dim(1) == Hkv && pv.dim(2) == pk.dim(2) && pv.dim(3) == Dv,
               node, ": past_key ", ShapeToString(pk.shape()), " / past_value ", ShapeToString(pv.shape()),
               " must be [", B, ", ", Hkv, ", past, ", D, "] / [", B, ", ", Hkv, ", past, ", Dv, "]");
    past = pk.dim(2);
    const std::vector<C> pkv = LoadCompute<C>(pk), pvv = LoadCompute<C>(pv);
    auto concat = [&](const std::vector<C>& p, const std::vector<C>& n, int64_t d) {
      std::vector<C> out(static_cast<size_t>(B * Hkv * (past + Skv) * d));
      for (int64_t bh = 0; bh < B * Hkv; ++bh) {
        std::copy_n(p.data() + bh * past * d, past * d, out.data() + bh * (past + Skv) * d);
        std::copy_n(n.data() + bh * Skv * d, Skv * d, out.data() + (bh * (past + Skv) + past) * d);
      }
      return out;
    };
    k = concat(pkv, k, D);
    v = concat(pvv, v, Dv);
  }
  const int64_t T = past + Skv;
  if (ctx.has_output(1)) StoreCompute(k, ctx.output(1));
  if (ctx.has_output(2)) StoreCompute(v, ctx.output(2));

  std::vector<int64_t> nonpad;
  if (ctx.num_inputs() > kNonpad && ctx.has_input(kNonpad)) {
    const Tensor& n = ctx.input(kNonpad);
    OF_REQUIRE(n.numel() == B, node, ": nonpad_kv_seqlen has ", n.numel(), " entries for a batch of ", B);
    nonpad = n.ToInt64Vector();
    for (int64_t len : nonpad)
      OF_REQUIRE(len >= 0 && len <= T, node, ": nonpad_kv_seqlen ", len, " is outside [0, ", T, "]");
  }
  const MaskView mask = ctx.has_input(kMask) ? ReadMask(ctx.input(kMask), B, Hq, Sq, node) : MaskView{};
  const bool causal = ctx.attrs().GetInt("is_causal", 0) != 0;
  const int64_t left = ctx.attrs().GetInt("left_window_size", -1), right = ctx.attrs().GetInt("right_window_size", -1);
  const int64_t mode = ctx.attrs().GetInt("qk_matmul_output_mode", 0);
  const C neg_inf = -std::numeric_limits<C>::infinity();

  std::vector<C> y(static_cast<size_t>(B * Hq * Sq * Dv));
  std::vector<C> qk(ctx.has_output(3) ? static_cast<size_t>(B * Hq * Sq * T) : 0);
  AttentionProblem<C> p;
  p.SetDims(B, Hq, Hkv, Sq, T, D, Dv);
  p.q = HeadView<const C>::Bnsh(q.data(), Sq, Hq, D);
  p.k = HeadView<const C>::Bnsh(k.data(), T, Hkv, D);
  p.v = HeadView<const C>::Bnsh(v.data(), T, Hkv, Dv);
  // A 3-D output is [B, Sq, Hq * Dv]: the core writes it in place.
  p.y = three_d ? HeadView<C>::Bsnh(y.data(), Sq, Hq, Dv) : HeadView<C>::Bnsh(y.data(), Sq, Hq, Dv);
  p.scale = static_cast<C>(ctx.attrs().GetFloat("scale", 1.0f / std::sqrt(static_cast<float>(D))));
  p.softcap = static_cast<C>(std::max(0.0f, ctx.attrs().GetFloat("softcap", 0.0f)));
  // The causal, right-window and nonpad frontiers are key_end below; a bias row is needed for the
  // mask, for the left window, and for the scores an observer is shown.
  if (mask.present || left >= 0 || (ctx.has_output(3) && (causal || right >= 0 || !nonpad.empty()))) {
    p.bias = [&](int64_t b, int64_t h, int64_t i, C* bias) {
      const int64_t offset = !nonpad.empty() ? nonpad[static_cast<size_t>(b)] - Sq : past;
      const int64_t pos = offset + i;  // the query's absolute position
      for (int64_t j = 0; j < T; ++j) {
        C bj = static_cast<C>(mask.At(b, h, i, j));
        if (causal && j > pos) bj = neg_inf;
        // As differences of positions: pos + right would overflow for a window size near INT64_MAX.
        if (left >= 0 && pos - j > left) bj = neg_inf;
        if (right >= 0 && j - pos > right) bj = neg_inf;
        if (!nonpad.empty() && j >= nonpad[static_cast<size_t>(b)]) bj = neg_inf;
        bias[j] = bj;
      }
    };
  }
  if (causal || right >= 0 || !nonpad.empty()) {
    // The same frontier as a bound the core need not compute past.
    p.key_end = [&](int64_t b, int64_t i) {
      const int64_t pos = (!nonpad.empty() ? nonpad[static_cast<size_t>(b)] - Sq : past) + i;
      int64_t end = T;
      if (causal) end = std::min(end, pos + 1);
      if (right >= 0 && right < T) end = std::min(end, pos + right + 1);
      if (!nonpad.empty()) end = std::min(end, nonpad[static_cast<size_t>(b)]);
      return end;
    };
  }
  if (!qk.empty()) {
    // Mode 0/1: the scaled (softcapped) scores; 2: plus the mask; 3: the probabilities.
    const AttentionStage want = mode <= 1 ? AttentionStage::kScaled : mode == 2 ? AttentionStage::kBiased
                                                                                : AttentionStage::kProbs;
    // `want` by value: it ends with this block, the observer runs after it.
    p.observe = [&, want](AttentionStage stage, int64_t b, int64_t h, int64_t i, const C* row) {
      if (stage == want) std::copy_n(row, T, qk.data() + ((b * Hq + h) * Sq + i) * T);
    };
  }
  RunAttention(p, ctx.pool());
  if (ctx.has_output(3)) StoreCompute(qk, ctx.output(3));
  StoreCompute(y, ctx.output(0));
}

void AttentionKernel(KernelContext& ctx) {
  if (ctx.input(kQ).dtype() == DType::kFloat64) AttentionCompute<double>(ctx);
  else AttentionCompute<float>(ctx);
}
ONEFLOW_KERNEL(Attention, AttentionKernel);

// RotaryEmbedding: per (batch, position, head), the first rotary_embedding_dim values of the head
// rotate in pairs (x1, x2) by the cached angle: (cos x1 - sin x2, sin x1 + cos x2). Pairs are the
// two halves of that span, or neighbours with `interleaved`; the rest of the head passes through.
template <typename C>
void RotaryCompute(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const Tensor& x0 = ctx.input(0);
  const bool three_d = x0.rank() == 3;
  OF_REQUIRE(x0.rank() == 3 || x0.rank() == 4, node, ": X must be 3-D or 4-D, got ", ShapeToString(x0.shape()));
  const int64_t B = x0.dim(0);
  const int64_t S = three_d ? x0.dim(1) : x0.dim(2);
  const int64_t H = three_d ? ctx.attrs().GetInt("num_heads", 0) : x0.dim(1);
  OF_REQUIRE(H > 0 && (!three_d || x0.dim(2) % H == 0), node, ": num_heads ", H, " does not divide X ",
             ShapeToString(x0.shape()));
  const int64_t D = three_d ? x0.dim(2) / H : x0.dim(3);
  int64_t rot = ctx.attrs().GetInt("rotary_embedding_dim", 0);
  if (rot == 0) rot = D;
  OF_REQUIRE(rot > 0 && rot <= D && rot % 2 == 0, node, ": rotary_embedding_dim ", rot,
             " must be even and at most the head size ", D);
  const int64_t half = rot / 2;
  const bool interleaved = ctx.attrs().GetInt("interleaved", 0) != 0;
  const Tensor& cos_t = ctx.input(1);
  const Tensor& sin_t = ctx.input(2);
  OF_REQUIRE(cos_t.shape() == sin_t.shape() && cos_t.rank() >= 1 && cos_t.shape().back() == half, node,
             ": cos_cache ", ShapeToString(cos_t.shape()), " and sin_cache ", ShapeToString(sin_t.shape()),
             " must share one shape ending in rotary_embedding_dim / 2 = ", half);
  std::vector<int64_t> positions;
  if (ctx.has_input(3)) {
    const Tensor& p = ctx.input(3);
    OF_REQUIRE(p.numel() == B * S, node, ": position_ids ", ShapeToString(p.shape()), " must be [", B, ", ", S, "]");
    OF_REQUIRE(cos_t.rank() == 2, node, ": with position_ids the caches are [max_position, ", half, "], got ",
               ShapeToString(cos_t.shape()));
    positions = p.ToInt64Vector();
    for (int64_t pos : positions)
      OF_REQUIRE(pos >= 0 && pos < cos_t.dim(0), node, ": position id ", pos, " is outside the cache's ",
                 cos_t.dim(0), " positions");
  } else {
    OF_REQUIRE(cos_t.rank() == 3 && cos_t.dim(0) == B && cos_t.dim(1) == S, node,
               ": without position_ids the caches are [", B, ", ", S, ", ", half, "], got ", ShapeToString(cos_t.shape()));
  }
  const std::vector<C> x = LoadCompute<C>(x0), cs = LoadCompute<C>(cos_t), sn = LoadCompute<C>(sin_t);
  std::vector<C> y(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t off = three_d ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D;
        const int64_t row = positions.empty() ? b * S + s : positions[static_cast<size_t>(b * S + s)];
        RotateHead(x.data() + off, y.data() + off, D, rot, interleaved, cs.data() + row * half, sn.data() + row * half);
      }
  StoreCompute(y, ctx.output(0));
}

void RotaryEmbeddingKernel(KernelContext& ctx) {
  if (ctx.input(0).dtype() == DType::kFloat64) RotaryCompute<double>(ctx);
  else RotaryCompute<float>(ctx);
}
ONEFLOW_KERNEL(RotaryEmbedding, RotaryEmbeddingKernel);

// TensorScatter: present = past; present[b, .., (w[b] + s) (mod max_seq), ..] = update[b, .., s, ..].
void TensorScatterKernel(KernelContext& ctx) {
  const std::string& node = ctx.node_desc();
  const Tensor& past = ctx.input(0);
  const Tensor& update = ctx.input(1);
  Tensor& present = ctx.output(0);
  const int64_t rank = past.rank();
  int64_t axis = ctx.attrs().GetInt("axis", -2);
  if (axis < 0) axis += rank;
  OF_REQUIRE(update.rank() == rank && axis > 0 && axis < rank, node, ": axis ", axis, " / shapes ",
             ShapeToString(past.shape()), ", ", ShapeToString(update.shape()), " do not fit");
  for (int64_t d = 0; d < rank; ++d)
    OF_REQUIRE(d == axis ? update.dim(d) <= past.dim(d) : update.dim(d) == past.dim(d), node, ": update ",
               ShapeToString(update.shape()), " does not fit past_cache ", ShapeToString(past.shape()), " at dim ", d);
  const bool circular = ctx.attrs().GetString("mode", "linear") == "circular";
  const int64_t B = past.dim(0), max_seq = past.dim(axis), seq = update.dim(axis);
  std::vector<int64_t> write(static_cast<size_t>(B), 0);
  if (ctx.has_input(2)) {
    OF_REQUIRE(ctx.input(2).numel() == B, node, ": write_indices has ", ctx.input(2).numel(), " entries for ", B,
               " batch rows");
    write = ctx.input(2).ToInt64Vector();
  }
  for (int64_t b = 0; b < B; ++b)
    OF_REQUIRE(write[static_cast<size_t>(b)] >= 0 && (circular ? write[static_cast<size_t>(b)] < max_seq
                                                               : write[static_cast<size_t>(b)] + seq <= max_seq),
               node, ": write index ", write[static_cast<size_t>(b)], " of batch row ", b, " puts ", seq,
               " steps outside the cache's ", max_seq);
  const size_t elem = DTypeSize(past.dtype());
  if (past.nbytes()) std::memcpy(present.raw(), past.raw(), past.nbytes());
  // [B, outer, seq, inner] views: outer = dims between batch and axis, inner = dims after axis.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 1; d < axis; ++d) outer *= past.dim(d);
  for (int64_t d = axis + 1; d < rank; ++d) inner *= past.dim(d);
  const char* src = static_cast<const char*>(update.raw());
  char* dst = static_cast<char*>(present.raw());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t s = 0; s < seq; ++s) {
        int64_t pos = write[static_cast<size_t>(b)] + s;
        if (circular) pos %= max_seq;
        std::memcpy(dst + (((b * outer + o) * max_seq + pos) * inner) * elem,
                    src + (((b * outer + o) * seq + s) * inner) * elem, static_cast<size_t>(inner) * elem);
      }
}
ONEFLOW_KERNEL(TensorScatter, TensorScatterKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
