// Gradient rules of the elementwise family (attached in ops/elementwise.cc): arithmetic with
// broadcasting, unary math and activations, Min/Max/Mean/Sum, Where, Clip, Cast, pass-throughs.
#include <map>

#include "graph/ops/grad_rules.h"
#include "graph/ops/unary_ops.h"

namespace oneflow {
namespace {

std::string Zero(GradContext& c, DType t) { return c.Scalar(0.0, t); }

// dX = dY * f(saved) via an ai.oneflow <Op>Grad kernel; `use_output` saves Y instead of X.
// a + b x^2 for input 0 (the denominators of the inverse trigonometric derivatives).
std::string SquareTerm(GradContext& c, double a, double b) {
  const DType t = c.input_type(0).dtype;
  return c.Add(c.Scalar(a, t), c.Mul(c.Scalar(b, t), c.Mul(c.input(0), c.input(0))));
}
std::string SqrtOf(GradContext& c, double a, double b) { return c.Emit1(unary::Sqrt::kName, {SquareTerm(c, a, b)}); }

}  // namespace

GradFn DerivativeOpRule(const std::string& grad_op, bool use_output) {
  return [grad_op, use_output](GradContext& c) {
    c.SetInputGrad(0, c.EmitOneflow(grad_op, {c.output_grad(0), use_output ? c.output(0) : c.input(0)}, c.attrs()));
  };
}

void GradAdd(GradContext& c) {
  for (size_t i = 0; i < 2; ++i)
    if (c.needs_input_grad(i)) c.SetInputGrad(i, c.SumToInputShape(c.output_grad(0), i));
}

void GradSub(GradContext& c) {
  if (c.needs_input_grad(0)) c.SetInputGrad(0, c.SumToInputShape(c.output_grad(0), 0));
  if (c.needs_input_grad(1)) c.SetInputGrad(1, c.SumToInputShape(c.Neg(c.output_grad(0)), 1));
}

void GradMul(GradContext& c) {
  const std::string& dy = c.output_grad(0);
  if (c.needs_input_grad(0)) c.SetInputGrad(0, c.SumToInputShape(c.Mul(dy, c.input(1)), 0));
  if (c.needs_input_grad(1)) c.SetInputGrad(1, c.SumToInputShape(c.Mul(dy, c.input(0)), 1));
}

void GradDiv(GradContext& c) {
  const std::string& dy = c.output_grad(0);
  const std::string& b = c.input(1);
  if (c.needs_input_grad(0)) c.SetInputGrad(0, c.SumToInputShape(c.Div(dy, b), 0));
  // d(a/b)/db = -(a/b)/b
  if (c.needs_input_grad(1)) c.SetInputGrad(1, c.SumToInputShape(c.Neg(c.Div(c.Mul(dy, c.output(0)), b)), 1));
}

void GradPow(GradContext& c) {
  const std::string& dy = c.output_grad(0);
  const std::string& x = c.input(0);
  const DType xt = c.input_type(0).dtype;
  std::string y = c.input(1);
  if (c.input_type(1).dtype != xt) y = c.Emit1(op::kCast, {y}, MakeAttrs({{"to", Attribute::Int(static_cast<int64_t>(xt))}}));
  if (c.needs_input_grad(0)) {
    // y * x^(y-1): defined at x = 0 for y >= 1, unlike y * z / x.
    const std::string pow = c.Emit1(op::kPow, {x, c.Sub(y, c.Scalar(1.0, xt))});
    c.SetInputGrad(0, c.SumToInputShape(c.Mul(dy, c.Mul(y, pow)), 0));
  }
  if (c.needs_input_grad(1)) {
    const std::string g = c.Mul(c.Mul(dy, c.output(0)), c.Emit1(op::kLog, {x}));
    c.SetInputGrad(1, c.SumToInputShape(g, 1));
  }
}

// Ties (several inputs equal to the result) each receive the full gradient, as a subgradient.
void GradMinMax(GradContext& c) {
  const std::string zero = Zero(c, c.output_type(0).dtype);
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.needs_input_grad(i)) continue;
    const std::string mask = c.Emit1(op::kEqual, {c.input(i), c.output(0)});
    c.SetInputGrad(i, c.SumToInputShape(c.Emit1(op::kWhere, {mask, c.output_grad(0), zero}), i));
  }
}

void GradMean(GradContext& c) {
  const std::string g =
      c.Div(c.output_grad(0), c.Scalar(static_cast<double>(c.num_inputs()), c.output_type(0).dtype));
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.needs_input_grad(i)) c.SetInputGrad(i, c.SumToInputShape(g, i));
}

void GradSum(GradContext& c) {
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.needs_input_grad(i)) c.SetInputGrad(i, c.SumToInputShape(c.output_grad(0), i));
}

void GradWhere(GradContext& c) {
  const std::string zero = Zero(c, c.output_type(0).dtype);
  const std::string& dy = c.output_grad(0);
  if (c.needs_input_grad(1)) c.SetInputGrad(1, c.SumToInputShape(c.Emit1(op::kWhere, {c.input(0), dy, zero}), 1));
  if (c.needs_input_grad(2)) c.SetInputGrad(2, c.SumToInputShape(c.Emit1(op::kWhere, {c.input(0), zero, dy}), 2));
}

// The gradient flows where min <= x <= max; the bounds themselves are treated as constants.
void GradClip(GradContext& c) {
  for (size_t i = 1; i < 3; ++i)
    if (c.needs_input_grad(i)) c.NoGradient(i, "the bounds of Clip are not differentiable");
  if (!c.needs_input_grad(0)) return;
  std::string mask;
  if (c.has_input(1)) mask = c.Emit1(op::kGreaterOrEqual, {c.input(0), c.input(1)});
  if (c.has_input(2)) {
    const std::string upper = c.Emit1(op::kLessOrEqual, {c.input(0), c.input(2)});
    mask = mask.empty() ? upper : c.Emit1(op::kAnd, {mask, upper});
  }
  if (mask.empty()) {
    c.SetInputGrad(0, c.output_grad(0));
    return;
  }
  c.SetInputGrad(0, c.Emit1(op::kWhere, {mask, c.output_grad(0), Zero(c, c.input_type(0).dtype)}));
}

void GradPassThrough(GradContext& c) {
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.needs_input_grad(i)) c.NoGradient(i, "only the data input is differentiable");
  if (c.needs_input_grad(0)) c.SetInputGrad(0, c.output_grad(0));
}

// Y = X < 0 ? slope X : X, slope broadcast to X.
void GradPRelu(GradContext& c) {
  const std::string zero = Zero(c, c.input_type(0).dtype);
  const std::string neg = c.Emit1(op::kLess, {c.input(0), zero});
  const std::string& dy = c.output_grad(0);
  if (c.needs_input_grad(0)) c.SetInputGrad(0, c.Emit1(op::kWhere, {neg, c.Mul(dy, c.input(1)), dy}));
  if (c.needs_input_grad(1))
    c.SetInputGrad(1, c.SumToInputShape(c.Emit1(op::kWhere, {neg, c.Mul(dy, c.input(0)), zero}), 1));
}

void GradShrink(GradContext& c) {
  c.SetInputGrad(0, c.EmitOneflow(op::kShrinkGrad, {c.output_grad(0), c.input(0)}, c.attrs()));
}

void GradCastLike(GradContext& c) {
  if (c.needs_input_grad(1)) c.ZeroGradient(1);  // only its dtype is used
  if (c.needs_input_grad(0)) GradCast(c);
}

void GradCast(GradContext& c) {
  const int64_t to = static_cast<int64_t>(c.input_type(0).dtype);
  c.SetInputGrad(0, c.Emit1(op::kCast, {c.output_grad(0)}, MakeAttrs({{"to", Attribute::Int(to)}})));
}

GradFn UnaryGradRule(const std::string& op) {
  static const std::map<std::string, GradFn> rules = {
      {unary::Neg::kName, [](GradContext& c) { c.SetInputGrad(0, c.Neg(c.output_grad(0))); }},
      {unary::Exp::kName, [](GradContext& c) { c.SetInputGrad(0, c.Mul(c.output_grad(0), c.output(0))); }},
      {unary::Log::kName, [](GradContext& c) { c.SetInputGrad(0, c.Div(c.output_grad(0), c.input(0))); }},
      {unary::Sqrt::kName,  // dy / (2 sqrt(x))
       [](GradContext& c) {
         const std::string two_y = c.Mul(c.output(0), c.Scalar(2.0, c.input_type(0).dtype));
         c.SetInputGrad(0, c.Div(c.output_grad(0), two_y));
       }},
      {unary::Abs::kName, [](GradContext& c) { c.SetInputGrad(0, c.Mul(c.output_grad(0), c.Emit1(unary::Sign::kName, {c.input(0)}))); }},
      {unary::Reciprocal::kName,  // -dy * y^2
       [](GradContext& c) {
         c.SetInputGrad(0, c.Neg(c.Mul(c.output_grad(0), c.Mul(c.output(0), c.output(0)))));
       }},
      // Trigonometric and hyperbolic functions, as formulas of ONNX ops.
      {unary::Sin::kName, [](GradContext& c) { c.SetInputGrad(0, c.Mul(c.output_grad(0), c.Emit1(unary::Cos::kName, {c.input(0)}))); }},
      {unary::Cos::kName, [](GradContext& c) { c.SetInputGrad(0, c.Neg(c.Mul(c.output_grad(0), c.Emit1(unary::Sin::kName, {c.input(0)})))); }},
      {unary::Tan::kName,  // 1 + tan^2
       [](GradContext& c) {
         const std::string one = c.Scalar(1.0, c.input_type(0).dtype);
         c.SetInputGrad(0, c.Mul(c.output_grad(0), c.Add(one, c.Mul(c.output(0), c.output(0)))));
       }},
      {unary::Sinh::kName, [](GradContext& c) { c.SetInputGrad(0, c.Mul(c.output_grad(0), c.Emit1(unary::Cosh::kName, {c.input(0)}))); }},
      {unary::Cosh::kName, [](GradContext& c) { c.SetInputGrad(0, c.Mul(c.output_grad(0), c.Emit1(unary::Sinh::kName, {c.input(0)}))); }},
      {unary::Asin::kName, [](GradContext& c) { c.SetInputGrad(0, c.Div(c.output_grad(0), SqrtOf(c, 1.0, -1.0))); }},
      {unary::Acos::kName, [](GradContext& c) { c.SetInputGrad(0, c.Neg(c.Div(c.output_grad(0), SqrtOf(c, 1.0, -1.0)))); }},
      {unary::Asinh::kName, [](GradContext& c) { c.SetInputGrad(0, c.Div(c.output_grad(0), SqrtOf(c, 1.0, 1.0))); }},
      {unary::Acosh::kName, [](GradContext& c) { c.SetInputGrad(0, c.Div(c.output_grad(0), SqrtOf(c, -1.0, 1.0))); }},
      {unary::Atan::kName, [](GradContext& c) { c.SetInputGrad(0, c.Div(c.output_grad(0), SquareTerm(c, 1.0, 1.0))); }},
      {unary::Atanh::kName, [](GradContext& c) { c.SetInputGrad(0, c.Div(c.output_grad(0), SquareTerm(c, 1.0, -1.0))); }},
      // Piecewise constant: the derivative is zero wherever it exists.
      {unary::Sign::kName, [](GradContext& c) { c.ZeroGradient(0); }},
      {unary::Floor::kName, [](GradContext& c) { c.ZeroGradient(0); }},
      {unary::Ceil::kName, [](GradContext& c) { c.ZeroGradient(0); }},
      {unary::Round::kName, [](GradContext& c) { c.ZeroGradient(0); }},
  };
  auto it = rules.find(op);
  return it == rules.end() ? GradFn() : it->second;
}

}  // namespace oneflow
