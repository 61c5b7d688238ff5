// Walks the op registry and checks the facts each op carries on its schema (graph/op_schema.h):
// input positions for shape-setting, launch-setting and type-only inputs, mixed-precision classes
// and the planner's arithmetic estimate. References are the ONNX operator specification (which
// inputs' values set an output's shape) and hand-computed multiply-add counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "graph/op_schema.h"
#include "../graph_builder.h"
#include "kernels/kernel.h"
#include "plan/plan.h"

namespace oneflow {
namespace {

TEST(OpFacts, DeclaredInputPositionsExistAndDoNotOverlap) {
  for (const OpSchema* s : OpRegistry::Global().All()) {
    std::set<size_t> seen;
    for (const auto* list : {&s->shape_inputs, &s->launch_inputs, &s->type_only_inputs}) {
      for (size_t i : *list) {
        EXPECT_LT(i, s->inputs.size()) << s->domain << "::" << s->name << " marks input " << i;
        EXPECT_TRUE(seen.insert(i).second) << s->domain << "::" << s->name << " marks input " << i << " twice";
      }
    }
  }
}

// The ONNX specification (opset 13+ forms): inputs whose values, not only their types, determine
// an output's shape. Versions where the value is an attribute (Reduce* before 18) declare none.
TEST(OpFacts, ShapeInputsFollowTheOnnxSpecification) {
  const std::map<std::string, std::vector<size_t>> spec = {
      {"Reshape", {1}},      {"Expand", {1}},           {"Tile", {1}},      {"Slice", {1, 2, 3, 4}},
      {"Pad", {1, 3}},       {"ConstantOfShape", {0}},  {"Range", {0, 1, 2}}, {"Squeeze", {1}},
      {"Unsqueeze", {1}},    {"TopK", {1}},             {"OneHot", {1}},    {"Resize", {1, 2, 3}},
      {"Split", {1}},        {"CenterCropPad", {1}},    {"ReduceSum", {1}},
  };
  const OpRegistry& r = OpRegistry::Global();
  for (const auto& [op, inputs] : spec) {
    const OpSchema* s = r.Find("", op, kMaxOnnxOpset);
    ASSERT_NE(s, nullptr) << op;
    std::vector<size_t> got = s->shape_inputs;
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, inputs) << op;
  }
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"}) {
    EXPECT_TRUE(r.Find("", op, 17)->shape_inputs.empty()) << op << "-17 takes axes as an attribute";
    EXPECT_EQ(r.Find("", op, 18)->shape_inputs, std::vector<size_t>{1}) << op << "-18";
  }
  // Values never read at all, and launch parameters that set no shape.
  EXPECT_EQ(r.Find("", "Shape", kMaxOnnxOpset)->type_only_inputs, std::vector<size_t>{0});
  EXPECT_EQ(r.Find("", "Size", kMaxOnnxOpset)->type_only_inputs, std::vector<size_t>{0});
  EXPECT_EQ(r.Find("", "CumSum", kMaxOnnxOpset)->launch_inputs, std::vector<size_t>{1});
  EXPECT_TRUE(r.Find("", "CumSum", kMaxOnnxOpset)->shape_inputs.empty());
}

// Ops whose output is their input's bytes under a new shape (ONNX: they never change data):
// views run no kernel on any device; no other op is one.
TEST(OpFacts, ViewsAreTheShapeOnlyOps) {
  const std::set<std::string> views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};
  for (const OpSchema* s : OpRegistry::Global().All())
    EXPECT_EQ(s->view, s->domain.empty() && views.count(s->name) > 0) << s->domain << "::" << s->name;
  for (const std::string& op : views)
    for (DeviceType d : {DeviceType::kCpu, DeviceType::kCuda})
      EXPECT_EQ(KernelRegistry::Global().Find("", op, d), nullptr) << op << ": a view registers no kernel";
}

TEST(OpFacts, PrecisionClasses) {
  const OpRegistry& r = OpRegistry::Global();
  auto cls = [&](const char* op) { return r.Find("", op, kMaxOnnxOpset)->precision; };
  for (const char* op : {"MatMul", "Gemm", "Conv", "ConvTranspose"}) EXPECT_EQ(cls(op), PrecisionClass::kLow) << op;
  for (const char* op : {"Add", "Mul", "Transpose", "Reshape", "Relu", "Gelu"})
    EXPECT_EQ(cls(op), PrecisionClass::kFollow) << op;
  // Reductions, normalizations and exponentials stay in f32.
  for (const char* op : {"ReduceSum", "Softmax", "LayerNormalization", "Exp", "Log"})
    EXPECT_EQ(cls(op), PrecisionClass::kKeep) << op;
}

Node ResolvedNode(const char* op, AttrMap attrs = {}) {
  Node n;
  n.op_type = op;
  n.opset = kMaxOnnxOpset;
  n.attrs = std::move(attrs);
  n.schema = OpRegistry::Global().Find("", op, kMaxOnnxOpset);
  return n;
}

TEST(OpFacts, FlopsEstimates) {
  // [2, 5, 3] x [3, 4]: 2*5*4 outputs, 3 multiply-adds each.
  EXPECT_DOUBLE_EQ(EstimateFlops(ResolvedNode("MatMul"), {{2, 5, 3}, {3, 4}}, {{2, 5, 4}}), 2.0 * 40 * 3);
  AttrMap trans_a;
  trans_a.set("transA", Attribute::Int(1));
  // A^T with A [7, 6]: k = 7.
  EXPECT_DOUBLE_EQ(EstimateFlops(ResolvedNode("Gemm", trans_a), {{7, 6}, {7, 9}}, {{6, 9}}), 2.0 * 54 * 7);
  EXPECT_DOUBLE_EQ(EstimateFlops(ResolvedNode("Gemm"), {{6, 7}, {7, 9}}, {{6, 9}}), 2.0 * 54 * 7);
  // W [8, 4, 3, 3]: 4*3*3 multiply-adds per output element.
  EXPECT_DOUBLE_EQ(EstimateFlops(ResolvedNode("Conv"), {{1, 4, 5, 5}, {8, 4, 3, 3}}, {{1, 8, 3, 3}}), 2.0 * 72 * 36);
  // Everything else: about one operation per output element.
  EXPECT_DOUBLE_EQ(EstimateFlops(ResolvedNode("Relu"), {{3, 4}}, {{3, 4}}), 12.0);
}

// The planner's memory-traffic estimate counts the bytes a kernel touches: CastLike reads only the
// type of its target (TypeOnlyInput, as Shape and Size do), so CastLike(x f32 [1024, 1024],
// t f16 [1024, 1024]) moves 4 MiB in and 2 MiB out, not another 2 MiB for t.
TEST(OpFacts, BytesEstimateSkipsTypeOnlyInputs) {
  test_util::GraphBuilder gb;
  const int x = gb.Input("x", DType::kFloat32, {1024, 1024});
  const int t = gb.Input("t", DType::kFloat16, {1024, 1024});
  const int y = gb.Node("CastLike", {x, t});
  gb.g.outputs = {y};
  PrepareGraph(gb.g);
  PlanOptions o;
  o.placement = Placement::Parse("cpu:0");
  const Plan plan = MakePlan(gb.g, o);
  ASSERT_EQ(plan.nodes.size(), 1u);
  const NodePlan& np = plan.nodes[0];
  const double mib = 1024.0 * 1024.0;
  EXPECT_NEAR(np.compute_seconds, 6 * mib / o.cost.memory_bytes_per_s + np.flops / o.cost.flops_per_s, 1e-12);
}

}  // namespace
}  // namespace oneflow
