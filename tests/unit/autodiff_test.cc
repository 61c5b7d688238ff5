// The autodiff pass (graph/autodiff.h): errors (no rule on the path names the op, bad loss, bad
// wrt), skipped integer paths, summed fan-out, unreachable parameters, the saved-value list, and a
// small MLP whose gradients are compared with central differences of the whole graph.
#include <gtest/gtest.h>

#include <cmath>

#include "../graph_builder.h"
#include "engine/session.h"
#include "graph/autodiff.h"
#include "graph/grad_context.h"
#include "passes/passes.h"
#include "gradcheck.h"
#include "../test_support.h"

namespace oneflow {
namespace {

using testing::Random;

// Opset-18 graphs whose nodes are named after their outputs (Op) with trainable parameters (Param).
struct Builder : test_util::GraphBuilder {
  Builder() : GraphBuilder(18) {}
};

AttrMap NoKeep() { return MakeAttrs({{"keepdims", Attribute::Int(0)}}); }

TEST(Autodiff, OpWithoutRuleOnThePathIsNamed) {
  Builder b;
  int w = b.Param("w", Random({2, 3}));
  int e = b.Op("Exp", {w}, "e");
  int f = b.Op("Hardmax", {e}, "hard");  // float output, no gradient rule
  Graph& g = b.Done(b.Op("ReduceSum", {b.Op("Mul", {f, e}, "m")}, "loss", NoKeep()));
  const size_t nodes = g.nodes.size(), values = g.values.size();
  std::string msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { BuildGradients(g, "loss", {"w"}); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("Hardmax 'hard'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no gradient rule"), std::string::npos) << msg;
  EXPECT_EQ(g.nodes.size(), nodes);  // left unchanged
  EXPECT_EQ(g.values.size(), values);
}

TEST(Autodiff, NonDifferentiableInputOnThePathIsNamed) {
  Builder b;
  int x = b.Input("x", DType::kFloat64, {4});
  int lo = b.Param("lo", Tensor::Scalar(DType::kFloat64, -0.5));
  int c = b.Op("Clip", {x, lo}, "clipped");
  Graph& g = b.Done(b.Op("ReduceSum", {c}, "loss", NoKeep()));
  std::string msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { BuildGradients(g, "loss", {"lo"}); }, &msg), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("Clip 'clipped'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'lo'"), std::string::npos) << msg;
  // The same graph differentiates fine with respect to x.
  EXPECT_NO_THROW(BuildGradients(g, "loss", {"x"}));
}

TEST(Autodiff, LossMustBeAFloatScalar) {
  Builder b;
  int w = b.Param("w", Random({2, 3}));
  int e = b.Op("Exp", {w}, "e");
  int s = b.Op("ReduceSum", {e}, "rowsum", MakeAttrs({{"keepdims", Attribute::Int(1)}}));
  int am = b.Op("ArgMax", {e}, "am", MakeAttrs({{"keepdims", Attribute::Int(0)}}));
  Graph& g = b.Done(s);
  std::string msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { BuildGradients(g, "e", {"w"}); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("scalar"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float64[2,3]"), std::string::npos) << msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { BuildGradients(g, "am", {"w"}); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("float"), std::string::npos) << msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { BuildGradients(g, "nope", {"w"}); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_EQ(test_util::ErrorCodeOf([&] { BuildGradients(g, "rowsum", {"missing"}); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { BuildGradients(g, "rowsum", {"w", "w"}); }, &msg), ErrorCode::kInvalidArgument);
  // A [1,1]-shaped loss (one element) is accepted.
  Builder b2;
  int w2 = b2.Param("w", Random({2, 3}));
  Graph& g2 = b2.Done(b2.Op("ReduceSum", {w2}, "loss"));  // keepdims=1: [1,1]
  EXPECT_NO_THROW(BuildGradients(g2, "loss", {"w"}));
  (void)am;
}

// Runs `g` (level 0, one thread) and returns the named outputs.
using test_util::RunGraph;

TEST(Autodiff, IntegerPathsAreSkippedAndFanOutIsSummed) {
  // loss = sum(exp(w)) + sum(w * w) + sum(w * cast(argmax(w)))  (argmax: an int path, no gradient)
  Builder b;
  Tensor wv = testing::Doubles({3}, {0.3, -0.7, 1.1});
  int w = b.Param("w", wv);
  int t1 = b.Op("ReduceSum", {b.Op("Exp", {w}, "ew")}, "t1", NoKeep());
  int t2 = b.Op("ReduceSum", {b.Op("Mul", {w, w}, "ww")}, "t2", NoKeep());
  int am = b.Op("ArgMax", {w}, "am", MakeAttrs({{"keepdims", Attribute::Int(0)}}));
  int amf = b.Op("Cast", {am}, "amf", MakeAttrs({{"to", Attribute::Int(static_cast<int64_t>(DType::kFloat64))}}));
  int t3 = b.Op("ReduceSum", {b.Op("Mul", {w, amf}, "wa")}, "t3", NoKeep());
  Graph& g = b.Done(b.Op("Sum", {t1, t2, t3}, "loss"));
  GradientInfo info = BuildGradients(g, "loss", {"w"});
  ASSERT_EQ(info.gradients.at("w"), "w_grad");
  EXPECT_EQ(g.outputs.size(), info.num_forward_outputs + 1);
  Tensor grad = RunGraph(g, {}, {"w_grad"})[0];
  // argmax(w) = 2 -> d/dw = exp(w) + 2w + 2
  for (int i = 0; i < 3; ++i) {
    const double x = wv.data<double>()[i];
    EXPECT_NEAR(grad.data<double>()[i], std::exp(x) + 2 * x + 2.0, 1e-12) << i;
  }
}

TEST(Autodiff, UnreachableParameterGetsZeros) {
  Builder b;
  int w = b.Param("w", Random({3}));
  b.Param("unused", Random({2, 2}));
  Graph& g = b.Done(b.Op("ReduceSum", {w}, "loss", NoKeep()));
  GradientInfo info = BuildGradients(g, "loss", {"w", "unused"});
  ASSERT_EQ(info.unreachable, std::vector<std::string>{"unused"});
  auto out = RunGraph(g, {}, {info.gradients.at("w"), info.gradients.at("unused")});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out[0].data<double>()[i], 1.0);
  ASSERT_EQ(out[1].shape(), (Shape{2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[1].data<double>()[i], 0.0);
}

// A 2-layer MLP with a mean squared error; every parameter's gradient matches central differences
// of the whole graph, and the saved values are the activations backward reads.
TEST(Autodiff, MlpMatchesFiniteDifferences) {
  Builder b;
  int x = b.Input("x", DType::kFloat64, {4, 3});
  int w1 = b.Param("w1", Random({3, 5}, -1, 1, 1));
  int b1 = b.Param("b1", Random({5}, -1, 1, 2));
  int w2 = b.Param("w2", Random({5, 2}, -1, 1, 3));
  int b2 = b.Param("b2", Random({2}, -1, 1, 4));
  int target = b.Param("target", Random({4, 2}, -1, 1, 5));
  int h = b.Op("Tanh", {b.Op("Add", {b.Op("MatMul", {x, w1}, "xw1"), b1}, "pre1")}, "h");
  int y = b.Op("Add", {b.Op("MatMul", {h, w2}, "hw2"), b2}, "y");
  int d = b.Op("Sub", {y, target}, "diff");
  Graph& g = b.Done(b.Op("ReduceMean", {b.Op("Mul", {d, d}, "sq")}, "loss", NoKeep()));
  const std::vector<std::string> params{"w1", "b1", "w2", "b2"};
  Graph fwd = g;
  GradientInfo info = BuildGradients(g, "loss", params);
  EXPECT_EQ(info.first_backward_node, fwd.nodes.size());
  EXPECT_EQ(info.first_backward_value, fwd.values.size());
  EXPECT_EQ(info.num_forward_outputs, fwd.outputs.size());
  ASSERT_EQ(g.outputs.size(), fwd.outputs.size() + params.size());
  for (size_t k = 0; k < params.size(); ++k)  // gradient outputs in wrt order
    EXPECT_EQ(g.values[static_cast<size_t>(g.outputs[fwd.outputs.size() + k])].name, params[k] + "_grad");
  // Tanh's rule reads its output, MatMul's reads its operands, the square reads diff.
  for (const char* v : {"x", "h", "diff"})
    EXPECT_NE(std::find(info.saved_values.begin(), info.saved_values.end(), v), info.saved_values.end()) << v;
  EXPECT_EQ(std::find(info.saved_values.begin(), info.saved_values.end(), "w1"), info.saved_values.end());

  Tensor xv = Random({4, 3}, -1, 1, 9);
  std::vector<std::string> fetches;
  for (const auto& p : params) fetches.push_back(info.gradients.at(p));
  std::vector<Tensor> grads = RunGraph(g, {{"x", xv}}, fetches);
  for (size_t k = 0; k < params.size(); ++k) {
    const int id = fwd.FindValue(params[k]);
    for (int64_t i = 0; i < grads[k].numel(); ++i) {
      auto loss_at = [&](double delta) {
        Graph h2 = fwd;
        Tensor t = h2.values[static_cast<size_t>(id)].constant.Clone();
        t.data<double>()[i] += delta;
        h2.values[static_cast<size_t>(id)].constant = t;
        return RunGraph(h2, {{"x", xv}}, {"loss"})[0].data<double>()[0];
      };
      const double numeric = (loss_at(1e-6) - loss_at(-1e-6)) / 2e-6;
      EXPECT_NEAR(grads[k].data<double>()[i], numeric, 1e-7 * (1 + std::fabs(numeric))) << params[k] << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace oneflow
