// Finite-difference checks of the loss gradient rules (ops/loss.cc): every reduction, with and
// without class weights and ignore_index, 2-D and N-D inputs, and SoftmaxCrossEntropyLoss's
// optional log_prob output feeding the loss alone or together with the loss output.
#include "gradcheck.h"

namespace oneflow {
namespace testing {
namespace {

struct LossForm {
  Shape x;
  std::vector<int64_t> labels;
  const char* reduction;
  bool weights;
  int64_t ignore;  // -100 = attribute absent
};

const LossForm kForms[] = {
    {{3, 4}, {0, 3, 1}, "mean", false, -100},
    {{3, 4}, {0, 3, 1}, "sum", false, -100},
    {{3, 4}, {0, 3, 1}, "none", false, -100},
    {{3, 4}, {2, 3, 1}, "mean", true, -100},
    {{3, 4}, {2, 3, 2}, "mean", true, 2},
    {{3, 4}, {0, -1, 1}, "mean", false, -1},
    {{2, 3, 2, 2}, {0, 1, 2, 2, 1, 0, 0, 2}, "mean", true, 1},
    {{2, 3, 2, 2}, {0, 1, 2, 2, 1, 0, 0, 2}, "none", false, 0},
    {{2, 3, 4}, {0, 1, 2, 2, 1, 0, 0, 2}, "sum", true, -100},
};

GradCheckCase LossCase(const char* op, const LossForm& f, unsigned seed) {
  GradCheckCase c(op);
  Shape lshape{f.x[0]};
  lshape.insert(lshape.end(), f.x.begin() + 2, f.x.end());
  c.Input("x", Random(f.x, -2, 2, seed)).Const("labels", Int64s(lshape, f.labels));
  if (f.weights) c.Const("weights", Random({f.x[1]}, 0.2, 2, seed + 1));
  c.Attr("reduction", Attribute::String(f.reduction));
  if (f.ignore != -100) c.Attr("ignore_index", Attribute::Int(f.ignore));
  return c;
}

GRADCHECK_TEST(SoftmaxCrossEntropyLoss, Forms) {
  unsigned seed = 1;
  for (const LossForm& f : kForms) {
    SCOPED_TRACE(std::string(f.reduction) + " rank " + std::to_string(f.x.size()));
    RunGradCheck(LossCase("SoftmaxCrossEntropyLoss", f, seed += 2));
    GradCheckCase both = LossCase("SoftmaxCrossEntropyLoss", f, seed += 2);  // loss and log_prob
    both.num_outputs = 2;
    RunGradCheck(both);
    GradCheckCase lp = LossCase("SoftmaxCrossEntropyLoss", f, seed += 2);  // log_prob only
    lp.num_outputs = 2;
    lp.skip_outputs = {0};
    RunGradCheck(lp);
  }
}

GRADCHECK_TEST(NegativeLogLikelihoodLoss, Forms) {
  unsigned seed = 1;
  for (const LossForm& f : kForms) {
    SCOPED_TRACE(std::string(f.reduction) + " rank " + std::to_string(f.x.size()));
    RunGradCheck(LossCase("NegativeLogLikelihoodLoss", f, seed += 2));
  }
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
