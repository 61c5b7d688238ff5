// kernels/cpu/attention_core.h: the shared scaled-dot-product attention and rotary embedding.
#include "kernels/cpu/attention_core.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/dtype.h"
#include "base/fast_math.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// Query rows per GEMM block: as many as keep the block's scores (rows x keys) in L2, within bounds.
int64_t RowBlock(int64_t q_len, int64_t kv_len) {
  constexpr int64_t kScoreBudget = 128 * 1024;  // scores per block (512 KiB of f32)
  return std::max<int64_t>(1, std::min(q_len, std::clamp<int64_t>(kScoreBudget / std::max<int64_t>(kv_len, 1), 8, 256)));
}

// s[j] = exp(s[j] - mx) (0 for a masked -inf), returning their sum. A function of its own so that
// Exp inlines into a small loop GCC vectorizes (inside the task's lambda it stayed a scalar call).
template <typename C>
C ExpShifted(C* s, int64_t n, C mx) {
  const C neg_inf = -std::numeric_limits<C>::infinity();
  // Both sides computed, then selected: a branch around Exp would keep the loop scalar.
  for (int64_t j = 0; j < n; ++j) {
    const C x = s[j], e = fastmath::Exp(x - mx);
    s[j] = x == neg_inf ? C(0) : e;
  }
  return LaneSum<C>(n, [s](int64_t j) { return s[j]; });
}

// C[M, N] = alpha * A op(B), row-major with leading dims, this thread only.
void BlockGemm(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B, int64_t ldb,
               bool transB, float* C, int64_t ldc) {
  Sgemm(M, N, K, alpha, GemmOperand::Raw(A, lda), GemmOperand::Raw(B, ldb, transB), 0.0f, C, ldc, nullptr, nullptr);
}
void BlockGemm(int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda, const double* B,
               int64_t ldb, bool transB, double* C, int64_t ldc) {
  ReferenceGemm<double>(M, N, K, alpha, A, lda, false, B, ldb, transB, 0.0, C, ldc);
}

}  // namespace

// A float tensor's values in the compute type C.
template <typename C>
std::vector<C> LoadCompute(const Tensor& t) {
  std::vector<C> out(static_cast<size_t>(t.numel()));
  if constexpr (std::is_same_v<C, float>) {
    if (t.dtype() == DType::kFloat32) {
      std::copy_n(t.data<float>(), t.numel(), out.data());
      return out;
    }
    if (IsHalfDType(t.dtype())) {
      const Tensor f = WidenToFloat(t);
      std::copy_n(f.data<float>(), t.numel(), out.data());
      return out;
    }
  }
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = static_cast<C>(t.GetAsDouble(i));
  return out;
}

// Writes `v` (the compute type) into the float tensor `out`.
template <typename C>
void StoreCompute(const std::vector<C>& v, Tensor& out) {
  if constexpr (std::is_same_v<C, float>) {
    if (out.dtype() == DType::kFloat32) {
      std::copy_n(v.data(), out.numel(), out.data<float>());
      return;
    }
    Tensor f = Tensor::Uninitialized(DType::kFloat32, out.shape());
    std::copy_n(v.data(), out.numel(), f.data<float>());
    if (IsHalfDType(out.dtype())) {
      NarrowFromFloat(f, out);
      return;
    }
  }
  DispatchFloating(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = CastFromDouble<T>(static_cast<double>(v[static_cast<size_t>(i)]));
  });
}

template <typename C>
void RunAttention(const AttentionProblem<C>& p, ThreadPool& pool) {
  const int64_t T = p.kv_len, D = p.head_size, Dv = p.v_head_size;
  const bool limited = p.key_end && !p.observe;
  // With a frontier, shorter blocks skip more of the masked triangle.
  const int64_t rows_per_block = std::min<int64_t>(RowBlock(p.q_len, T), limited ? 64 : 256);
  const int64_t blocks = (p.q_len + rows_per_block - 1) / rows_per_block;
  const int64_t group = p.q_heads / p.kv_heads;
  const C neg_inf = -std::numeric_limits<C>::infinity();
  const double cost = static_cast<double>(rows_per_block * T * (D + Dv + 12));
  pool.ParallelFor(p.batch * p.q_heads * blocks, cost, [&](int64_t begin, int64_t end) {
    std::vector<C> scores(static_cast<size_t>(rows_per_block * T)), bias(static_cast<size_t>(T));
    std::vector<int64_t> row_end(static_cast<size_t>(rows_per_block), T);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t blk = task % blocks, h = (task / blocks) % p.q_heads, b = task / (blocks * p.q_heads);
      const int64_t i0 = blk * rows_per_block, rows = std::min(rows_per_block, p.q_len - i0);
      const int64_t g = h / group;
      C* y0 = p.y.At(b, h, i0);
      // The keys this block computes: all, or up to its rows' furthest frontier.
      int64_t keys = T;
      if (limited) {
        keys = 0;
        for (int64_t r = 0; r < rows; ++r) {
          row_end[static_cast<size_t>(r)] = std::clamp<int64_t>(p.key_end(b, i0 + r), 0, T);
          keys = std::max(keys, row_end[static_cast<size_t>(r)]);
        }
      }
      if (keys == 0) {  // no keys at all: every row is masked
        for (int64_t r = 0; r < rows; ++r) std::fill_n(y0 + r * p.y.row, Dv, C(0));
        continue;
      }
      BlockGemm(rows, keys, D, p.scale, p.q.At(b, h, i0), p.q.row, p.k.At(b, g, 0), p.k.row, true, scores.data(), keys);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r;
        C* s = scores.data() + r * keys;
        if (p.softcap > 0)
          for (int64_t j = 0; j < keys; ++j) s[j] = p.softcap * std::tanh(s[j] / p.softcap);
        if (p.observe) p.observe(AttentionStage::kScaled, b, h, i, s);
        if (p.bias) {
          std::fill_n(bias.data(), T, C(0));
          p.bias(b, h, i, bias.data());
          const C* bj = bias.data();
          // A masked key stays -inf even where its score is +inf (no NaN from inf - inf).
          for (int64_t j = 0; j < keys; ++j) s[j] = bj[j] == neg_inf ? neg_inf : s[j] + bj[j];
        }
        if (limited)
          for (int64_t j = row_end[static_cast<size_t>(r)]; j < keys; ++j) s[j] = neg_inf;
        if (p.observe) p.observe(AttentionStage::kBiased, b, h, i, s);
        C mx = LaneMax(s, keys);
        if (mx == neg_inf) {  // every key masked: a zero row
          std::fill_n(s, keys, C(0));
        } else {
          const C sink = p.sinks ? p.sinks[h] : neg_inf;
          if (p.sinks) mx = std::max(mx, sink);
          const C sum = ExpShifted(s, keys, mx) + (p.sinks ? fastmath::Exp(sink - mx) : C(0));
          const C inv = C(1) / sum;
          for (int64_t j = 0; j < keys; ++j) s[j] *= inv;
        }
        if (p.observe) p.observe(AttentionStage::kProbs, b, h, i, s);
      }
      BlockGemm(rows, Dv, keys, C(1), scores.data(), keys, p.v.At(b, g, 0), p.v.row, false, y0, p.y.row);
    }
  });
}

template <typename C>
void RotateHead(const C* x, C* y, int64_t dim, int64_t rot, bool interleaved, const C* cos, const C* sin) {
  const int64_t half = rot / 2;
  for (int64_t j = 0; j < half; ++j) {
    const int64_t a = interleaved ? 2 * j : j, e = interleaved ? 2 * j + 1 : j + half;
    const C xa = x[a], xe = x[e];
    y[a] = cos[j] * xa - sin[j] * xe;
    y[e] = sin[j] * xa + cos[j] * xe;
  }
  if (y != x) std::copy(x + rot, x + dim, y + rot);
}

template void RunAttention<float>(const AttentionProblem<float>&, ThreadPool&);
template void RunAttention<double>(const AttentionProblem<double>&, ThreadPool&);
template std::vector<float> LoadCompute<float>(const Tensor&);
template std::vector<double> LoadCompute<double>(const Tensor&);
template void StoreCompute<float>(const std::vector<float>&, Tensor&);
template void StoreCompute<double>(const std::vector<double>&, Tensor&);
template void RotateHead<float>(const float*, float*, int64_t, int64_t, bool, const float*, const float*);
template void RotateHead<double>(const double*, double*, int64_t, int64_t, bool, const double*, const double*);

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
