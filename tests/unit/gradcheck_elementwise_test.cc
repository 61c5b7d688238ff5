// Finite-difference checks of the elementwise gradient rules (ops/elementwise_grad.cc): each
// broadcasting form, every attribute form, points away from kinks.
#include "gradcheck.h"

namespace oneflow {
namespace testing {
namespace {

// Binary op over shape pairs that exercise no broadcasting, one-sided and two-sided broadcasting.
void CheckBinary(const char* op, double lo, double hi) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{4, 1, 3}, {2, 1}}, {{}, {2, 2}}, {{1, 3}, {2, 1}}};
  unsigned seed = 1;
  for (const auto& [a, b] : shapes) {
    GradCheckCase c(op);
    c.Input("A", Random(a, lo, hi, seed)).Input("B", Random(b, lo, hi, seed + 1));
    seed += 2;
    RunGradCheck(c);
  }
}

GRADCHECK_TEST(Add, Broadcasting) { CheckBinary("Add", -1, 1); }
GRADCHECK_TEST(Sub, Broadcasting) { CheckBinary("Sub", -1, 1); }
GRADCHECK_TEST(Mul, Broadcasting) { CheckBinary("Mul", -1, 1); }
GRADCHECK_TEST(Div, Broadcasting) { CheckBinary("Div", 0.5, 2); }

GRADCHECK_TEST(Mul, SameInputTwice) {
  // x * x: the two contributions to dx are summed.
  GradCheckCase c("Mul");
  const Tensor x = Random({3, 2});
  c.Input("A", x).Input("A", x);
  RunGradCheck(c);
}

GRADCHECK_TEST(Pow, Broadcasting) {
  GradCheckCase c("Pow");
  c.Input("X", Random({2, 3}, 0.5, 2, 1)).Input("Y", Random({3}, -1.5, 2.5, 2));
  RunGradCheck(c);
  GradCheckCase s("Pow");  // constant float32 exponent (cast inside the rule), negative base
  Tensor e(DType::kFloat32, Shape{});
  e.data<float>()[0] = 3.0f;
  s.Input("X", Random({4}, -2, 2, 3)).Const("Y", e);
  RunGradCheck(s);
}

void CheckUnary(const char* op, Tensor x, AttrMap attrs = {}, int opset = 18) {
  GradCheckCase c(op);
  c.opset = opset;
  c.Input("X", std::move(x));
  c.attrs = std::move(attrs);
  RunGradCheck(c);
}

GRADCHECK_TEST(Sqrt, Basic) { CheckUnary("Sqrt", Random({2, 3}, 0.2, 3)); }
GRADCHECK_TEST(Exp, Basic) { CheckUnary("Exp", Random({2, 3}, -2, 2)); }
GRADCHECK_TEST(Log, Basic) { CheckUnary("Log", Random({2, 3}, 0.2, 3)); }
GRADCHECK_TEST(Abs, Basic) { CheckUnary("Abs", RandomAwayFrom({2, 3}, {0})); }
GRADCHECK_TEST(Neg, Basic) { CheckUnary("Neg", Random({5})); }
GRADCHECK_TEST(Reciprocal, Basic) { CheckUnary("Reciprocal", RandomAwayFrom({2, 3}, {0}, -2, 2, 0.3)); }
GRADCHECK_TEST(Erf, Basic) { CheckUnary("Erf", Random({2, 3}, -2, 2)); }
GRADCHECK_TEST(Tanh, Basic) { CheckUnary("Tanh", Random({2, 3}, -2, 2)); }
GRADCHECK_TEST(Sigmoid, Basic) { CheckUnary("Sigmoid", Random({2, 3}, -3, 3)); }
GRADCHECK_TEST(Relu, Basic) { CheckUnary("Relu", RandomAwayFrom({3, 4}, {0})); }
GRADCHECK_TEST(LeakyRelu, Alphas) {
  CheckUnary("LeakyRelu", RandomAwayFrom({3, 4}, {0}));
  CheckUnary("LeakyRelu", RandomAwayFrom({3, 4}, {0}), MakeAttrs({{"alpha", Attribute::Float(0.3f)}}));
}
GRADCHECK_TEST(Elu, Alphas) {
  CheckUnary("Elu", RandomAwayFrom({3, 4}, {0}));
  CheckUnary("Elu", RandomAwayFrom({3, 4}, {0}), MakeAttrs({{"alpha", Attribute::Float(0.5f)}}));
}
GRADCHECK_TEST(Gelu, BothForms) {
  CheckUnary("Gelu", Random({3, 4}, -3, 3), {}, 20);
  CheckUnary("Gelu", Random({3, 4}, -3, 3), MakeAttrs({{"approximate", Attribute::String("tanh")}}), 20);
}
GRADCHECK_TEST(HardSigmoid, Attributes) {
  CheckUnary("HardSigmoid", RandomAwayFrom({3, 4}, {-2.5, 2.5}, -4, 4));
  CheckUnary("HardSigmoid", RandomAwayFrom({3, 4}, {-1, 3}, -4, 4),
             MakeAttrs({{"alpha", Attribute::Float(0.5f)}, {"beta", Attribute::Float(0.5f)}}));
}
GRADCHECK_TEST(HardSwish, Basic) { CheckUnary("HardSwish", RandomAwayFrom({4, 4}, {-3, 3}, -5, 5)); }
GRADCHECK_TEST(Softplus, Basic) { CheckUnary("Softplus", Random({3, 4}, -3, 3)); }

GRADCHECK_TEST(Softsign, Basic) { CheckUnary("Softsign", RandomAwayFrom({3, 4}, {0})); }
GRADCHECK_TEST(Mish, Basic) { CheckUnary("Mish", Random({3, 4}, -3, 3), {}, 18); }
GRADCHECK_TEST(Selu, Attributes) {
  CheckUnary("Selu", RandomAwayFrom({3, 4}, {0}));
  CheckUnary("Selu", RandomAwayFrom({3, 4}, {0}),
             MakeAttrs({{"alpha", Attribute::Float(1.5f)}, {"gamma", Attribute::Float(0.7f)}}));
}
GRADCHECK_TEST(Celu, Attributes) {
  CheckUnary("Celu", RandomAwayFrom({3, 4}, {0}));
  CheckUnary("Celu", RandomAwayFrom({3, 4}, {0}), MakeAttrs({{"alpha", Attribute::Float(0.5f)}}));
}
GRADCHECK_TEST(ThresholdedRelu, Attributes) {
  CheckUnary("ThresholdedRelu", RandomAwayFrom({3, 4}, {1}));
  CheckUnary("ThresholdedRelu", RandomAwayFrom({3, 4}, {0.3}), MakeAttrs({{"alpha", Attribute::Float(0.3f)}}));
}
GRADCHECK_TEST(Shrink, Attributes) {
  CheckUnary("Shrink", RandomAwayFrom({3, 4}, {-0.5, 0.5}));
  CheckUnary("Shrink", RandomAwayFrom({3, 4}, {-1, 1}),
             MakeAttrs({{"lambd", Attribute::Float(1.0f)}, {"bias", Attribute::Float(0.25f)}}));
}
GRADCHECK_TEST(Swish, Attributes) {
  CheckUnary("Swish", Random({3, 4}, -3, 3), {}, 24);
  CheckUnary("Swish", Random({3, 4}, -3, 3), MakeAttrs({{"alpha", Attribute::Float(1.7f)}}), 24);
}
// ONNX Runtime's contrib op (com.microsoft, opset 1): its default alpha 1.702 and another.
GRADCHECK_TEST_IN("com.microsoft", QuickGelu, Attributes) {
  for (float alpha : {1.702f, 0.5f}) {
    GradCheckCase c("QuickGelu", "com.microsoft");  // at domain version 1 (the gradcheck graph's other domains')
    c.Input("X", Random({3, 4}, -3, 3));
    if (alpha != 1.702f) c.Attr("alpha", Attribute::Float(alpha));
    RunGradCheck(c);
  }
}
// ONNX Runtime's contrib Gelu (com.microsoft, opset 1; no attributes), beside ONNX Gelu.
GRADCHECK_TEST_IN("com.microsoft", Gelu, Contrib) {
  GradCheckCase c("Gelu", "com.microsoft");
  c.Input("X", Random({3, 4}, -3, 3));
  RunGradCheck(c);
}
GRADCHECK_TEST(Sin, Basic) { CheckUnary("Sin", Random({2, 3}, -3, 3)); }
GRADCHECK_TEST(Cos, Basic) { CheckUnary("Cos", Random({2, 3}, -3, 3)); }
GRADCHECK_TEST(Tan, Basic) { CheckUnary("Tan", Random({2, 3}, -1.2, 1.2)); }
GRADCHECK_TEST(Sinh, Basic) { CheckUnary("Sinh", Random({2, 3}, -2, 2)); }
GRADCHECK_TEST(Cosh, Basic) { CheckUnary("Cosh", Random({2, 3}, -2, 2)); }
GRADCHECK_TEST(Asin, Basic) { CheckUnary("Asin", Random({2, 3}, -0.9, 0.9)); }
GRADCHECK_TEST(Acos, Basic) { CheckUnary("Acos", Random({2, 3}, -0.9, 0.9)); }
GRADCHECK_TEST(Atan, Basic) { CheckUnary("Atan", Random({2, 3}, -3, 3)); }
GRADCHECK_TEST(Asinh, Basic) { CheckUnary("Asinh", Random({2, 3}, -3, 3)); }
GRADCHECK_TEST(Acosh, Basic) { CheckUnary("Acosh", Random({2, 3}, 1.2, 3)); }
GRADCHECK_TEST(Atanh, Basic) { CheckUnary("Atanh", Random({2, 3}, -0.9, 0.9)); }
// Piecewise constant: the finite difference away from the jumps is 0, as is the rule's gradient.
GRADCHECK_TEST(Sign, Zero) { CheckUnary("Sign", RandomAwayFrom({2, 3}, {0})); }
GRADCHECK_TEST(Floor, Zero) { CheckUnary("Floor", RandomAwayFrom({2, 3}, {-2, -1, 0, 1, 2})); }
GRADCHECK_TEST(Ceil, Zero) { CheckUnary("Ceil", RandomAwayFrom({2, 3}, {-2, -1, 0, 1, 2})); }
GRADCHECK_TEST(Round, Zero) { CheckUnary("Round", RandomAwayFrom({2, 3}, {-1.5, -0.5, 0.5, 1.5})); }

GRADCHECK_TEST(PRelu, SlopeShapes) {
  for (const Shape& s : std::vector<Shape>{{3, 4}, {4}, {3, 1}, {1}}) {
    GradCheckCase c("PRelu");
    c.Input("X", RandomAwayFrom({3, 4}, {0})).Input("slope", Random(s, -1, 1, 7));
    RunGradCheck(c);
  }
}

GRADCHECK_TEST(CastLike, FloatToFloat) {
  GradCheckCase c("CastLike");
  c.opset = 19;
  c.Input("input", Random({2, 3})).Const("target_type", Doubles({1}, {0.0}));
  RunGradCheck(c);
}

GRADCHECK_TEST(Clip, Bounds) {
  auto bound = [](double v) { return Doubles({}, {v}); };
  GradCheckCase both("Clip");
  both.Input("X", RandomAwayFrom({3, 4}, {-0.5, 0.5})).Const("min", bound(-0.5)).Const("max", bound(0.5));
  RunGradCheck(both);
  GradCheckCase lower("Clip");
  lower.Input("X", RandomAwayFrom({3, 4}, {-0.5})).Const("min", bound(-0.5));
  RunGradCheck(lower);
  GradCheckCase upper("Clip");
  upper.Input("X", RandomAwayFrom({3, 4}, {0.2})).Omitted().Const("max", bound(0.2));
  RunGradCheck(upper);
  GradCheckCase none("Clip");
  none.Input("X", Random({3}));
  RunGradCheck(none);
}

void CheckVariadic(const char* op) {
  GradCheckCase c(op);  // three inputs, broadcasting; random values make ties unlikely
  c.Input("a", Random({2, 3}, -1, 1, 1)).Input("b", Random({3}, -1, 1, 2)).Input("c", Random({2, 1}, -1, 1, 3));
  RunGradCheck(c);
  GradCheckCase one(op);
  one.Input("a", Random({4}, -1, 1, 4));
  RunGradCheck(one);
}
GRADCHECK_TEST(Min, Variadic) { CheckVariadic("Min"); }
GRADCHECK_TEST(Max, Variadic) { CheckVariadic("Max"); }
GRADCHECK_TEST(Mean, Variadic) { CheckVariadic("Mean"); }
GRADCHECK_TEST(Sum, Variadic) { CheckVariadic("Sum"); }

GRADCHECK_TEST(Where, Broadcasting) {
  Tensor cond(DType::kBool, Shape{2, 3});
  for (int i = 0; i < 6; ++i) cond.data<bool>()[i] = (i % 3) != 1;
  GradCheckCase c("Where");
  c.Const("cond", cond).Input("X", Random({2, 3}, -1, 1, 1)).Input("Y", Random({3}, -1, 1, 2));
  RunGradCheck(c);
}

GRADCHECK_TEST(Identity, Basic) { CheckUnary("Identity", Random({2, 2})); }
GRADCHECK_TEST(Dropout, Inference) {
  CheckUnary("Dropout", Random({2, 3}));
  GradCheckCase c("Dropout");  // explicit ratio 0 in training mode: identity, plus the mask output
  Tensor training(DType::kBool, Shape{});
  training.data<bool>()[0] = true;
  c.Input("data", Random({2, 3})).Const("ratio", Doubles({}, {0.0})).Const("training_mode", training);
  c.num_outputs = 2;
  c.skip_outputs = {1};
  RunGradCheck(c);
}
GRADCHECK_TEST(Cast, FloatToFloat) {
  CheckUnary("Cast", Random({2, 3}), MakeAttrs({{"to", Attribute::Int(static_cast<int64_t>(DType::kFloat64))}}));
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
