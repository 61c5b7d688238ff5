// Finite-difference checks of the reduction gradient rules (ops/reduction_grad.cc): every axes
// form (attribute at opset 13, input at 18, negative, empty = all, noop), keepdims on and off.
#include "gradcheck.h"

namespace oneflow {
namespace testing {
namespace {

struct AxesForm {
  std::vector<int64_t> axes;  // empty: reduce all (or nothing, with noop)
  int64_t keepdims;
  bool noop;
};

const AxesForm kForms[] = {{{1}, 1, false}, {{1}, 0, false}, {{-1, 0}, 0, false}, {{}, 0, false},
                           {{}, 1, false},  {{}, 0, true},   {{0, 2}, 1, false}};

// `x_for` gives the point for each form (ReduceProd/L2/Max need particular values).
void CheckReduce(const char* op, double lo, double hi) {
  unsigned seed = 1;
  for (const AxesForm& f : kForms) {
    for (int opset : {13, 18}) {
      if (f.noop && opset < 18 && std::string(op) != "ReduceSum") continue;  // noop_with_empty_axes is 18+
      GradCheckCase c(op);
      c.opset = opset;
      c.Input("X", Random({2, 3, 4}, lo, hi, seed++));
      c.Attr("keepdims", Attribute::Int(f.keepdims));
      const bool axes_input = opset >= 18 || std::string(op) == "ReduceSum";
      if (f.noop) c.Attr("noop_with_empty_axes", Attribute::Int(1));
      if (axes_input) {
        if (!f.axes.empty()) c.Const("axes", Int64s(f.axes));
      } else if (!f.axes.empty()) {
        c.Attr("axes", Attribute::Ints(f.axes));
      }
      SCOPED_TRACE("opset " + std::to_string(opset) + " keepdims " + std::to_string(f.keepdims) + " axes " +
                   std::to_string(f.axes.size()));
      RunGradCheck(c);
    }
  }
}

GRADCHECK_TEST(ReduceSum, AxesForms) { CheckReduce("ReduceSum", -1, 1); }
GRADCHECK_TEST(ReduceMean, AxesForms) { CheckReduce("ReduceMean", -1, 1); }
GRADCHECK_TEST(ReduceMax, AxesForms) { CheckReduce("ReduceMax", -1, 1); }
GRADCHECK_TEST(ReduceMin, AxesForms) { CheckReduce("ReduceMin", -1, 1); }
GRADCHECK_TEST(ReduceProd, AxesForms) { CheckReduce("ReduceProd", 0.5, 1.5); }
GRADCHECK_TEST(ReduceL1, AxesForms) { CheckReduce("ReduceL1", 0.2, 1); }
GRADCHECK_TEST(ReduceL2, AxesForms) { CheckReduce("ReduceL2", -1, 1); }
GRADCHECK_TEST(ReduceSumSquare, AxesForms) { CheckReduce("ReduceSumSquare", -1, 1); }
GRADCHECK_TEST(ReduceLogSum, AxesForms) { CheckReduce("ReduceLogSum", 0.2, 1); }
GRADCHECK_TEST(ReduceLogSumExp, AxesForms) { CheckReduce("ReduceLogSumExp", -1, 1); }

GRADCHECK_TEST(ReduceL1, MixedSigns) {
  GradCheckCase c("ReduceL1");
  c.Input("X", RandomAwayFrom({3, 4}, {0})).Attr("keepdims", Attribute::Int(0));
  RunGradCheck(c);
}

GRADCHECK_TEST(CumSum, Attributes) {
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1})
      for (int64_t axis : {0, -1}) {
        GradCheckCase c("CumSum");
        c.Input("x", Random({3, 4})).Const("axis", Int64s(Shape{}, {axis}));
        c.Attr("exclusive", Attribute::Int(exclusive)).Attr("reverse", Attribute::Int(reverse));
        RunGradCheck(c);
      }
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
