// Op family: ai.onnx.preview.training optimizers, one update step each, applied to n tensors at once
// with shared scalars R (learning rate) and T (update count, int64). Kernels:
// kernels/cpu/training_optimizers.cc. With G_reg = norm_coefficient * X + G:
//   Adagrad(R, T, X..., G..., H...) -> X_new..., H_new...
//     r = R / (1 + T * decay_factor); H_new = H + G_reg^2; X_new = X - r * G_reg / (sqrt(H_new) + epsilon)
//   Momentum(R, T, X..., G..., V...) -> X_new..., V_new...
//     V_new = alpha * V + (T > 0 ? beta : 1) * G_reg; X_new = X - R * V_new (standard) or
//     X - R * (G_reg + alpha * V_new) (nesterov)
//   Adam(R, T, X..., G..., V..., H...) -> X_new..., V_new..., H_new...
//     V_new = alpha * V + (1 - alpha) * G_reg; H_new = beta * H + (1 - beta) * G_reg^2;
//     r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
//     X_new = (1 - norm_coefficient_post) * (X - r * V_new / (sqrt(H_new) + epsilon))
// (The engine's own training uses train/optimizer.h; these exist for models that carry their step.)
#include <string>

#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

// `groups` per-tensor inputs after R and T (X, G, then the states); outputs are X and the states.
template <size_t groups>
void InferOptimizerStep(InferContext& ctx) {
  const size_t tail = ctx.num_inputs() - 2;
  if (tail == 0 || tail % groups != 0)
    ctx.Error("takes R, T, then ", groups, " inputs per optimized tensor (X..., G..., states...); got ",
              ctx.num_inputs(), " inputs");
  const size_t n = tail / groups;
  if (ctx.num_outputs() != n * (groups - 1))
    ctx.Error(n, " optimized tensors need ", n * (groups - 1), " outputs, got ", ctx.num_outputs());
  const TensorType& r = ctx.input_type(0);
  if (r.dtype != DType::kFloat32 && r.dtype != DType::kFloat64 && r.dtype != DType::kUndefined)
    ctx.Error("R must be float32 or float64, got ", r.ToString());
  if (ctx.input_type(1).dtype != DType::kInt64 && ctx.input_type(1).dtype != DType::kUndefined)
    ctx.Error("T must be int64, got ", ctx.input_type(1).ToString());
  for (size_t i = 0; i < n; ++i) {
    const TensorType& x = ctx.input_type(2 + i);
    if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64 && x.dtype != DType::kUndefined)
      ctx.Error("X[", i, "] must be float32 or float64, got ", x.ToString());
    for (size_t g = 1; g < groups; ++g) {
      const TensorType& other = ctx.input_type(2 + g * n + i);
      if (other.dtype != x.dtype && other.dtype != DType::kUndefined && x.dtype != DType::kUndefined)
        ctx.Error("input ", 2 + g * n + i, " is ", other.ToString(), " but X[", i, "] is ", x.ToString());
      if (x.fully_known() && other.fully_known() && x.ToShape() != other.ToShape())
        ctx.Error("input ", 2 + g * n + i, " has shape ", ShapeToString(other.ToShape()), " but X[", i, "] has ",
                  ShapeToString(x.ToShape()));
    }
    ctx.set_output(i, x);
    for (size_t g = 2; g < groups; ++g) ctx.set_output((g - 1) * n + i, ctx.input_type(2 + g * n + i));
  }
}

}  // namespace

void RegisterTrainingOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kAdagrad).Since(1).Input("R").Input("T").VariadicInput("inputs").VariadicOutput("outputs")
      .Attr("decay_factor", Attribute::Float(0.0f)).Attr("epsilon", Attribute::Float(1e-6f))
      .Attr("norm_coefficient", Attribute::Float(0.0f)).Infer(InferOptimizerStep<3>)
      .Doc("One Adagrad step of each X given G and the accumulated squared gradients H."));
  r.Register(OpSchema(OpId::kMomentum).Since(1).Input("R").Input("T").VariadicInput("inputs").VariadicOutput("outputs")
      .RequiredAttr("alpha", AttrKind::kFloat).RequiredAttr("beta", AttrKind::kFloat)
      .RequiredAttr("mode", AttrKind::kString).RequiredAttr("norm_coefficient", AttrKind::kFloat)
      .Infer(InferOptimizerStep<3>)
      .Doc("One SGD-with-momentum step (standard or nesterov) of each X given G and its momentum V."));
  r.Register(OpSchema(OpId::kAdam).Since(1).Input("R").Input("T").VariadicInput("inputs").VariadicOutput("outputs")
      .Attr("alpha", Attribute::Float(0.9f)).Attr("beta", Attribute::Float(0.999f))
      .Attr("epsilon", Attribute::Float(1e-6f)).Attr("norm_coefficient", Attribute::Float(0.0f))
      .Attr("norm_coefficient_post", Attribute::Float(0.0f)).Infer(InferOptimizerStep<4>)
      .Doc("One Adam step of each X given G and its first and second moments V and H."));
}

}  // namespace oneflow
