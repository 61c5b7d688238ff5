// ai.oneflow::ReduceSumToShape on large f32 tensors with 1 and 2 threads against a naive double
// loop (the bias-gradient path splits columns across threads), and its bad-shape errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/session.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

Graph SumToShapeGraph(const Shape& xs, const Shape& ys) {
  Graph g;
  g.opset_imports[""] = 17;
  g.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
  int x = g.AddValue("x", TensorType::Of(DType::kFloat32, xs));
  g.inputs.push_back(x);
  Tensor shape(DType::kInt64, Shape{static_cast<int64_t>(ys.size())});
  std::copy(ys.begin(), ys.end(), shape.data<int64_t>());
  int s = g.AddConstant("shape", shape);
  Node n;
  n.op_type = "ReduceSumToShape";
  n.domain = kOneflowDomain;
  n.opset = kOneflowDomainVersion;
  n.inputs = {x, s};
  n.outputs = {g.AddValue("y")};
  g.nodes.push_back(n);
  g.outputs.push_back(n.outputs[0]);
  PrepareGraph(g);
  return g;
}

TEST(ReduceSumToShape, MatchesNaiveSums) {
  struct Case { Shape xs, ys; };
  const Case cases[] = {{{512, 1024}, {1024}}, {{8, 128, 256}, {256}}, {{64, 3000}, {64, 1}},
                        {{4, 30, 50}, {4, 1, 50}}, {{7, 9, 11}, {1, 1}}, {{300, 2, 400}, {2, 1}}};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const Case& c : cases) {
    Tensor x(DType::kFloat32, c.xs);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
    // Naive: each X element added to the Y element its broadcast index maps to.
    Shape yp(c.xs.size() - c.ys.size(), 1);
    yp.insert(yp.end(), c.ys.begin(), c.ys.end());
    std::vector<double> want(static_cast<size_t>(NumElements(c.ys)), 0.0);
    std::vector<int64_t> idx(c.xs.size(), 0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t o = 0;
      for (size_t k = 0; k < c.xs.size(); ++k) o = o * yp[k] + (yp[k] == 1 ? 0 : idx[k]);
      want[static_cast<size_t>(o)] += x.data<float>()[i];
      for (size_t k = c.xs.size(); k-- > 0;) {
        if (++idx[k] < c.xs[k]) break;
        idx[k] = 0;
      }
    }
    for (int threads : {1, 2}) {
      SessionOptions o;
      o.intra_op_threads = threads;
      o.optimization_level = 0;
      Tensor y = Session(SumToShapeGraph(c.xs, c.ys), o).Run({{"x", x}}, {})[0].second;
      ASSERT_EQ(y.shape(), c.ys);
      for (int64_t i = 0; i < y.numel(); ++i)
        ASSERT_NEAR(y.data<float>()[i], want[static_cast<size_t>(i)], 1e-4 * (1 + std::fabs(want[static_cast<size_t>(i)])))
            << ShapeToString(c.xs) << " -> " << ShapeToString(c.ys) << " element " << i << " threads " << threads;
    }
  }
}

TEST(ReduceSumToShape, RejectsShapesThatDoNotBroadcast) {
  SessionOptions o;
  o.optimization_level = 0;
  for (const auto& [xs, ys] : std::vector<std::pair<Shape, Shape>>{{{4, 3}, {2}}, {{3}, {2, 3}}}) {
    try {
      Session(SumToShapeGraph(xs, ys), o).Run({{"x", Tensor(DType::kFloat32, xs)}}, {});
      ADD_FAILURE() << "no error for " << ShapeToString(xs) << " -> " << ShapeToString(ys);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find("ReduceSumToShape"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace oneflow
