// Finite-difference gradient checks for op gradient rules, and the table of ops that have one.
//
// Every op whose schema has a gradient rule (OpSchema::grad) needs at least one check, declared
// with GRADCHECK_TEST; gradcheck_test.cc fails listing the ops without one. A check builds a
// one-node graph (f64 inputs where differentiable), the scalar loss sum_k sum(R_k * output_k) with
// fixed random R_k, appends the backward pass with BuildGradients and runs both through a Session
// (real kernels). Each analytic gradient element is compared with the central difference
// (L(x + eps) - L(x - eps)) / (2 eps).
//
//   GRADCHECK_TEST(Relu, Basic) {
//     GradCheckCase c("Relu");
//     c.Input("X", RandomAwayFromZero({2, 3}));
//     RunGradCheck(c);
//   }
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "graph/grad_context.h"

namespace oneflow {
namespace testing {

struct GradCheckInput {
  std::string name;   // "" = an omitted optional input
  Tensor value;       // the point to differentiate at
  bool differentiable = true;  // false: fed as a constant (indices, shapes, axes, bounds)
};

struct GradCheckCase {
  explicit GradCheckCase(std::string op_name, std::string op_domain = "") : op(std::move(op_name)), domain(std::move(op_domain)) {}
  GradCheckCase& Input(std::string name, Tensor value) { inputs.push_back({std::move(name), std::move(value), true}); return *this; }
  GradCheckCase& Const(std::string name, Tensor value) { inputs.push_back({std::move(name), std::move(value), false}); return *this; }
  GradCheckCase& Omitted() { inputs.push_back({"", Tensor(), false}); return *this; }
  GradCheckCase& Attr(const std::string& name, Attribute a) { attrs.set(name, std::move(a)); return *this; }

  std::string op, domain;
  int opset = 18;
  std::vector<GradCheckInput> inputs;
  AttrMap attrs;
  int num_outputs = 1;
  std::vector<int> skip_outputs;  // outputs left out of the loss (e.g. integer or unused ones)
  // Declare the differentiable inputs with symbolic dims only (rank known): exercises the rules'
  // run-time shape paths (Shape nodes instead of constants).
  bool symbolic_shapes = false;
  double eps = 1e-6;
  double tol = 1e-6;  // on |analytic - numeric| / (1 + |numeric|)
};

// Runs the check with gtest assertions (ADD_FAILURE names the op, input and element).
void RunGradCheck(const GradCheckCase& c);

// Random f64 tensors for checks: uniform in [lo, hi]; *AwayFrom* keeps |x - k| >= margin for
// every kink k (where the op is not differentiable), so central differences never straddle one.
Tensor Random(const Shape& shape, double lo = -1.0, double hi = 1.0, unsigned seed = 0);
Tensor RandomAwayFrom(const Shape& shape, const std::vector<double>& kinks, double lo = -2.0, double hi = 2.0,
                      double margin = 0.05, unsigned seed = 0);
Tensor Int64s(const Shape& shape, const std::vector<int64_t>& v);
Tensor Int64s(const std::vector<int64_t>& v);  // 1-D
Tensor Doubles(const Shape& shape, const std::vector<double>& v);

// The table: op names with a check ("ai.oneflow::Op" outside the ONNX domain; GRADCHECK_TEST covers
// ONNX ops, an ai.oneflow op with a rule registers with a static RegisterGradCheck("ai.oneflow::Op")).
std::set<std::string>& GradCheckedOps();
inline bool RegisterGradCheck(const char* op) {
  GradCheckedOps().insert(op);
  return true;
}

}  // namespace testing
}  // namespace oneflow

// Declares a gtest test `GradCheck_<Op>.<Case>` and records Op in the table.
#define GRADCHECK_TEST(Op, Case)                                                                        \
  static const bool gradcheck_registered_##Op##_##Case = ::oneflow::testing::RegisterGradCheck(#Op);  \
  TEST(GradCheck_##Op, Case)
// The same for an op of another domain than ai.onnx, a string literal (the table's key is "domain::Op").
#define GRADCHECK_TEST_IN(Domain, Op, Case)                                                             \
  static const bool gradcheck_registered_##Op##_##Case =                                                \
      ::oneflow::testing::RegisterGradCheck(Domain "::" #Op);                                            \
  TEST(GradCheck_##Op, Case)
