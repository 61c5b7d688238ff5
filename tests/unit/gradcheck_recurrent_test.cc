// Finite-difference checks of backpropagation through time (RNN, GRU, LSTM; kernels/cpu/recurrent.cc)
// in f64: every float input (X, W, R, B, initial states, peepholes) against a loss over every
// output (Y, Y_h and Y_c), forward, reverse and bidirectional, with sequence_lens, both layouts,
// clip, linear_before_reset, input_forget and activations with alpha/beta.
#include "gradcheck.h"

namespace oneflow {
namespace testing {
namespace {

// seq 4, batch 3, input 5, hidden 3.
constexpr int64_t kSeq = 4, kBatch = 3, kInput = 5, kHidden = 3;

Tensor SeqLens(const std::vector<int32_t>& v) {
  Tensor t(DType::kInt32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int32_t>()[i] = v[i];
  return t;
}

// X, W, R, B, sequence_lens, initial_h (and for LSTM initial_c, P) of a layer with `gates`.
GradCheckCase Layer(const char* op, int gates, int dirs, bool layout1, bool with_lens, unsigned seed) {
  GradCheckCase c(op);
  c.opset = 14;
  const int64_t gh = gates * kHidden;
  const Shape x = layout1 ? Shape{kBatch, kSeq, kInput} : Shape{kSeq, kBatch, kInput};
  const Shape state = layout1 ? Shape{kBatch, dirs, kHidden} : Shape{dirs, kBatch, kHidden};
  c.Input("X", Random(x, -1, 1, seed))
      .Input("W", Random({dirs, gh, kInput}, -0.6, 0.6, seed + 1))
      .Input("R", Random({dirs, gh, kHidden}, -0.6, 0.6, seed + 2))
      .Input("B", Random({dirs, 2 * gh}, -0.5, 0.5, seed + 3));
  if (with_lens) c.Const("sequence_lens", SeqLens({4, 2, 0}));
  else c.Omitted();
  c.Input("initial_h", Random(state, -0.5, 0.5, seed + 4));
  if (gates == 4) c.Input("initial_c", Random(state, -0.5, 0.5, seed + 5)).Input("P", Random({dirs, 3 * kHidden}, -0.5, 0.5, seed + 6));
  c.num_outputs = gates == 4 ? 3 : 2;
  if (dirs == 2) c.Attr("direction", Attribute::String("bidirectional"));
  if (layout1) c.Attr("layout", Attribute::Int(1));
  return c;
}

GRADCHECK_TEST(RNN, ForwardTanh) {
  GradCheckCase c = Layer("RNN", 1, 1, false, false, 10);
  RunGradCheck(c);
}

GRADCHECK_TEST(RNN, BidirectionalLayout1SequenceLens) {
  GradCheckCase c = Layer("RNN", 1, 2, true, true, 20);
  c.Attr("activations", Attribute::Strings({"Softsign", "Elu"})).Attr("activation_alpha", Attribute::Floats({0.7f}));
  RunGradCheck(c);
}

GRADCHECK_TEST(RNN, ReverseAffineScaledTanh) {
  GradCheckCase c = Layer("RNN", 1, 1, false, true, 30);
  c.Attr("direction", Attribute::String("reverse")).Attr("activations", Attribute::Strings({"ScaledTanh"}))
      .Attr("activation_alpha", Attribute::Floats({1.3f})).Attr("activation_beta", Attribute::Floats({0.8f}));
  RunGradCheck(c);
}

GRADCHECK_TEST(GRU, Defaults) {
  GradCheckCase c = Layer("GRU", 3, 1, false, false, 40);
  RunGradCheck(c);
}

GRADCHECK_TEST(GRU, LinearBeforeResetBidirectionalSequenceLens) {
  GradCheckCase c = Layer("GRU", 3, 2, false, true, 50);
  c.Attr("linear_before_reset", Attribute::Int(1));
  RunGradCheck(c);
}

GRADCHECK_TEST(GRU, ReverseLayout1Softplus) {
  GradCheckCase c = Layer("GRU", 3, 1, true, true, 60);
  c.Attr("direction", Attribute::String("reverse")).Attr("activations", Attribute::Strings({"HardSigmoid", "Softplus"}))
      .Attr("activation_alpha", Attribute::Floats({0.3f})).Attr("activation_beta", Attribute::Floats({0.45f}));
  RunGradCheck(c);
}

GRADCHECK_TEST(LSTM, PeepholesBidirectionalSequenceLens) {
  GradCheckCase c = Layer("LSTM", 4, 2, false, true, 70);
  RunGradCheck(c);
}

GRADCHECK_TEST(LSTM, InputForgetLayout1) {
  GradCheckCase c = Layer("LSTM", 4, 1, true, false, 80);
  c.Attr("input_forget", Attribute::Int(1));
  RunGradCheck(c);
}

// A clip of 0.9 cuts some gate inputs (their gradient is zero there); the values are drawn so no
// gate input sits within the finite difference's step of the threshold.
GRADCHECK_TEST(LSTM, ClipReverseActivations) {
  GradCheckCase c = Layer("LSTM", 4, 1, false, false, 90);
  c.Attr("direction", Attribute::String("reverse")).Attr("clip", Attribute::Float(0.9f))
      .Attr("activations", Attribute::Strings({"Sigmoid", "LeakyRelu", "Tanh"}))
      .Attr("activation_alpha", Attribute::Floats({0.2f}));
  RunGradCheck(c);
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
