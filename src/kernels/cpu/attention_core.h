// The arithmetic every attention op of ours shares: ONNX Attention and RotaryEmbedding
// (onnx_attention.cc) and ONNX Runtime's Attention, QAttention, MultiHeadAttention,
// GroupQueryAttention and RotaryEmbedding (contrib_attention.cc). Each op lays out its Q, K and V
// (any strides, the head dim contiguous), says which bias each score gets, and the core computes
// per batch b, query head h and query row i, with g = h / (q_heads / kv_heads) its key/value head:
//   s_j = scale * q_i . k_j                       (j over the kv_len keys of (b, g))
//   s_j = softcap * tanh(s_j / softcap)           (softcap > 0)
//   s_j += bias(b, h, i, j)                       (-inf: key j takes no part)
//   p   = softmax(s), the denominator plus exp(sink_h - max) where sinks are given
//   y_i = p V
// A row whose every key is masked yields zeros (not NaN). Query rows go through the GEMM in blocks
// sized so a block's scores stay in L2 (Sgemm for f32, the reference GEMM for f64), parallel over
// (batch, head, row block); exp is fastmath's vectorized form.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/tensor.h"
#include "base/thread_pool.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// Element (b, h, r, c) of a [batch, heads, rows, dim] tensor at data + b*batch + h*head + r*row + c:
// BSNH ([B, S, heads * dim]) and BNSH ([B, heads, S, dim]) are both views.
template <typename T>
struct HeadView {
  T* data = nullptr;
  int64_t batch = 0, head = 0, row = 0;
  T* At(int64_t b, int64_t h, int64_t r) const { return data + b * batch + h * head + r * row; }
  // The views of a contiguous [B, S, heads * dim] and [B, heads, S, dim] tensor.
  static HeadView Bsnh(T* d, int64_t seq, int64_t heads, int64_t dim) { return {d, seq * heads * dim, dim, heads * dim}; }
  static HeadView Bnsh(T* d, int64_t seq, int64_t heads, int64_t dim) { return {d, heads * seq * dim, seq * dim, dim}; }
};

// What a row observer is shown: the scores after scale (and softcap), after the bias, and the
// probabilities.
enum class AttentionStage { kScaled, kBiased, kProbs };

template <typename C>
struct AttentionProblem {
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_size = 0, v_head_size = 0;
  void SetDims(int64_t b, int64_t qh, int64_t kvh, int64_t ql, int64_t kvl, int64_t hs, int64_t vhs) {
    batch = b, q_heads = qh, kv_heads = kvh, q_len = ql, kv_len = kvl, head_size = hs, v_head_size = vhs;
  }
  HeadView<const C> q, k, v;
  HeadView<C> y;
  C scale = 1, softcap = 0;
  const C* sinks = nullptr;  // [q_heads] or null
  // Adds row i of (b, h)'s bias into bias[0, kv_len) (zeros on entry; -inf masks a key). May be empty.
  std::function<void(int64_t b, int64_t h, int64_t i, C* bias)> bias;
  // Where given, keys at or past key_end(b, i) are masked for query row i of batch b, for every
  // head (a causal frontier, a row's length): the core then does not compute them at all. Ignored
  // while an observer is set (it is shown every score).
  std::function<int64_t(int64_t b, int64_t i)> key_end;
  // Shown each row at each stage (for the ops that return scores or probabilities). May be empty.
  std::function<void(AttentionStage stage, int64_t b, int64_t h, int64_t i, const C* row)> observe;
};

// A float tensor's values in the compute type C (f16/bf16 widened), and back.
template <typename C>
std::vector<C> LoadCompute(const Tensor& t);
template <typename C>
void StoreCompute(const std::vector<C>& v, Tensor& out);

template <typename C>
void RunAttention(const AttentionProblem<C>& p, ThreadPool& pool);

// Rotary position embedding of one head row x[0, dim) into y (y may be x): the first `rot` values
// rotate in pairs (x_a, x_e) by the angle whose cos/sin are cos[j], sin[j], j < rot / 2:
// (cos x_a - sin x_e, sin x_a + cos x_e); pairs are the two halves of the span, or neighbours
// when interleaved. The rest of the head is copied.
template <typename C>
void RotateHead(const C* x, C* y, int64_t dim, int64_t rot, bool interleaved, const C* cos, const C* sin);

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
