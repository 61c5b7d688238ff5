// Gradient rules of the tensor family (attached in ops/tensor.cc and ops/index_ops.cc): reshapes,
// Transpose, Concat/Split, Slice, Gather/GatherElements, Expand, Tile, Pad.
#include <algorithm>
#include <climits>

#include "graph/ops/grad_rules.h"
#include "graph/ops/tensor_util.h"

namespace oneflow {
namespace {

void NoGradientForOthers(GradContext& c, const char* why) {
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.needs_input_grad(i)) c.NoGradient(i, why);
}

int64_t NormalizedAxis(GradContext& c, int64_t axis, size_t input = 0) {
  const int64_t r = c.input_rank(input);
  return axis < 0 ? axis + r : axis;
}

std::string ZerosLike(GradContext& c, size_t input) {
  const Tensor zero(c.input_type(input).dtype, Shape{1});
  return c.Emit1(op::kConstantOfShape, {c.ShapeOf(c.input(input))}, MakeAttrs({{"value", Attribute::TensorValue(zero)}}));
}

}  // namespace

void GradReshapeLike(GradContext& c) {
  NoGradientForOthers(c, "shape and axes inputs are not differentiable");
  if (c.needs_input_grad(0)) c.SetInputGrad(0, c.Emit1(op::kReshape, {c.output_grad(0), c.ShapeOf(c.input(0))}));
}

void GradTranspose(GradContext& c) {
  const int64_t r = c.input_rank(0);
  std::vector<int64_t> perm = c.attrs().GetInts("perm", {});
  if (perm.empty())
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  c.SetInputGrad(0, c.Emit1(op::kTranspose, {c.output_grad(0)}, MakeAttrs({{"perm", Attribute::Ints(inverse)}})));
}

void GradConcat(GradContext& c) {
  const int64_t axis = NormalizedAxis(c, c.attrs().GetInt("axis"));
  const std::string axes = c.Ints({axis});
  // Each input's extent along the axis, and the running offset: constants when statically known.
  bool known = true;
  for (size_t i = 0; i < c.num_inputs(); ++i) known = known && c.input_type(i).dims[static_cast<size_t>(axis)].known();
  int64_t offset = 0;
  std::string dyn_offset = c.Ints({0});
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    std::string start, end;
    if (known) {
      const int64_t len = c.input_type(i).dims[static_cast<size_t>(axis)].value;
      start = c.Ints({offset});
      end = c.Ints({offset + len});
      offset += len;
    } else {
      const std::string len = c.Emit1(op::kShape, {c.input(i)}, MakeAttrs({{"start", Attribute::Int(axis)},
                                                                     {"end", Attribute::Int(axis + 1)}}));
      start = dyn_offset;
      end = dyn_offset = c.Add(dyn_offset, len);
    }
    if (c.needs_input_grad(i)) c.SetInputGrad(i, c.Emit1(op::kSlice, {c.output_grad(0), start, end, axes}));
  }
}

void GradSplit(GradContext& c) {
  NoGradientForOthers(c, "split sizes are not differentiable");
  std::vector<std::string> parts;
  for (size_t k = 0; k < c.num_outputs(); ++k) parts.push_back(c.OutputGradOrZeros(k));
  c.SetInputGrad(0, c.Emit1(op::kConcat, parts, MakeAttrs({{"axis", Attribute::Int(c.attrs().GetInt("axis"))}})));
}

void GradSlice(GradContext& c) {
  NoGradientForOthers(c, "slice bounds are not differentiable");
  std::vector<std::string> in{c.output_grad(0), c.ShapeOf(c.input(0)), c.input(1), c.input(2)};
  if (c.has_input(3) || c.has_input(4)) in.push_back(c.input(3));
  if (c.has_input(4)) in.push_back(c.input(4));
  c.SetInputGrad(0, c.EmitOneflow(op::kSliceGrad, in));
}

void GradGather(GradContext& c) {
  NoGradientForOthers(c, "indices are not differentiable");
  const int64_t axis = NormalizedAxis(c, c.attrs().GetInt("axis"));
  c.SetInputGrad(0, c.EmitOneflow(op::kGatherGrad, {c.output_grad(0), c.input(1), c.ShapeOf(c.input(0))},
                                  MakeAttrs({{"axis", Attribute::Int(axis)}})));
}

void GradGatherElements(GradContext& c) {
  NoGradientForOthers(c, "indices are not differentiable");
  const AttrMap attrs = MakeAttrs({{"axis", Attribute::Int(c.attrs().GetInt("axis"))},
                                   {"reduction", Attribute::String("add")}});
  c.SetInputGrad(0, c.Emit1(op::kScatterElements, {ZerosLike(c, 0), c.input(1), c.output_grad(0)}, attrs));
}

void GradExpand(GradContext& c) {
  NoGradientForOthers(c, "the shape is not differentiable");
  c.SetInputGrad(0, c.SumToInputShape(c.output_grad(0), 0));
}

// Y's dims are (rep_0 * d_0, rep_1 * d_1, ...) with X repeated outermost: view dY as
// (rep_0, d_0, rep_1, d_1, ...) and sum the rep axes.
void GradTile(GradContext& c) {
  NoGradientForOthers(c, "repeats are not differentiable");
  const std::vector<int64_t> reps = c.ConstantInts(1, "repeats");
  const TensorType& x = c.input_type(0);
  OF_CHECK(x.fully_known(), kUnsupported, "cannot differentiate ", c.node().Describe(),
           ": the input shape must be static, it is ", x.ToString());
  std::vector<int64_t> split, axes;
  for (size_t d = 0; d < reps.size(); ++d) {
    axes.push_back(static_cast<int64_t>(2 * d));
    split.push_back(reps[d]);
    split.push_back(x.dims[d].value);
  }
  const std::string v = c.Emit1(op::kReshape, {c.output_grad(0), c.Ints(split)});
  c.SetInputGrad(0, c.Emit1(op::kReduceSum, {v, c.Ints(axes)}, MakeAttrs({{"keepdims", Attribute::Int(0)}})));
}

// Constant mode only: dX is the window of dY that X occupies; cropped (negative) pads are padded back with zeros.
void GradPad(GradContext& c) {
  for (size_t i = 1; i < c.num_inputs(); ++i)
    if (c.needs_input_grad(i)) c.NoGradient(i, "pads and the pad value are not differentiable");
  if (!c.needs_input_grad(0)) return;
  const std::string& mode = c.attrs().GetString("mode");
  if (mode != "constant") {
    c.NoGradient(0, "only mode='constant' has a gradient rule, this node uses mode='" + mode + "'");
    return;
  }
  const int64_t r = c.input_rank(0);
  std::vector<int64_t> axes_v;
  if (c.has_input(3)) axes_v = c.ConstantInts(3, "axes");
  const std::vector<int64_t> pads =
      ExpandPads(r, c.ConstantInts(1, "pads"), c.has_input(3) ? &axes_v : nullptr, c.node().Describe());
  std::string g = c.output_grad(0);
  std::vector<int64_t> restore(static_cast<size_t>(2 * r), 0), starts, ends;
  bool cropped = false;
  for (int64_t d = 0; d < r; ++d) {
    const int64_t b = pads[static_cast<size_t>(d)], e = pads[static_cast<size_t>(d + r)];
    restore[static_cast<size_t>(d)] = std::max<int64_t>(-b, 0);
    restore[static_cast<size_t>(d + r)] = std::max<int64_t>(-e, 0);
    cropped = cropped || b < 0 || e < 0;
    starts.push_back(std::max<int64_t>(b, 0));
    ends.push_back(e > 0 ? -e : INT64_MAX);
  }
  if (cropped) g = c.Emit1(op::kPad, {g, c.Ints(restore)});
  c.SetInputGrad(0, c.Emit1(op::kSlice, {g, c.Ints(starts), c.Ints(ends)}));
}

void GradTrilu(GradContext& c) {
  NoGradientForOthers(c, "k is not differentiable");
  std::vector<std::string> in{c.output_grad(0)};
  if (c.has_input(1)) in.push_back(c.input(1));
  c.SetInputGrad(0, c.Emit1(op::kTrilu, in, MakeAttrs({{"upper", Attribute::Int(c.attrs().GetInt("upper"))}})));
}

// The adjoint of GatherND (batch_dims 0): scatter-add of dY into zeros at the same indices.
void GradGatherND(GradContext& c) {
  NoGradientForOthers(c, "indices are not differentiable");
  if (c.attrs().GetInt("batch_dims") != 0) {
    c.NoGradient(0, "only batch_dims = 0 has a gradient rule");
    return;
  }
  c.SetInputGrad(0, c.Emit1(op::kScatterND, {ZerosLike(c, 0), c.input(1), c.output_grad(0)},
                            MakeAttrs({{"reduction", Attribute::String("add")}})));
}

}  // namespace oneflow
