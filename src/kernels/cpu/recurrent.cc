// CPU kernels: RNN, GRU, LSTM (graph/ops/recurrent.cc) and their ai.oneflow <Op>Grad ops.
//
// Forward, per direction: one GEMM projects every step's input at once (X [steps*batch, input] x
// W^T, biases folded in), then each step multiplies the state by R^T ([batch, hidden] x
// [hidden, gates*hidden]) and runs the gate arithmetic row by row. Rows past their sequence_lens
// stop: their state is held (it is Y_h) and their Y rows stay zero. The two directions of a
// bidirectional layer are independent, so with two or more threads they run side by side, each
// on one thread (a step's GEMM is too small to split well; the directions are not).
//
// Backward (backpropagation through time): the grad kernel reruns the forward keeping a tape of
// each step's gate inputs and outputs and states, then walks the steps back. Per step only the
// gradient of the previous state needs a GEMM (dGates x R); the gradients of X, W, R and the
// biases are one GEMM (or column sum) each over all steps at the end.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "base/dtype.h"
#include "base/fast_math.h"
#include "graph/ops/recurrent_spec.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/integer_gemm.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// C[M, N] = op(A) op(B) + beta C (row-major).
template <typename T>
void Gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, bool trans_a, const T* B, int64_t ldb,
          bool trans_b, T beta, T* C, int64_t ldc, ThreadPool* pool) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    Sgemm(M, N, K, 1.0f, GemmOperand::Raw(A, lda, trans_a), GemmOperand::Raw(B, ldb, trans_b), beta, C, ldc,
          nullptr, pool);
  } else {
    ReferenceGemm<T>(M, N, K, T(1), A, lda, trans_a, B, ldb, trans_b, beta, C, ldc);
  }
}

// C[M, N] = A[M, K] x (the packed B) + beta C; the raw B when there is no packed copy.
// `col_bias` (length N, may be null) is added to every row of C.
template <typename T>
void GemmPackedB(int64_t M, int64_t N, int64_t K, const T* A, const PackedMatrix* packed_b, const T* B, int64_t ldb,
                 bool trans_b, T beta, T* C, int64_t ldc, ThreadPool* pool, const T* col_bias = nullptr) {
  if constexpr (std::is_same_v<T, float>) {
    if (M > 0 && N > 0 && K > 0) {
      GemmEpilogue ep;
      ep.col_bias = col_bias;
      const GemmOperand b = packed_b ? GemmOperand::Packed(*packed_b) : GemmOperand::Raw(B, ldb, trans_b);
      Sgemm(M, N, K, 1.0f, GemmOperand::Raw(A, K), b, beta, C, ldc, col_bias ? &ep : nullptr, pool);
      return;
    }
  }
  Gemm<T>(M, N, K, A, K, false, B, ldb, trans_b, beta, C, ldc, pool);
  if (col_bias)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] += col_bias[j];
}

// ---- Activations ------------------------------------------------------------------------------

template <typename T>
T Softplus(T x) {
  if constexpr (std::is_same_v<T, float>) return fastmath::Softplus(x);
  else return std::max(x, T(0)) + std::log1p(std::exp(-std::fabs(x)));
}

// y = f(clip(x)) over n values; the loops are branch-free per kind so they vectorize.
template <typename T>
void Activate(const RnnActivationFn& fn, float clip, const T* x, T* y, int64_t n) {
  const T a = static_cast<T>(fn.alpha), b = static_cast<T>(fn.beta), c = static_cast<T>(clip);
  auto in = [&](int64_t i) { return clip > 0.0f ? std::min(std::max(x[i], -c), c) : x[i]; };
  switch (fn.kind) {
    case RnnActivation::kRelu: for (int64_t i = 0; i < n; ++i) y[i] = std::max(in(i), T(0)); break;
    case RnnActivation::kTanh: for (int64_t i = 0; i < n; ++i) y[i] = fastmath::Tanh(in(i)); break;
    case RnnActivation::kSigmoid: for (int64_t i = 0; i < n; ++i) y[i] = fastmath::Sigmoid(in(i)); break;
    case RnnActivation::kAffine: for (int64_t i = 0; i < n; ++i) y[i] = a * in(i) + b; break;
    case RnnActivation::kLeakyRelu:
      for (int64_t i = 0; i < n; ++i) { const T v = in(i); y[i] = v >= T(0) ? v : a * v; }
      break;
    case RnnActivation::kThresholdedRelu:
      for (int64_t i = 0; i < n; ++i) { const T v = in(i); y[i] = v > a ? v : T(0); }
      break;
    case RnnActivation::kScaledTanh: for (int64_t i = 0; i < n; ++i) y[i] = a * fastmath::Tanh(b * in(i)); break;
    case RnnActivation::kHardSigmoid:
      for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(a * in(i) + b, T(0)), T(1));
      break;
    case RnnActivation::kElu:
      for (int64_t i = 0; i < n; ++i) { const T v = in(i); y[i] = v >= T(0) ? v : a * (fastmath::Exp(v) - T(1)); }
      break;
    case RnnActivation::kSoftsign: for (int64_t i = 0; i < n; ++i) { const T v = in(i); y[i] = v / (T(1) + std::fabs(v)); } break;
    case RnnActivation::kSoftplus: for (int64_t i = 0; i < n; ++i) y[i] = Softplus(in(i)); break;
  }
}

// dx = dy * f'(clip(x)), with y = f(clip(x)) as the forward computed it; zero where the clip cut x.
template <typename T>
void ActivateGrad(const RnnActivationFn& fn, float clip, const T* x, const T* y, const T* dy, T* dx, int64_t n) {
  const T a = static_cast<T>(fn.alpha), b = static_cast<T>(fn.beta), c = static_cast<T>(clip);
  for (int64_t i = 0; i < n; ++i) {
    const T v = clip > 0.0f ? std::min(std::max(x[i], -c), c) : x[i];
    T d = T(0);
    switch (fn.kind) {
      case RnnActivation::kRelu: d = v > T(0) ? T(1) : T(0); break;
      case RnnActivation::kTanh: d = T(1) - y[i] * y[i]; break;
      case RnnActivation::kSigmoid: d = y[i] * (T(1) - y[i]); break;
      case RnnActivation::kAffine: d = a; break;
      case RnnActivation::kLeakyRelu: d = v >= T(0) ? T(1) : a; break;
      case RnnActivation::kThresholdedRelu: d = v > a ? T(1) : T(0); break;
      case RnnActivation::kScaledTanh: {
        const T t = fastmath::Tanh(b * v);
        d = a * b * (T(1) - t * t);
        break;
      }
      case RnnActivation::kHardSigmoid: {
        const T u = a * v + b;
        d = u > T(0) && u < T(1) ? a : T(0);
        break;
      }
      case RnnActivation::kElu: d = v >= T(0) ? T(1) : y[i] + a; break;
      case RnnActivation::kSoftsign: { const T q = T(1) + std::fabs(v); d = T(1) / (q * q); break; }
      case RnnActivation::kSoftplus: d = fastmath::Sigmoid(v); break;
    }
    const bool cut = clip > 0.0f && (x[i] > c || x[i] < -c);
    dx[i] = cut ? T(0) : dy[i] * d;
  }
}

// ---- The problem ------------------------------------------------------------------------------

enum : size_t { kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitialH = 5, kInitialC = 6, kP = 7 };

template <typename T>
struct Problem {
  RecurrentSpec spec;
  int64_t S = 0, N = 0, I = 0, H = 0, GH = 0, D = 1;
  const T* X = nullptr;
  const T* W = nullptr;
  const T* R = nullptr;
  const T* B = nullptr;  // [D, 2*GH] or null
  const T* h0 = nullptr;
  const T* c0 = nullptr;
  const T* P = nullptr;  // [D, 3H] or null
  std::vector<int64_t> lens;  // per batch row, all S without sequence_lens
  // R^T of each direction pre-packed for the step GEMMs (float with a constant R; else empty):
  // [d] the whole [H, GH], or for GRU without linear_before_reset [2d] z and r's [H, 2H] and
  // [2d + 1] h's [H, H] (the two products it takes per step).
  const std::vector<PackedMatrix>* r_packed = nullptr;
  // W^T of each direction pre-packed for the input projection (float with a constant W; else empty).
  const std::vector<PackedMatrix>* w_packed = nullptr;

  bool gru() const { return spec.cell == RecurrentCell::kGru; }
  bool lstm() const { return spec.cell == RecurrentCell::kLstm; }
  // Row of X (and of the input projection) for step t of batch row b.
  int64_t XRow(int64_t t, int64_t b) const { return spec.layout ? b * S + t : t * N + b; }
  // Offset of Y's [H] vector for step t, direction d, batch row b.
  int64_t YOffset(int64_t t, int64_t d, int64_t b) const {
    return (spec.layout ? (b * S + t) * D + d : (t * D + d) * N + b) * H;
  }
  // Offset of a state's [H] vector (initial_h, Y_h, ...) for direction d, batch row b.
  int64_t StateOffset(int64_t d, int64_t b) const { return (spec.layout ? b * D + d : d * N + b) * H; }
  // The step batch row b takes at iteration s of direction d, or -1 when the row has ended.
  int64_t StepAt(int64_t s, int64_t d, int64_t b) const {
    const int64_t len = lens[static_cast<size_t>(b)];
    if (s >= len) return -1;
    return spec.runs_backward(static_cast<int>(d)) ? len - 1 - s : s;
  }
};

// `weights` replaces inputs W and R where given (DynamicQuantizeLSTM's dequantized weights).
template <typename T>
Problem<T> ReadProblem(KernelContext& ctx, RecurrentCell cell, const Tensor* weights = nullptr) {
  Problem<T> p;
  p.spec = ParseRecurrentSpec(cell, ctx.attrs(), ctx.node_desc());
  const RecurrentSpec& s = p.spec;
  const Tensor& x = ctx.input(kX);
  const Tensor& w = weights ? weights[0] : ctx.input(kW);
  const Tensor& r = weights ? weights[1] : ctx.input(kR);
  OF_REQUIRE(x.rank() == 3 && w.rank() == 3 && r.rank() == 3, ctx.node_desc(), ": X, W and R must be 3-D, got ",
             ShapeToString(x.shape()), ", ", ShapeToString(w.shape()), ", ", ShapeToString(r.shape()));
  p.S = x.dim(s.layout ? 1 : 0);
  p.N = x.dim(s.layout ? 0 : 1);
  p.I = x.dim(2);
  p.D = s.num_directions;
  p.GH = w.dim(1);
  OF_REQUIRE(p.GH % s.gates == 0, ctx.node_desc(), ": W has ", p.GH, " rows, not a multiple of ", s.gates, " gates");
  p.H = p.GH / s.gates;
  OF_REQUIRE(s.hidden_size == 0 || s.hidden_size == p.H, ctx.node_desc(), ": hidden_size ", s.hidden_size,
             " disagrees with W's ", p.GH, " rows (", s.gates, " gates)");
  auto expect = [&](const Tensor& t, const char* name, const Shape& want) {
    OF_REQUIRE(t.shape() == want, ctx.node_desc(), ": ", name, " must have shape ", ShapeToString(want), ", got ",
               ShapeToString(t.shape()));
  };
  expect(w, "W", {p.D, p.GH, p.I});
  expect(r, "R", {p.D, p.GH, p.H});
  const Shape state = s.layout ? Shape{p.N, p.D, p.H} : Shape{p.D, p.N, p.H};
  p.X = x.data<T>();
  p.W = w.data<T>();
  p.R = r.data<T>();
  if (ctx.has_input(kB)) {
    expect(ctx.input(kB), "B", {p.D, 2 * p.GH});
    p.B = ctx.input(kB).data<T>();
  }
  if (ctx.has_input(kInitialH)) {
    expect(ctx.input(kInitialH), "initial_h", state);
    p.h0 = ctx.input(kInitialH).data<T>();
  }
  if (p.lstm() && ctx.has_input(kInitialC)) {
    expect(ctx.input(kInitialC), "initial_c", state);
    p.c0 = ctx.input(kInitialC).data<T>();
  }
  if (p.lstm() && ctx.has_input(kP)) {
    expect(ctx.input(kP), "P", {p.D, 3 * p.H});
    p.P = ctx.input(kP).data<T>();
  }
  p.lens.assign(static_cast<size_t>(p.N), p.S);
  if (ctx.has_input(kSeqLens)) {
    const Tensor& l = ctx.input(kSeqLens);
    expect(l, "sequence_lens", {p.N});
    const int32_t* v = l.data<int32_t>();
    for (int64_t b = 0; b < p.N; ++b) {
      OF_REQUIRE(v[b] >= 0 && v[b] <= p.S, ctx.node_desc(), ": sequence_lens[", b, "] = ", v[b],
                 " is outside [0, ", p.S, "] (the sequence has ", p.S, " steps)");
      p.lens[static_cast<size_t>(b)] = v[b];
    }
  }
  return p;
}

// What the backward pass needs of one direction's forward, per iteration s and batch row b
// (index s * N + b): every gate's input (before the clip) and output, the state going in, and
// for LSTM the cell going in and out; for GRU the reset gate's operand (r.H before Rh for
// linear_before_reset 0, H Rh^T + Rbh for 1).
template <typename T>
struct Tape {
  std::vector<T> pre, act;        // [S*N, GH]
  std::vector<T> h_prev;          // [S*N, H]
  std::vector<T> c_prev, c_next;  // LSTM: [S*N, H]
  std::vector<T> reset_operand;   // GRU: [S*N, H]
};

// The forward of direction d: writes Y's and the final states' slices of that direction (each
// may be null) and, when `tape` is given, records it.
template <typename T>
void RunDirection(const Problem<T>& p, int64_t d, T* Y, T* Y_h, T* Y_c, Tape<T>* tape, ThreadPool* pool) {
  const RecurrentSpec& s = p.spec;
  const int64_t S = p.S, N = p.N, H = p.H, GH = p.GH;
  const T* Wd = p.W + d * GH * p.I;
  const T* Rd = p.R + d * GH * H;
  const T* Wb = p.B ? p.B + d * 2 * GH : nullptr;
  const T* Rb = Wb ? Wb + GH : nullptr;
  const T* P = p.P ? p.P + d * 3 * H : nullptr;
  const bool lbr = p.gru() && s.linear_before_reset;

  // The input projection of every step, with the biases that add to it (all but GRU's Rbh under
  // linear_before_reset, which the reset gate scales).
  std::vector<T> bias(Wb ? static_cast<size_t>(GH) : 0);
  for (int64_t j = 0; j < static_cast<int64_t>(bias.size()); ++j) bias[j] = Wb[j] + (lbr && j >= 2 * H ? T(0) : Rb[j]);
  std::vector<T> xw_buffer(static_cast<size_t>(S * N * GH));
  T* const xw = xw_buffer.data();
  GemmPackedB<T>(S * N, GH, p.I, p.X, p.w_packed ? &(*p.w_packed)[static_cast<size_t>(d)] : nullptr, Wd, p.I, true,
                 T(0), xw, GH, pool, Wb ? bias.data() : nullptr);

  std::vector<T> h(static_cast<size_t>(N * H), T(0)), c(p.lstm() ? static_cast<size_t>(N * H) : 0, T(0));
  for (int64_t b = 0; b < N; ++b) {
    if (p.h0) std::copy_n(p.h0 + p.StateOffset(d, b), H, h.data() + b * H);
    if (p.c0) std::copy_n(p.c0 + p.StateOffset(d, b), H, c.data() + b * H);
  }
  std::vector<T> hr(static_cast<size_t>(N * GH));  // this step's state projection h R^T
  std::vector<T> rh(p.gru() && !lbr ? static_cast<size_t>(N * H) : 0);  // GRU: r.h, then (r.h) Rh^T
  std::vector<T> rh_proj(rh.size());
  std::vector<T> pre(static_cast<size_t>(GH)), act(static_cast<size_t>(GH)), hc(static_cast<size_t>(H));
  const RnnActivationFn& f = s.activation(static_cast<int>(d), 0);
  const RnnActivationFn& g = s.per_direction > 1 ? s.activation(static_cast<int>(d), 1) : f;
  const RnnActivationFn& hfn = s.per_direction > 2 ? s.activation(static_cast<int>(d), 2) : f;
  if (tape) {
    tape->pre.assign(static_cast<size_t>(S * N * GH), T(0));
    tape->act.assign(static_cast<size_t>(S * N * GH), T(0));
    tape->h_prev.assign(static_cast<size_t>(S * N * H), T(0));
    if (p.lstm()) {
      tape->c_prev.assign(static_cast<size_t>(S * N * H), T(0));
      tape->c_next.assign(static_cast<size_t>(S * N * H), T(0));
    }
    if (p.gru()) tape->reset_operand.assign(static_cast<size_t>(S * N * H), T(0));
  }

  for (int64_t it = 0; it < S; ++it) {
    // Recurrent projection. GRU without linear_before_reset projects only z and r here; its h
    // gate's projection needs r first.
    const bool split_h = p.gru() && !lbr;
    const int64_t projected = split_h ? 2 * H : GH;
    const PackedMatrix* packed = p.r_packed ? &(*p.r_packed)[static_cast<size_t>(split_h ? 2 * d : d)] : nullptr;
    GemmPackedB<T>(N, projected, H, h.data(), packed, Rd, H, true, T(0), hr.data(), GH, pool);
    if (lbr && Rb)
      for (int64_t b = 0; b < N; ++b)
        for (int64_t j = 0; j < H; ++j) hr[b * GH + 2 * H + j] += Rb[2 * H + j];

    if (p.gru() && !lbr) {
      // z and r for every live row, then r.h projected by Rh in one GEMM.
      for (int64_t b = 0; b < N; ++b) {
        const int64_t t = p.StepAt(it, d, b);
        if (t < 0) continue;
        const T* x = xw + p.XRow(t, b) * GH;
        T* pr = pre.data();
        for (int64_t j = 0; j < 2 * H; ++j) pr[j] = x[j] + hr[b * GH + j];
        // Keep z and r in hr's first 2H columns (their projection is consumed).
        std::copy_n(pr, 2 * H, hr.data() + b * GH);
        Activate(f, s.clip, pr + H, act.data() + H, H);
        for (int64_t j = 0; j < H; ++j) rh[b * H + j] = act[H + j] * h[b * H + j];
      }
      const PackedMatrix* packed_h = p.r_packed ? &(*p.r_packed)[static_cast<size_t>(2 * d + 1)] : nullptr;
      GemmPackedB<T>(N, H, H, rh.data(), packed_h, Rd + 2 * H * H, H, true, T(0), rh_proj.data(), H, pool);
    }

    for (int64_t b = 0; b < N; ++b) {
      const int64_t t = p.StepAt(it, d, b);
      if (t < 0) continue;
      const T* x = xw + p.XRow(t, b) * GH;
      const T* r = hr.data() + b * GH;
      T* hb = h.data() + b * H;
      const size_t ti = static_cast<size_t>((it * N + b));
      if (tape) std::copy_n(hb, H, tape->h_prev.data() + ti * H);
      T* pr = pre.data();
      T* ac = act.data();
      if (s.cell == RecurrentCell::kRnn) {
        for (int64_t j = 0; j < H; ++j) pr[j] = x[j] + r[j];
        Activate(f, s.clip, pr, ac, H);
        std::copy_n(ac, H, hb);
      } else if (p.gru()) {
        if (lbr) {
          for (int64_t j = 0; j < 2 * H; ++j) pr[j] = x[j] + r[j];
        } else {
          std::copy_n(r, 2 * H, pr);  // stored above: x + h R^T of z and r
        }
        Activate(f, s.clip, pr, ac, 2 * H);  // z, r
        const T* operand = lbr ? r + 2 * H : rh.data() + b * H;
        if (lbr) {
          for (int64_t j = 0; j < H; ++j) pr[2 * H + j] = x[2 * H + j] + ac[H + j] * r[2 * H + j];
        } else {
          for (int64_t j = 0; j < H; ++j) pr[2 * H + j] = x[2 * H + j] + rh_proj[b * H + j];
        }
        if (tape) std::copy_n(operand, H, tape->reset_operand.data() + ti * H);
        Activate(g, s.clip, pr + 2 * H, ac + 2 * H, H);
        for (int64_t j = 0; j < H; ++j) hb[j] = (T(1) - ac[j]) * ac[2 * H + j] + ac[j] * hb[j];
      } else {
        // LSTM gates in W's order: i, o, f, c.
        T* cb = c.data() + b * H;
        if (tape) std::copy_n(cb, H, tape->c_prev.data() + ti * H);
        for (int64_t j = 0; j < GH; ++j) pr[j] = x[j] + r[j];
        if (P)
          for (int64_t j = 0; j < H; ++j) {
            pr[j] += P[j] * cb[j];               // i
            pr[2 * H + j] += P[2 * H + j] * cb[j];  // f
          }
        Activate(f, s.clip, pr, ac, H);  // i
        if (s.input_forget) {
          for (int64_t j = 0; j < H; ++j) ac[2 * H + j] = T(1) - ac[j];
        } else {
          Activate(f, s.clip, pr + 2 * H, ac + 2 * H, H);
        }
        Activate(g, s.clip, pr + 3 * H, ac + 3 * H, H);  // c
        for (int64_t j = 0; j < H; ++j) cb[j] = ac[2 * H + j] * cb[j] + ac[j] * ac[3 * H + j];
        if (P)
          for (int64_t j = 0; j < H; ++j) pr[H + j] += P[H + j] * cb[j];  // o sees the new cell
        Activate(f, s.clip, pr + H, ac + H, H);  // o
        Activate(hfn, 0.0f, cb, hc.data(), H);
        for (int64_t j = 0; j < H; ++j) hb[j] = ac[H + j] * hc[j];
        if (tape) std::copy_n(cb, H, tape->c_next.data() + ti * H);
      }
      if (tape) {
        std::copy_n(pr, GH, tape->pre.data() + ti * GH);
        std::copy_n(ac, GH, tape->act.data() + ti * GH);
      }
      if (Y) std::copy_n(hb, H, Y + p.YOffset(t, d, b));
    }
  }
  // A row of length 0 has no last step: its final states are zeros (as onnxruntime gives), not
  // the initial ones.
  for (int64_t b = 0; b < N; ++b) {
    const bool empty = p.lens[static_cast<size_t>(b)] == 0;
    if (Y_h) {
      T* out = Y_h + p.StateOffset(d, b);
      if (empty) std::fill_n(out, H, T(0));
      else std::copy_n(h.data() + b * H, H, out);
    }
    if (Y_c) {
      T* out = Y_c + p.StateOffset(d, b);
      if (empty) std::fill_n(out, H, T(0));
      else std::copy_n(c.data() + b * H, H, out);
    }
  }
}

// Runs `fn(d, pool_for_d)` for every direction: side by side on two threads when the layer is
// bidirectional and the pool has them (each direction's GEMMs then run on its own thread).
template <typename Fn>
void ForEachDirection(int64_t D, ThreadPool& pool, Fn&& fn) {
  if (D == 2 && pool.num_threads() >= 2) {
    pool.ParallelFor(2, 1e9, [&](int64_t begin, int64_t end) {
      for (int64_t d = begin; d < end; ++d) fn(d, static_cast<ThreadPool*>(nullptr));
    });
  } else {
    for (int64_t d = 0; d < D; ++d) fn(d, &pool);
  }
}

template <typename T>
void RecurrentForward(KernelContext& ctx, RecurrentCell cell, const std::vector<PackedMatrix>* r_packed,
                      const std::vector<PackedMatrix>* w_packed, const Tensor* weights = nullptr) {
  Problem<T> p = ReadProblem<T>(ctx, cell, weights);
  p.r_packed = r_packed;
  p.w_packed = w_packed;
  T* Y = ctx.has_output(0) ? ctx.output(0).data<T>() : nullptr;
  T* Y_h = ctx.has_output(1) ? ctx.output(1).data<T>() : nullptr;
  T* Y_c = p.lstm() && ctx.has_output(2) ? ctx.output(2).data<T>() : nullptr;
  // Steps past a row's sequence_lens leave zeros in Y (without them every step writes its rows).
  const bool all_full = std::all_of(p.lens.begin(), p.lens.end(), [&](int64_t l) { return l == p.S; });
  if (Y && !all_full) std::fill_n(Y, ctx.output(0).numel(), T(0));
  ForEachDirection(p.D, ctx.pool(), [&](int64_t d, ThreadPool* pool) { RunDirection<T>(p, d, Y, Y_h, Y_c, nullptr, pool); });
}

// ---- Backward ---------------------------------------------------------------------------------

// Gradients of one direction: writes dW, dR, dB and dP's slices for d and the initial states'
// gradients, and leaves in `dgate_x` [S*N, GH] (rows in X's order) the gradient of every step's
// input projection, from which the caller forms dX.
template <typename T>
void BackwardDirection(const Problem<T>& p, int64_t d, const Tape<T>& tape, const T* dY, const T* dY_h,
                       const T* dY_c, T* dW, T* dR, T* dB, T* dh0, T* dc0, T* dP, std::vector<T>& dgate_x,
                       ThreadPool* pool) {
  const RecurrentSpec& s = p.spec;
  const int64_t S = p.S, N = p.N, H = p.H, GH = p.GH;
  const T* Rd = p.R + d * GH * H;
  const T* P = p.P ? p.P + d * 3 * H : nullptr;
  const bool lbr = p.gru() && s.linear_before_reset;
  const RnnActivationFn& f = s.activation(static_cast<int>(d), 0);
  const RnnActivationFn& g = s.per_direction > 1 ? s.activation(static_cast<int>(d), 1) : f;
  const RnnActivationFn& hfn = s.per_direction > 2 ? s.activation(static_cast<int>(d), 2) : f;

  dgate_x.assign(static_cast<size_t>(S * N * GH), T(0));
  // Gradient of the recurrent side's pre-activations, by iteration (s * N + b): equal to the input
  // side's except GRU's h gate under linear_before_reset (dq = dh.r) .
  std::vector<T> dgate_r(static_cast<size_t>(S * N * GH), T(0));
  std::vector<T> dh(static_cast<size_t>(N * H), T(0)), dc(p.lstm() ? static_cast<size_t>(N * H) : 0, T(0));
  for (int64_t b = 0; b < N; ++b) {
    if (p.lens[static_cast<size_t>(b)] == 0) continue;  // its final states are constant zeros
    if (dY_h) std::copy_n(dY_h + p.StateOffset(d, b), H, dh.data() + b * H);
    if (dY_c) std::copy_n(dY_c + p.StateOffset(d, b), H, dc.data() + b * H);
  }
  std::vector<T> dh_prev(static_cast<size_t>(N * H));
  std::vector<T> g_h(p.gru() && !lbr ? static_cast<size_t>(N * H) : 0);  // GRU: dah Rh
  std::vector<T> dact(static_cast<size_t>(GH)), hc(static_cast<size_t>(H)), dhc(static_cast<size_t>(H));
  std::vector<T> dPacc(P ? static_cast<size_t>(3 * H) : 0, T(0));

  for (int64_t it = S - 1; it >= 0; --it) {
    // Pass 1: per live row, the gates' gradients that need no GEMM; rows that ended pass dh on.
    for (int64_t b = 0; b < N; ++b) {
      const int64_t t = p.StepAt(it, d, b);
      T* dhb = dh.data() + b * H;
      T* dprev = dh_prev.data() + b * H;
      if (t < 0) {
        std::copy_n(dhb, H, dprev);
        continue;
      }
      if (dY) {
        const T* y = dY + p.YOffset(t, d, b);
        for (int64_t j = 0; j < H; ++j) dhb[j] += y[j];
      }
      const size_t ti = static_cast<size_t>(it * N + b);
      const T* pre = tape.pre.data() + ti * GH;
      const T* ac = tape.act.data() + ti * GH;
      const T* hp = tape.h_prev.data() + ti * H;
      T* dx = dgate_x.data() + p.XRow(t, b) * GH;
      T* dr = dgate_r.data() + ti * GH;
      if (s.cell == RecurrentCell::kRnn) {
        ActivateGrad(f, s.clip, pre, ac, dhb, dx, H);
        std::copy_n(dx, H, dr);
        std::fill_n(dprev, H, T(0));
      } else if (p.gru()) {
        const T* z = ac;
        const T* hh = ac + 2 * H;
        for (int64_t j = 0; j < H; ++j) {
          dact[j] = dhb[j] * (hp[j] - hh[j]);         // dz
          dact[2 * H + j] = dhb[j] * (T(1) - z[j]);  // dh~
          dprev[j] = dhb[j] * z[j];
        }
        ActivateGrad(f, s.clip, pre, ac, dact.data(), dx, H);                        // daz
        ActivateGrad(g, s.clip, pre + 2 * H, hh, dact.data() + 2 * H, dx + 2 * H, H);  // dah
        std::copy_n(dx, H, dr);
        if (lbr) {
          const T* q = tape.reset_operand.data() + ti * H;
          const T* rg = ac + H;
          for (int64_t j = 0; j < H; ++j) {
            dact[H + j] = dx[2 * H + j] * q[j];     // dr
            dr[2 * H + j] = dx[2 * H + j] * rg[j];  // dq
          }
          ActivateGrad(f, s.clip, pre + H, ac + H, dact.data() + H, dx + H, H);  // dar
          std::copy_n(dx + H, H, dr + H);
        } else {
          std::copy_n(dx + 2 * H, H, dr + 2 * H);  // dr's r part waits for dah Rh (pass 2)
        }
      } else {
        const T* cp = tape.c_prev.data() + ti * H;
        const T* cn = tape.c_next.data() + ti * H;
        const T* ig = ac;
        const T* og = ac + H;
        const T* fg = ac + 2 * H;
        const T* cg = ac + 3 * H;
        T* dcb = dc.data() + b * H;
        Activate(hfn, 0.0f, cn, hc.data(), H);
        for (int64_t j = 0; j < H; ++j) dact[H + j] = dhb[j] * hc[j];  // do
        ActivateGrad(f, s.clip, pre + H, og, dact.data() + H, dx + H, H);  // dao
        for (int64_t j = 0; j < H; ++j) dhc[j] = dhb[j] * og[j];
        ActivateGrad(hfn, 0.0f, cn, hc.data(), dhc.data(), dhc.data(), H);  // dh(C)/dC
        for (int64_t j = 0; j < H; ++j) {
          dcb[j] += dhc[j] + (P ? dx[H + j] * P[H + j] : T(0));
          dact[j] = dcb[j] * cg[j];               // di
          dact[2 * H + j] = dcb[j] * cp[j];       // df
          dact[3 * H + j] = dcb[j] * ig[j];       // dc~
        }
        if (s.input_forget)
          for (int64_t j = 0; j < H; ++j) {
            dact[j] -= dact[2 * H + j];
            dx[2 * H + j] = T(0);
          }
        ActivateGrad(f, s.clip, pre, ig, dact.data(), dx, H);
        if (!s.input_forget) ActivateGrad(f, s.clip, pre + 2 * H, fg, dact.data() + 2 * H, dx + 2 * H, H);
        ActivateGrad(g, s.clip, pre + 3 * H, cg, dact.data() + 3 * H, dx + 3 * H, H);
        for (int64_t j = 0; j < H; ++j) {
          T next = dcb[j] * fg[j];
          if (P) {
            next += dx[j] * P[j] + dx[2 * H + j] * P[2 * H + j];
            dPacc[j] += dx[j] * cp[j];
            dPacc[H + j] += dx[H + j] * cn[j];
            dPacc[2 * H + j] += dx[2 * H + j] * cp[j];
          }
          dcb[j] = next;
        }
        std::copy_n(dx, GH, dr);
        std::fill_n(dprev, H, T(0));
      }
    }
    // Pass 2: GRU without linear_before_reset: the reset gate's gradient goes through (r.h) Rh^T.
    if (p.gru() && !lbr) {
      std::vector<T> dah(static_cast<size_t>(N * H), T(0));
      for (int64_t b = 0; b < N; ++b)
        if (p.StepAt(it, d, b) >= 0) std::copy_n(dgate_r.data() + (it * N + b) * GH + 2 * H, H, dah.data() + b * H);
      Gemm<T>(N, H, H, dah.data(), H, false, Rd + 2 * H * H, H, false, T(0), g_h.data(), H, pool);
      for (int64_t b = 0; b < N; ++b) {
        const int64_t t = p.StepAt(it, d, b);
        if (t < 0) continue;
        const size_t ti = static_cast<size_t>(it * N + b);
        const T* hp = tape.h_prev.data() + ti * H;
        const T* ac = tape.act.data() + ti * GH;
        T* dx = dgate_x.data() + p.XRow(t, b) * GH;
        T* dprev = dh_prev.data() + b * H;
        for (int64_t j = 0; j < H; ++j) {
          dact[H + j] = g_h[b * H + j] * hp[j];  // dr
          dprev[j] += g_h[b * H + j] * ac[H + j];
        }
        ActivateGrad(f, s.clip, tape.pre.data() + ti * GH + H, ac + H, dact.data() + H, dx + H, H);
        std::copy_n(dx + H, H, dgate_r.data() + ti * GH + H);
      }
    }
    // The previous state's gradient through R (only z and r's blocks for GRU without
    // linear_before_reset: its h block went through r above).
    const int64_t k = p.gru() && !lbr ? 2 * H : GH;
    Gemm<T>(N, H, k, dgate_r.data() + it * N * GH, GH, false, Rd, H, false, T(1), dh_prev.data(), H, pool);
    std::swap(dh, dh_prev);
  }
  for (int64_t b = 0; b < N; ++b) {
    if (dh0) std::copy_n(dh.data() + b * H, H, dh0 + p.StateOffset(d, b));
    if (dc0 && p.lstm()) std::copy_n(dc.data() + b * H, H, dc0 + p.StateOffset(d, b));
  }
  // dR = dgate_r^T x (the operand each block multiplied): h_prev, or r.h_prev for GRU's h block.
  T* dRd = dR + d * GH * H;
  if (p.gru() && !lbr) {
    Gemm<T>(2 * H, H, S * N, dgate_r.data(), GH, true, tape.h_prev.data(), H, false, T(0), dRd, H, pool);
    Gemm<T>(H, H, S * N, dgate_r.data() + 2 * H, GH, true, tape.reset_operand.data(), H, false, T(0),
            dRd + 2 * H * H, H, pool);
  } else {
    Gemm<T>(GH, H, S * N, dgate_r.data(), GH, true, tape.h_prev.data(), H, false, T(0), dRd, H, pool);
  }
  Gemm<T>(GH, p.I, S * N, dgate_x.data(), GH, true, p.X, p.I, false, T(0), dW + d * GH * p.I, p.I, pool);
  T* dWb = dB + d * 2 * GH;
  T* dRb = dWb + GH;
  std::fill_n(dWb, 2 * GH, T(0));
  for (int64_t row = 0; row < S * N; ++row)
    for (int64_t j = 0; j < GH; ++j) {
      dWb[j] += dgate_x[row * GH + j];
      dRb[j] += dgate_r[row * GH + j];
    }
  if (dP && P) std::copy_n(dPacc.data(), 3 * H, dP + d * 3 * H);
}

template <typename T>
void RecurrentBackward(KernelContext& ctx, RecurrentCell cell) {
  const Problem<T> p = ReadProblem<T>(ctx, cell);
  const size_t grads_at = p.lstm() ? 8 : 6;  // dY, dY_h[, dY_c] follow the forward's inputs
  auto grad_in = [&](size_t k) -> const T* {
    return ctx.has_input(grads_at + k) ? ctx.input(grads_at + k).data<T>() : nullptr;
  };
  const T* dY = grad_in(0);
  const T* dY_h = grad_in(1);
  const T* dY_c = p.lstm() ? grad_in(2) : nullptr;
  auto out = [&](size_t k) -> T* {
    if (!ctx.has_output(k)) return nullptr;
    Tensor& o = ctx.output(k);
    std::fill_n(o.data<T>(), o.numel(), T(0));
    return o.data<T>();
  };
  T* dX = out(0);
  std::vector<T> dW_scratch, dR_scratch, dB_scratch;
  auto need = [&](T* given, std::vector<T>& scratch, int64_t n) {
    if (given) return given;
    scratch.assign(static_cast<size_t>(n), T(0));
    return scratch.data();
  };
  T* dW = need(out(1), dW_scratch, p.D * p.GH * p.I);
  T* dR = need(out(2), dR_scratch, p.D * p.GH * p.H);
  T* dB = need(out(3), dB_scratch, p.D * 2 * p.GH);
  T* dh0 = out(4);
  T* dc0 = p.lstm() ? out(5) : nullptr;
  T* dP = p.lstm() ? out(6) : nullptr;

  std::vector<std::vector<T>> dgate_x(static_cast<size_t>(p.D));
  ForEachDirection(p.D, ctx.pool(), [&](int64_t d, ThreadPool* pool) {
    Tape<T> tape;
    RunDirection<T>(p, d, nullptr, nullptr, nullptr, &tape, pool);
    BackwardDirection<T>(p, d, tape, dY, dY_h, dY_c, dW, dR, dB, dh0, dc0, dP, dgate_x[static_cast<size_t>(d)], pool);
  });
  if (dX)
    for (int64_t d = 0; d < p.D; ++d)
      Gemm<T>(p.S * p.N, p.I, p.GH, dgate_x[static_cast<size_t>(d)].data(), p.GH, false, p.W + d * p.GH * p.I, p.I,
              false, d == 0 ? T(0) : T(1), dX, p.I, &ctx.pool());
}

// W^T and R^T of each direction pre-packed for the GEMMs (Problem::w_packed / r_packed), from
// constant float weights; a null or odd-shaped weight leaves its list empty (the run reports the shapes).
void PackRecurrentWeights(RecurrentCell cell, const RecurrentSpec& s, const Tensor* w, const Tensor* r,
                          std::vector<PackedMatrix>& w_packed, std::vector<PackedMatrix>& r_packed) {
  if (w && w->dtype() == DType::kFloat32 && w->rank() == 3) {
    const int64_t GH = w->dim(1), I = w->dim(2);
    for (int64_t d = 0; d < w->dim(0); ++d) w_packed.push_back(PackGemmB(I, GH, w->data<float>() + d * GH * I, I, true));
  }
  if (!r || r->dtype() != DType::kFloat32 || r->rank() != 3) return;
  const int64_t D = r->dim(0), GH = r->dim(1), H = r->dim(2);
  if (GH != s.gates * H || D != s.num_directions) return;
  const bool split_h = cell == RecurrentCell::kGru && !s.linear_before_reset;
  for (int64_t d = 0; d < D; ++d) {
    const float* Rd = r->data<float>() + d * GH * H;
    if (split_h) {
      r_packed.push_back(PackGemmB(H, 2 * H, Rd, H, true));
      r_packed.push_back(PackGemmB(H, H, Rd + 2 * H * H, H, true));
    } else {
      r_packed.push_back(PackGemmB(H, GH, Rd, H, true));
    }
  }
}

// The forward kernel: packs constant float weights once, at session creation, for the step GEMMs
// (a step multiplies only batch rows by R, so packing it per call would cost as much as the product).
template <RecurrentCell kCell>
class ForwardKernel final : public OpKernel {
 public:
  explicit ForwardKernel(const KernelInitContext& init) {
    const RecurrentSpec s = ParseRecurrentSpec(kCell, init.attrs(), init.node().Describe());
    PackRecurrentWeights(kCell, s, init.constant_input(kW), init.constant_input(kR), w_packed_, r_packed_);
  }
  void Compute(KernelContext& ctx) override {
    DispatchFloat(ctx.input(kX).dtype(), [&](auto tag) {
      RecurrentForward<typename decltype(tag)::type>(ctx, kCell, r_packed_.empty() ? nullptr : &r_packed_,
                                                     w_packed_.empty() ? nullptr : &w_packed_);
    });
  }

 private:
  std::vector<PackedMatrix> r_packed_, w_packed_;
};

// com.microsoft DynamicQuantizeLSTM: an LSTM whose W [D, I, 4H] and R [D, H, 4H] are 8-bit, with
// scales and zero points per direction ([D]) or per gate column ([D, 4H]). The weights are
// dequantized (once, when constant: the usual case) into LSTM's own [D, 4H, I] / [D, 4H, H] float
// layout and the float LSTM runs. onnxruntime also quantizes the activations at each step; this
// keeps them in float, so its outputs differ from ours by that rounding.
enum : size_t { kWScale = 8, kWZeroPoint = 9, kRScale = 10, kRZeroPoint = 11 };

Tensor DequantizeGateWeights(const Tensor& q, const Tensor& scale, const Tensor& zero_point, const char* name,
                             const std::string& node) {
  OF_REQUIRE(q.rank() == 3 && (q.dtype() == DType::kInt8 || q.dtype() == DType::kUInt8) && zero_point.dtype() == q.dtype() &&
                 scale.dtype() == DType::kFloat32,
             node, ": ", name, " must be 3-D int8/uint8 with float scales and zero points of its type");
  const int64_t D = q.dim(0), K = q.dim(1), G = q.dim(2);
  OF_REQUIRE((scale.numel() == D || scale.numel() == D * G) && zero_point.numel() == scale.numel(), node, ": ", name,
             "'s scale and zero point must both have ", D, " (per direction) or ", D * G, " (per column) entries");
  const bool per_column = scale.numel() == D * G;
  Tensor out = Tensor::Uninitialized(DType::kFloat32, {D, G, K});
  float* o = out.data<float>();
  for (int64_t d = 0; d < D; ++d)
    for (int64_t g = 0; g < G; ++g) {
      const int64_t at = per_column ? d * G + g : d;
      const float sc = scale.data<float>()[at];
      OF_REQUIRE(std::isfinite(sc) && sc != 0.0f, node, ": ", name, "'s scale ", sc, " must be finite and nonzero");
      const int32_t zp = integer_gemm::ByteAt(zero_point.dtype(), zero_point.raw(), at);
      for (int64_t k = 0; k < K; ++k)
        o[(d * G + g) * K + k] = static_cast<float>(integer_gemm::ByteAt(q.dtype(), q.raw(), (d * K + k) * G + g) - zp) * sc;
    }
  return out;
}

class DynamicQuantizeLstmKernel final : public OpKernel {
 public:
  explicit DynamicQuantizeLstmKernel(const KernelInitContext& init) {
    const Tensor* w = init.constant_input(kW);
    const Tensor* r = init.constant_input(kR);
    const Tensor* ws = init.constant_input(kWScale);
    const Tensor* wz = init.constant_input(kWZeroPoint);
    const Tensor* rs = init.constant_input(kRScale);
    const Tensor* rz = init.constant_input(kRZeroPoint);
    if (!(w && r && ws && wz && rs && rz)) return;
    const std::string node = init.node().Describe();
    weights_[0] = DequantizeGateWeights(*w, *ws, *wz, "W", node);
    weights_[1] = DequantizeGateWeights(*r, *rs, *rz, "R", node);
    const RecurrentSpec s = ParseRecurrentSpec(RecurrentCell::kLstm, init.attrs(), node);
    PackRecurrentWeights(RecurrentCell::kLstm, s, &weights_[0], &weights_[1], w_packed_, r_packed_);
  }
  void Compute(KernelContext& ctx) override {
    const std::string& node = ctx.node_desc();
    OF_REQUIRE(ctx.input(kX).dtype() == DType::kFloat32, node, ": X must be float32");
    if (weights_[0].defined()) {
      RecurrentForward<float>(ctx, RecurrentCell::kLstm, r_packed_.empty() ? nullptr : &r_packed_,
                              w_packed_.empty() ? nullptr : &w_packed_, weights_);
      return;
    }
    const Tensor weights[2] = {
        DequantizeGateWeights(ctx.input(kW), ctx.input(kWScale), ctx.input(kWZeroPoint), "W", node),
        DequantizeGateWeights(ctx.input(kR), ctx.input(kRScale), ctx.input(kRZeroPoint), "R", node)};
    RecurrentForward<float>(ctx, RecurrentCell::kLstm, nullptr, nullptr, weights);
  }

 private:
  Tensor weights_[2];
  std::vector<PackedMatrix> r_packed_, w_packed_;
};

template <RecurrentCell kCell>
void BackwardKernel(KernelContext& ctx) {
  DispatchFloat(ctx.input(kX).dtype(), [&](auto tag) { RecurrentBackward<typename decltype(tag)::type>(ctx, kCell); });
}

ONEFLOW_KERNEL_CLASS(RNN, ForwardKernel<RecurrentCell::kRnn>);
ONEFLOW_KERNEL_CLASS(GRU, ForwardKernel<RecurrentCell::kGru>);
ONEFLOW_KERNEL_CLASS(LSTM, ForwardKernel<RecurrentCell::kLstm>);
ONEFLOW_KERNEL_CLASS(MsDynamicQuantizeLSTM, DynamicQuantizeLstmKernel);
ONEFLOW_KERNEL(RNNGrad, BackwardKernel<RecurrentCell::kRnn>);
ONEFLOW_KERNEL(GRUGrad, BackwardKernel<RecurrentCell::kGru>);
ONEFLOW_KERNEL(LSTMGrad, BackwardKernel<RecurrentCell::kLstm>);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
