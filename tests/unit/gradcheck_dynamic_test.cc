// Gradient checks with symbolic input shapes: the rules' run-time shape paths (Shape nodes,
// ReduceSumToShape to a computed shape, Concat offsets computed at run time, dynamic mean counts).
#include "gradcheck.h"

namespace oneflow {
namespace testing {
namespace {

void CheckSymbolic(GradCheckCase c) {
  c.symbolic_shapes = true;
  RunGradCheck(c);
}

TEST(GradCheckSymbolic, BroadcastingBinary) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    GradCheckCase c(op);
    c.Input("A", Random({2, 3}, 0.5, 2, 1)).Input("B", Random({3}, 0.5, 2, 2));
    CheckSymbolic(c);
  }
}

TEST(GradCheckSymbolic, MatMulAndGemm) {
  GradCheckCase m("MatMul");
  m.Input("A", Random({2, 3, 4})).Input("B", Random({4, 2}, -1, 1, 3));
  CheckSymbolic(m);
  GradCheckCase g("Gemm");
  g.Input("A", Random({3, 4})).Input("B", Random({4, 2}, -1, 1, 3)).Input("C", Random({2}, -1, 1, 4));
  CheckSymbolic(g);
}

TEST(GradCheckSymbolic, ReductionsAndShapes) {
  GradCheckCase mean("ReduceMean");
  mean.Input("X", Random({2, 3, 4})).Const("axes", Int64s({1})).Attr("keepdims", Attribute::Int(0));
  CheckSymbolic(mean);
  GradCheckCase concat("Concat");
  concat.Input("a", Random({2, 1})).Input("b", Random({2, 3}, -1, 1, 2)).Attr("axis", Attribute::Int(1));
  CheckSymbolic(concat);
  GradCheckCase reshape("Reshape");
  reshape.Input("data", Random({2, 6})).Const("shape", Int64s({3, -1}));
  CheckSymbolic(reshape);
  GradCheckCase gather("Gather");
  gather.Input("data", Random({4, 3})).Const("indices", Int64s({3}, {3, 0, 3}));
  CheckSymbolic(gather);
  GradCheckCase slice("Slice");
  slice.Input("data", Random({4, 3})).Const("starts", Int64s({1})).Const("ends", Int64s({3}));
  CheckSymbolic(slice);
  GradCheckCase split("Split");
  split.Input("input", Random({4, 3})).Const("split", Int64s({1, 3}));
  split.num_outputs = 2;
  split.skip_outputs = {0};  // output 0's gradient is zeros of a run-time shape
  CheckSymbolic(split);
  GradCheckCase ge("GatherElements");
  ge.Input("data", Random({2, 3})).Const("indices", Int64s({2, 2}, {0, 2, 1, 1})).Attr("axis", Attribute::Int(1));
  CheckSymbolic(ge);
}

TEST(GradCheckSymbolic, Losses) {
  GradCheckCase sce("SoftmaxCrossEntropyLoss");
  sce.Input("x", Random({3, 4})).Const("labels", Int64s({3}, {1, 0, 3}));
  CheckSymbolic(sce);
  GradCheckCase nll("NegativeLogLikelihoodLoss");
  nll.Input("x", Random({3, 4})).Const("labels", Int64s({3}, {1, 0, 3})).Attr("reduction", Attribute::String("sum"));
  CheckSymbolic(nll);
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
