// Gradient rules of the reduction family (attached in ops/reduction.cc): Reduce* and CumSum.
#include <map>

#include "graph/ops/grad_rules.h"

namespace oneflow {
namespace {

// What a Reduce* node reduced: normalized axes (empty with noop = nothing reduced).
struct Reduced {
  std::vector<int64_t> axes;
  bool noop = false;
  bool keepdims = true;
};

Reduced ReducedAxes(GradContext& c) {
  Reduced r;
  const int64_t rank = c.input_rank(0);
  r.keepdims = c.attrs().GetInt("keepdims") != 0;
  std::vector<int64_t> axes;
  if (c.attrs().has("axes")) axes = c.attrs().GetInts("axes");
  else if (c.has_input(1)) axes = c.ConstantInts(1, "axes");
  if (axes.empty()) {
    r.noop = c.attrs().GetInt("noop_with_empty_axes", 0) != 0;
    if (!r.noop)
      for (int64_t a = 0; a < rank; ++a) r.axes.push_back(a);
    return r;
  }
  for (int64_t a : axes) r.axes.push_back(a < 0 ? a + rank : a);
  return r;
}

// `v`, shaped like the output, with the reduced dims restored as 1s (broadcastable to X).
std::string KeepDims(GradContext& c, const Reduced& r, const std::string& v) {
  if (r.keepdims || r.noop || r.axes.empty()) return v;
  return c.Emit1(op::kUnsqueeze, {v, c.Ints(r.axes)});
}

// Number of elements reduced into each output element, as a scalar of the data dtype.
std::string ReducedCount(GradContext& c, const Reduced& r) {
  const TensorType& x = c.input_type(0);
  int64_t n = 1;
  bool known = true;
  for (int64_t a : r.axes) {
    known = known && x.dims[static_cast<size_t>(a)].known();
    if (known) n *= x.dims[static_cast<size_t>(a)].value;
  }
  if (known) return c.Scalar(static_cast<double>(n), x.dtype);
  const AttrMap to = MakeAttrs({{"to", Attribute::Int(static_cast<int64_t>(x.dtype))}});
  return c.Div(c.Emit1(op::kCast, {c.Emit1(op::kSize, {c.input(0)})}, to), c.Emit1(op::kCast, {c.Emit1(op::kSize, {c.output(0)})}, to));
}

using ReduceFormula = std::string (*)(GradContext& c, const Reduced& r, const std::string& dyk);

GradFn MakeReduceRule(ReduceFormula f) {
  return [f](GradContext& c) {
    if (c.has_input(1) && c.needs_input_grad(1)) c.NoGradient(1, "axes are not differentiable");
    const Reduced r = ReducedAxes(c);
    if (r.noop) {
      c.SetInputGrad(0, c.output_grad(0));
      return;
    }
    c.SetInputGrad(0, f(c, r, KeepDims(c, r, c.output_grad(0))));
  };
}

std::string Broadcast(GradContext& c, const std::string& v) { return c.Emit1(op::kExpand, {v, c.ShapeOf(c.input(0))}); }

std::string SumFormula(GradContext& c, const Reduced&, const std::string& dyk) { return Broadcast(c, dyk); }
std::string MeanFormula(GradContext& c, const Reduced& r, const std::string& dyk) {
  return Broadcast(c, c.Div(dyk, ReducedCount(c, r)));
}
// The gradient goes to every element equal to the extreme (ties share the full gradient).
std::string ExtremeFormula(GradContext& c, const Reduced& r, const std::string& dyk) {
  const std::string mask = c.Emit1(op::kEqual, {c.input(0), KeepDims(c, r, c.output(0))});
  return c.Emit1(op::kWhere, {mask, dyk, c.Scalar(0.0, c.input_type(0).dtype)});
}
// prod / x: undefined where x = 0.
std::string ProdFormula(GradContext& c, const Reduced& r, const std::string& dyk) {
  return c.Div(c.Mul(dyk, KeepDims(c, r, c.output(0))), c.input(0));
}
std::string L1Formula(GradContext& c, const Reduced&, const std::string& dyk) {
  return c.Mul(dyk, c.Emit1(op::kSign, {c.input(0)}));
}
// x / ||x||: undefined where the norm is 0.
std::string L2Formula(GradContext& c, const Reduced& r, const std::string& dyk) {
  return c.Div(c.Mul(dyk, c.input(0)), KeepDims(c, r, c.output(0)));
}
std::string SumSquareFormula(GradContext& c, const Reduced&, const std::string& dyk) {
  return c.Mul(dyk, c.Mul(c.input(0), c.Scalar(2.0, c.input_type(0).dtype)));
}
std::string LogSumFormula(GradContext& c, const Reduced& r, const std::string& dyk) {
  return Broadcast(c, c.Div(dyk, c.Emit1(op::kExp, {KeepDims(c, r, c.output(0))})));
}
std::string LogSumExpFormula(GradContext& c, const Reduced& r, const std::string& dyk) {
  return c.Mul(dyk, c.Emit1(op::kExp, {c.Sub(c.input(0), KeepDims(c, r, c.output(0)))}));
}

}  // namespace

GradFn ReduceGradRule(const std::string& op) {
  static const std::map<std::string, ReduceFormula> formulas = {
      {op::kReduceSum, SumFormula},       {op::kReduceMean, MeanFormula},         {op::kReduceMax, ExtremeFormula},
      {op::kReduceMin, ExtremeFormula},   {op::kReduceProd, ProdFormula},         {op::kReduceL1, L1Formula},
      {op::kReduceL2, L2Formula},         {op::kReduceSumSquare, SumSquareFormula}, {op::kReduceLogSum, LogSumFormula},
      {op::kReduceLogSumExp, LogSumExpFormula}};
  auto it = formulas.find(op);
  return it == formulas.end() ? GradFn() : MakeReduceRule(it->second);
}

void GradTopK(GradContext& c) {
  if (c.needs_input_grad(1)) c.NoGradient(1, "K is not differentiable");
  const Tensor zero(c.input_type(0).dtype, Shape{1});
  const std::string zeros =
      c.Emit1(op::kConstantOfShape, {c.ShapeOf(c.input(0))}, MakeAttrs({{"value", Attribute::TensorValue(zero)}}));
  const AttrMap attrs = MakeAttrs({{"axis", Attribute::Int(c.attrs().GetInt("axis"))},
                                   {"reduction", Attribute::String("add")}});
  c.SetInputGrad(0, c.Emit1(op::kScatterElements, {zeros, c.output(1), c.output_grad(0)}, attrs));
}

// y_j = sum of x_i over i <= j (or < j, exclusive): dx_i = the same sum of dy in the other direction.
void GradCumSum(GradContext& c) {
  if (c.needs_input_grad(1)) c.NoGradient(1, "the axis is not differentiable");
  const AttrMap attrs = MakeAttrs({{"exclusive", Attribute::Int(c.attrs().GetInt("exclusive"))},
                                   {"reverse", Attribute::Int(c.attrs().GetInt("reverse") != 0 ? 0 : 1)}});
  c.SetInputGrad(0, c.Emit1(op::kCumSum, {c.output_grad(0), c.input(1)}, attrs));
}

}  // namespace oneflow
