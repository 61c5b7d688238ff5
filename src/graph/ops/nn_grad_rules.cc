// Gradient rules of the nn ops (see nn_grad_rules.h). Where a backward op needs only an input's
// shape it gets ShapeOf(input) (a constant when static), so that activation is not kept for it.
#include "graph/ops/nn_grad_rules.h"

namespace oneflow {

namespace {

std::vector<std::string> EmitGrad(GradContext& c, const char* op, const std::vector<std::string>& inputs,
                                  size_t outputs = 1) {
  return c.Emit(op, inputs, c.attrs(), outputs, kOneflowDomain);
}

// Multi-output forwards: only output 0 is differentiable; a gradient flowing into another output
// (statistics, indices) cannot be propagated.
void RequireOnlyOutput0Grad(GradContext& c, const char* what) {
  for (size_t i = 1; i < c.num_outputs(); ++i)
    if (c.has_output_grad(i))
      for (size_t j = 0; j < c.num_inputs(); ++j)
        if (c.needs_input_grad(j)) c.NoGradient(j, std::string("a gradient flows into its ") + what + " output");
}

}  // namespace

void GradConv(GradContext& c) {
  const std::string& dy = c.output_grad(0);
  if (c.needs_input_grad(0)) c.SetInputGrad(0, EmitGrad(c, op::kConvGradData, {dy, c.input(1), c.ShapeOf(c.input(0))})[0]);
  if (c.needs_input_grad(1))
    c.SetInputGrad(1, EmitGrad(c, op::kConvGradFilter, {c.input(0), dy, c.ShapeOf(c.input(1))})[0]);
  if (c.has_input(2) && c.needs_input_grad(2)) c.SetInputGrad(2, c.EmitOneflow(op::kConvGradBias, {dy}));
}

void GradConvTranspose(GradContext& c) {
  const std::string& dy = c.output_grad(0);
  if (c.needs_input_grad(0))
    c.SetInputGrad(0, EmitGrad(c, op::kConvTransposeGradData, {dy, c.input(1), c.ShapeOf(c.input(0))})[0]);
  if (c.needs_input_grad(1))
    c.SetInputGrad(1, EmitGrad(c, op::kConvTransposeGradFilter, {c.input(0), dy, c.ShapeOf(c.input(1))})[0]);
  if (c.has_input(2) && c.needs_input_grad(2)) c.SetInputGrad(2, c.EmitOneflow(op::kConvGradBias, {dy}));
}

void GradMaxPool(GradContext& c) {
  if (!c.needs_input_grad(0)) return;
  const std::string dy = c.OutputGradOrZeros(0);
  std::vector<std::string> in = {dy, c.input(0)};
  // The forward's Indices (row-major positions) save recomputing the argmax.
  if (c.has_output(1) && c.attrs().GetInt("storage_order", 0) == 0) in.push_back(c.output(1));
  c.SetInputGrad(0, EmitGrad(c, op::kMaxPoolGrad, in)[0]);
}

void GradAveragePool(GradContext& c) {
  if (c.needs_input_grad(0))
    c.SetInputGrad(0, EmitGrad(c, op::kAveragePoolGrad, {c.output_grad(0), c.ShapeOf(c.input(0))})[0]);
}

void GradGlobalAveragePool(GradContext& c) {
  if (c.needs_input_grad(0))
    c.SetInputGrad(0, c.EmitOneflow(op::kGlobalAveragePoolGrad, {c.output_grad(0), c.ShapeOf(c.input(0))}));
}

void GradGlobalMaxPool(GradContext& c) {
  if (c.needs_input_grad(0)) c.SetInputGrad(0, c.EmitOneflow(op::kGlobalMaxPoolGrad, {c.output_grad(0), c.input(0)}));
}

void GradSoftmax(GradContext& c) {
  if (c.needs_input_grad(0)) c.SetInputGrad(0, EmitGrad(c, op::kSoftmaxGrad, {c.output_grad(0), c.output(0)})[0]);
}

void GradLogSoftmax(GradContext& c) {
  if (c.needs_input_grad(0)) c.SetInputGrad(0, EmitGrad(c, op::kLogSoftmaxGrad, {c.output_grad(0), c.output(0)})[0]);
}

void GradLayerNormalization(GradContext& c) {
  RequireOnlyOutput0Grad(c, "Mean/InvStdDev");
  const std::string dy = c.OutputGradOrZeros(0);
  // The saved statistics are used when the forward kept them in X's precision (stash_type 0 or f32 X).
  const DType xt = c.input_type(0).dtype;
  const bool saved = c.has_output(1) && c.has_output(2) && c.output_type(1).dtype == xt && c.output_type(2).dtype == xt;
  AttrMap attrs = MakeAttrs({{"axis", Attribute::Int(c.attrs().GetInt("axis"))},
                             {"epsilon", Attribute::Float(c.attrs().GetFloat("epsilon"))}});
  const std::vector<std::string> g =
      c.Emit(op::kLayerNormalizationGrad, {dy, c.input(0), c.input(1), saved ? c.output(1) : "", saved ? c.output(2) : ""},
             attrs, 3, kOneflowDomain);
  for (size_t i = 0; i < 3; ++i)
    if (c.has_input(i) && c.needs_input_grad(i)) c.SetInputGrad(i, g[i]);
}

// Training mode: Y uses the batch's statistics, so input_mean/input_var do not affect it (they only
// feed the running-statistics outputs, state updates that are not differentiated). Inference mode:
// with inv = (var + eps)^-1/2, dmean = -scale * inv * dB and dvar = -scale * inv^2 * dscale / 2.
void GradBatchNormalization(GradContext& c) {
  RequireOnlyOutput0Grad(c, "running-statistics");
  const bool training = c.attrs().GetInt("training_mode", 0) != 0;
  const std::string dy = c.OutputGradOrZeros(0);
  AttrMap attrs = MakeAttrs({{"epsilon", Attribute::Float(c.attrs().GetFloat("epsilon"))}});
  const std::vector<std::string> g = c.Emit(
      op::kBatchNormalizationGrad, {dy, c.input(0), c.input(1), training ? "" : c.input(3), training ? "" : c.input(4)},
      attrs, 3, kOneflowDomain);
  for (size_t i = 0; i < 3; ++i)
    if (c.needs_input_grad(i)) c.SetInputGrad(i, g[i]);
  if (!c.needs_input_grad(3) && !c.needs_input_grad(4)) return;
  if (training) {
    for (size_t i = 3; i <= 4; ++i)
      if (c.needs_input_grad(i)) c.ZeroGradient(i);
    return;
  }
  const DType t = c.input_type(4).dtype;
  const std::string inv =
      c.Emit1(op::kReciprocal, {c.Emit1(op::kSqrt, {c.Add(c.input(4), c.Scalar(c.attrs().GetFloat("epsilon"), t))})});
  const std::string k = c.Mul(c.input(1), inv);
  if (c.needs_input_grad(3)) c.SetInputGrad(3, c.Neg(c.Mul(k, g[2])));
  if (c.needs_input_grad(4)) c.SetInputGrad(4, c.Mul(c.Mul(k, inv), c.Mul(g[1], c.Scalar(-0.5, t))));
}

void GradInstanceNormalization(GradContext& c) {
  const std::vector<std::string> g =
      c.Emit(op::kInstanceNormalizationGrad, {c.output_grad(0), c.input(0), c.input(1)}, c.attrs(), 3, kOneflowDomain);
  for (size_t i = 0; i < 3; ++i)
    if (c.needs_input_grad(i)) c.SetInputGrad(i, g[i]);
}

}  // namespace oneflow
