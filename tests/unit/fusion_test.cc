// Fusion pass (passes/fusion.cc): Gelu spelled out with Erf becomes one Gelu, then the
// epilogue of the MatMul producing its input; SiLU spelled x * Sigmoid(x) becomes a Swish in the
// conv's epilogue; outputs match a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../graph_builder.h"
#include "engine/session.h"

namespace oneflow {
namespace {

Tensor Scalar(float v) {
  Tensor t(DType::kFloat32, Shape{});
  t.data<float>()[0] = v;
  return t;
}

struct GeluGraph : test_util::GraphBuilder {
  Tensor w, bias;
};

enum class Form { kDivThenHalfLast, kMulInvSqrt2ThenHalfFirst };

// X[4,8] @ W[8,16] + b, then Gelu in the given spelling. `erf_is_output` also returns the Erf
// result, which must block the rewrite (the intermediate is observable).
GeluGraph Build(Form form, bool erf_is_output) {
  GeluGraph b;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.5f, 1.5f);
  b.w = Tensor(DType::kFloat32, {8, 16});
  b.bias = Tensor(DType::kFloat32, {16});
  for (int64_t i = 0; i < b.w.numel(); ++i) b.w.data<float>()[i] = d(rng);
  for (int64_t i = 0; i < b.bias.numel(); ++i) b.bias.data<float>()[i] = d(rng);
  const int x = b.Input("X", DType::kFloat32, {4, 8});
  const int h = b.Node("Add", {b.Node("MatMul", {x, b.Const("W", b.w)}), b.Const("B", b.bias)});
  int erf, y;
  if (form == Form::kDivThenHalfLast) {
    erf = b.Node("Erf", {b.Node("Div", {h, b.Const("sqrt2", Scalar(std::sqrt(2.0f)))})});
    const int g1 = b.Node("Add", {erf, b.Const("one", Scalar(1.0f))});
    y = b.Node("Mul", {b.Node("Mul", {h, g1}), b.Const("half", Scalar(0.5f))});
  } else {
    erf = b.Node("Erf", {b.Node("Mul", {b.Const("inv_sqrt2", Scalar(0.70710678f)), h})});
    const int g1 = b.Node("Add", {b.Const("one", Scalar(1.0f)), erf});
    y = b.Node("Mul", {b.Node("Mul", {h, b.Const("half", Scalar(0.5f))}), g1});
  }
  b.g.outputs = {y};
  if (erf_is_output) b.g.outputs.push_back(erf);
  return b;
}

int CountOps(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

void CheckAgainstReference(Form form, bool erf_is_output) {
  GeluGraph b = Build(form, erf_is_output);
  PrepareGraph(b.g);
  Session s(b.g, SessionOptions{1, 2});
  Tensor x(DType::kFloat32, {4, 8});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(0.7 * static_cast<double>(i)) * 2.0f;
  const Tensor y = s.Run({{"X", x}}, {})[0].second;
  ASSERT_EQ(y.shape(), (Shape{4, 16}));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 16; ++c) {
      double h = b.bias.data<float>()[c];
      for (int k = 0; k < 8; ++k) h += double(x.data<float>()[r * 8 + k]) * b.w.data<float>()[k * 16 + c];
      const double want = 0.5 * h * (1.0 + std::erf(h / std::sqrt(2.0)));
      ASSERT_NEAR(y.data<float>()[r * 16 + c], want, 1e-5 * (1.0 + std::fabs(want))) << r << "," << c;
    }
  const Graph& opt = s.optimized();
  if (erf_is_output) {
    // No Gelu: the spelled-out chain stays (its pieces may become FusedElementwise nodes, one of
    // them producing the observable Erf result).
    EXPECT_EQ(CountOps(opt, "Erf") + CountOps(opt, "FusedElementwise"), 2);
    EXPECT_EQ(CountOps(opt, "Gelu"), 0);
    for (const Node& n : opt.nodes) {
      if (n.op_type == "FusedMatMul") {
        EXPECT_EQ(n.attrs.GetString("activation", "None"), "None");
      }
    }
  } else {
    EXPECT_EQ(CountOps(opt, "Erf"), 0);
    EXPECT_EQ(CountOps(opt, "Mul") + CountOps(opt, "Div") + CountOps(opt, "Add"), 0);
    ASSERT_EQ(CountOps(opt, "FusedMatMul"), 1);
    for (const Node& n : opt.nodes)
      if (n.op_type == "FusedMatMul") {
        EXPECT_EQ(n.attrs.GetString("activation"), "Gelu");
      }
  }
}

TEST(Fusion, GeluFromErfWithDivAndTrailingHalf) { CheckAgainstReference(Form::kDivThenHalfLast, false); }
TEST(Fusion, GeluFromErfWithMulAndLeadingHalf) { CheckAgainstReference(Form::kMulInvSqrt2ThenHalfFirst, false); }
TEST(Fusion, GeluPatternKeptWhenAnIntermediateIsObservable) { CheckAgainstReference(Form::kDivThenHalfLast, true); }

// A training graph feeds its parameters as inputs: the bias Add and the Relu still fuse into the
// MatMul when the bias is a graph input of static shape [N].
TEST(Fusion, MatMulBiasFromAGraphInputFuses) {
  test_util::GraphBuilder b;
  const int x = b.Input("X", DType::kFloat32, {3, 5});
  const int w = b.Input("W", DType::kFloat32, {5, 4});
  const int bias = b.Input("B", DType::kFloat32, {4});
  Graph& g = b.Done(b.Node("Relu", {b.Node("Add", {b.Node("MatMul", {x, w}), bias})}));
  Session s(g, SessionOptions{1, 2});
  ASSERT_EQ(CountOps(s.optimized(), "FusedMatMul"), 1);
  EXPECT_EQ(CountOps(s.optimized(), "Add") + CountOps(s.optimized(), "Relu"), 0);
  Tensor xt(DType::kFloat32, {3, 5}), wt(DType::kFloat32, {5, 4}), bt(DType::kFloat32, {4});
  for (int64_t i = 0; i < 15; ++i) xt.data<float>()[i] = static_cast<float>(std::cos(0.9 * static_cast<double>(i)));
  for (int64_t i = 0; i < 20; ++i) wt.data<float>()[i] = static_cast<float>(std::sin(1.3 * static_cast<double>(i)));
  for (int64_t i = 0; i < 4; ++i) bt.data<float>()[i] = 0.25f * static_cast<float>(i) - 0.4f;
  const Tensor y = s.Run({{"X", xt}, {"W", wt}, {"B", bt}}, {})[0].second;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) {
      double h = bt.data<float>()[c];
      for (int k = 0; k < 5; ++k) h += double(xt.data<float>()[r * 5 + k]) * wt.data<float>()[k * 4 + c];
      EXPECT_NEAR(y.data<float>()[r * 4 + c], std::max(h, 0.0), 1e-5) << r << "," << c;
    }
}

// SiLU as torch exports it after Conv + BatchNormalization (EfficientNet, YOLO): x * Sigmoid(x),
// in both operand orders, becomes a Swish in the conv's epilogue, with no Sigmoid, Mul or
// transpose left between convs; the output matches a double-precision reference.
void CheckSiluAfterConv(bool sigmoid_first) {
  test_util::GraphBuilder b;
  const int64_t C = 3, M = 4, H = 5, W = 6;
  Tensor w(DType::kFloat32, {M, C, 3, 3}), scale(DType::kFloat32, {M}), shift(DType::kFloat32, {M}),
      mean(DType::kFloat32, {M}), var(DType::kFloat32, {M});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = static_cast<float>(std::sin(1.7 * double(i)) * 0.4);
  for (int64_t m = 0; m < M; ++m) {
    scale.data<float>()[m] = 0.8f + 0.1f * float(m);
    shift.data<float>()[m] = 0.3f - 0.2f * float(m);
    mean.data<float>()[m] = 0.05f * float(m);
    var.data<float>()[m] = 0.9f + 0.05f * float(m);
  }
  const int x = b.Input("X", DType::kFloat32, {1, C, H, W});
  AttrMap conv_attrs;
  conv_attrs.set("pads", Attribute::Ints({1, 1, 1, 1}));
  const int conv = b.Node("Conv", {x, b.Const("W", w)}, conv_attrs);
  const int bn = b.Node("BatchNormalization", {conv, b.Const("scale", scale), b.Const("shift", shift),
                                               b.Const("mean", mean), b.Const("var", var)});
  const int sig = b.Node("Sigmoid", {bn});
  Graph& g = b.Done(sigmoid_first ? b.Node("Mul", {sig, bn}) : b.Node("Mul", {bn, sig}));
  Session s(g, SessionOptions{1, 2});
  const Graph& opt = s.optimized();
  EXPECT_EQ(CountOps(opt, "Sigmoid") + CountOps(opt, "Mul") + CountOps(opt, "FusedElementwise"), 0);
  ASSERT_EQ(CountOps(opt, "FusedConv"), 1);
  for (const Node& n : opt.nodes)
    if (n.op_type == "FusedConv") {
      EXPECT_EQ(n.attrs.GetString("activation"), "Swish");
    }
  Tensor xt(DType::kFloat32, {1, C, H, W});
  for (int64_t i = 0; i < xt.numel(); ++i) xt.data<float>()[i] = static_cast<float>(std::cos(0.37 * double(i)) * 2.0);
  const Tensor y = s.Run({{"X", xt}}, {})[0].second;
  ASSERT_EQ(y.shape(), (Shape{1, M, H, W}));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t r = 0; r < H; ++r)
      for (int64_t c = 0; c < W; ++c) {
        double acc = 0;
        for (int64_t ci = 0; ci < C; ++ci)
          for (int64_t kr = 0; kr < 3; ++kr)
            for (int64_t kc = 0; kc < 3; ++kc) {
              const int64_t ir = r + kr - 1, ic = c + kc - 1;
              if (ir < 0 || ir >= H || ic < 0 || ic >= W) continue;
              acc += double(xt.data<float>()[(ci * H + ir) * W + ic]) * w.data<float>()[((m * C + ci) * 3 + kr) * 3 + kc];
            }
        const double v = (acc - mean.data<float>()[m]) / std::sqrt(double(var.data<float>()[m]) + 1e-5) *
                             scale.data<float>()[m] + shift.data<float>()[m];
        const double want = v / (1.0 + std::exp(-v));
        EXPECT_NEAR(y.data<float>()[(m * H + r) * W + c], want, 1e-5 * (1.0 + std::fabs(want))) << m << "," << r << "," << c;
      }
}

TEST(Fusion, SiluAfterConvBecomesTheConvEpilogue) { CheckSiluAfterConv(false); }
TEST(Fusion, SiluWithSigmoidFirstBecomesTheConvEpilogue) { CheckSiluAfterConv(true); }

}  // namespace
}  // namespace oneflow
