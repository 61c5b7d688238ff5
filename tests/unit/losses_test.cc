// AppendLoss (graph/losses.h): each loss and reduction against plain loops, its gradient through
// BuildGradients against the closed form, the labels input's type, and the bad-input errors.
#include <gtest/gtest.h>

#include <cmath>

#include "../graph_builder.h"
#include "engine/session.h"
#include "graph/autodiff.h"
#include "graph/losses.h"
#include "gradcheck.h"
#include "../test_support.h"

namespace oneflow {
namespace {

using testing::Random;

// pred = Identity(p) for a float64 input p of `shape`.
Graph PredictionGraph(const Shape& shape) {
  test_util::GraphBuilder b;
  return b.Done(b.Op("Identity", {b.Input("p", DType::kFloat64, shape)}, "pred"));
}

TEST(AppendLoss, RegressionLossesMatchLoops) {
  for (LossKind kind : {LossKind::kMeanSquaredError, LossKind::kL1}) {
    for (LossReduction red : {LossReduction::kMean, LossReduction::kSum}) {
      Graph g = PredictionGraph({4, 3});
      const std::string loss = AppendLoss(g, kind, "pred", "target", red);
      const int lab = g.FindValue("target");
      ASSERT_NE(lab, kNoValue);
      EXPECT_EQ(g.values[static_cast<size_t>(lab)].type.ToString(), "float64[4,3]");
      GradientInfo info = BuildGradients(g, loss, {"p"});
      Tensor p = Random({4, 3}, -1, 1, 1), y = Random({4, 3}, -1, 1, 2);
      auto out = test_util::RunGraph(g, {{"p", p}, {"target", y}}, {loss, info.gradients.at("p")}, 2);
      double want = 0;
      const double scale = red == LossReduction::kMean ? 1.0 / 12 : 1.0;
      for (int i = 0; i < 12; ++i) {
        const double d = p.data<double>()[i] - y.data<double>()[i];
        want += kind == LossKind::kL1 ? std::fabs(d) : d * d;
        const double g_want = (kind == LossKind::kL1 ? (d > 0 ? 1.0 : -1.0) : 2 * d) * scale;
        EXPECT_NEAR(out[1].data<double>()[i], g_want, 1e-12) << i << " kind " << static_cast<int>(kind) << " red " << static_cast<int>(red);
      }
      EXPECT_NEAR(out[0].data<double>()[0], want * scale, 1e-12);
    }
  }
}

TEST(AppendLoss, SoftmaxCrossEntropyMatchesLoops) {
  for (LossReduction red : {LossReduction::kMean, LossReduction::kSum}) {
    Graph g = PredictionGraph({5, 4});
    const std::string loss = AppendLoss(g, LossKind::kSoftmaxCrossEntropy, "pred", "labels", red);
    EXPECT_EQ(g.values[static_cast<size_t>(g.FindValue("labels"))].type.ToString(), "int64[5]");
    GradientInfo info = BuildGradients(g, loss, {"p"});
    Tensor p = Random({5, 4}, -2, 2, 3);
    Tensor labels = testing::Int64s({5}, {0, 3, 1, 1, 2});
    auto out = test_util::RunGraph(g, {{"p", p}, {"labels", labels}}, {loss, info.gradients.at("p")}, 2);
    const double scale = red == LossReduction::kMean ? 1.0 / 5 : 1.0;
    double want = 0;
    for (int i = 0; i < 5; ++i) {
      double z = 0;
      for (int k = 0; k < 4; ++k) z += std::exp(p.data<double>()[i * 4 + k]);
      const int64_t l = labels.data<int64_t>()[i];
      want -= p.data<double>()[i * 4 + l] - std::log(z);
      for (int k = 0; k < 4; ++k) {
        const double g_want = (std::exp(p.data<double>()[i * 4 + k]) / z - (k == l ? 1.0 : 0.0)) * scale;
        EXPECT_NEAR(out[1].data<double>()[i * 4 + k], g_want, 1e-12);
      }
    }
    EXPECT_NEAR(out[0].data<double>()[0], want * scale, 1e-12);
  }
}

TEST(AppendLoss, BadInputsAreRefusedAndLeaveTheGraphAlone) {
  Graph g = PredictionGraph({4});
  const size_t nodes = g.nodes.size();
  auto code = [](const std::function<void()>& f) { return test_util::ErrorCodeOf(f); };
  EXPECT_EQ(code([&] { AppendLoss(g, LossKind::kL1, "nope", "y"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { AppendLoss(g, LossKind::kL1, "pred", "p"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { AppendLoss(g, LossKind::kSoftmaxCrossEntropy, "pred", "y"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { ParseLossKind("hinge"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code([&] { ParseLossReduction("none"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ParseLossKind("mse"), LossKind::kMeanSquaredError);
  EXPECT_EQ(g.nodes.size(), nodes);
  EXPECT_EQ(g.FindValue("y"), kNoValue);
}

}  // namespace
}  // namespace oneflow
