// NodeRunner's reuse of runtime shape inference: outputs that depend on input data (Reshape's
// shape input) are inferred on every run, and a change of input shapes is never served from the
// previous run's types. Results are checked against values computed here by hand.
#include <gtest/gtest.h>

#include "../graph_builder.h"
#include "engine/executor.h"
#include "engine/session.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

// Opset-18 graphs for an Executor: nodes named after their outputs; Done returns the shared graph.
struct Builder : test_util::GraphBuilder {
  Builder() : GraphBuilder(18) {}
  std::shared_ptr<const Graph> Done(int output) { return std::make_shared<const Graph>(GraphBuilder::Done(output)); }
};

Tensor Floats(const Shape& shape, float first) {
  Tensor t(DType::kFloat32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = first + static_cast<float>(i);
  return t;
}

TEST(NodeRunner, DataDependentShapeIsInferredEveryRun) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, {Dim::Known(6)}));
  const int s = b.Input("s", TensorType::Of(DType::kInt64, {Dim::Known(2)}));
  // Relu after the Reshape: a shape-only node fed by a data-dependent one.
  Executor ex(b.Done(b.Op("Relu", {b.Op("Reshape", {x, s}, "r")}, "y")), 1);
  const Tensor in = Floats({6}, -2.0f);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{2, 3}, {3, 2}, {6, 1}, {2, 3}}) {
    std::vector<Tensor> out = ex.Run({in, test_util::Ints(shape)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), Shape(shape.begin(), shape.end()));
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out[0].data<float>()[i], std::max(0.0f, -2.0f + static_cast<float>(i)));
  }
}

TEST(NodeRunner, NewInputShapesAreInferredAgain) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, {Dim::Symbol("n"), Dim::Known(3)}));
  const int w = b.Input("w", TensorType::Of(DType::kFloat32, {Dim::Known(3), Dim::Symbol("m")}));
  Executor ex(b.Done(b.Op("MatMul", {x, w}, "y")), 2);
  for (const auto& [n, m] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {4, 2}, {4, 5}, {1, 2}}) {
    const Tensor a = Floats({n, 3}, 1.0f), bw = Floats({3, m}, -1.0f);
    std::vector<Tensor> out = ex.Run({a, bw});
    ASSERT_EQ(out[0].shape(), (Shape{n, m}));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        float ref = 0.0f;
        for (int64_t k = 0; k < 3; ++k) ref += a.data<float>()[i * 3 + k] * bw.data<float>()[k * m + j];
        EXPECT_EQ(out[0].data<float>()[i * m + j], ref) << n << "x" << m << " at " << i << "," << j;
      }
  }
}

// The NHWC FusedConv of the layout pass infers its output from types alone, so NodeRunner caches
// it (reading the weights' values made every run repeat the inference), and the shape is right.
TEST(NodeRunner, NhwcFusedConvInferenceReadsNoValues) {
  const OpSchema* schema = OpRegistry::Global().Find(kOneflowDomain, "FusedConv", 1);
  ASSERT_NE(schema, nullptr);
  AttrMap attrs;
  attrs.set("layout", Attribute::String("NHWC"));
  attrs.set("pads", Attribute::Ints({1, 1, 1, 1}));
  const std::string desc = "FusedConv 'c'";
  InferContext ctx(attrs, 1, desc, 1);
  const TensorType x = TensorType::Of(DType::kFloat32, Shape{1, 32, 30, 3});
  const Tensor w = Floats({16, 3, 3, 3}, 0.0f), bias = Floats({16}, 0.0f);
  const TensorType wt = TensorType::Of(DType::kFloat32, w.shape()), bt = TensorType::Of(DType::kFloat32, bias.shape());
  ctx.AddInput(&x, nullptr);
  ctx.AddInput(&wt, &w);
  ctx.AddInput(&bt, &bias);
  schema->infer(ctx);
  EXPECT_FALSE(ctx.read_input_values());
  EXPECT_EQ(ctx.output(0).ToShape(), (Shape{1, 32, 30, 16}));
}

}  // namespace
}  // namespace oneflow
