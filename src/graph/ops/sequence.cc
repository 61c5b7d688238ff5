// Op family: sequences and optionals, ONNX's two non-tensor value kinds (graph/tensor_type.h says
// how their types are written; base/tensor.h, ValueKind, how their values are). Kernels:
// engine/sequence_kernels.cc, beside the control-flow kernels, since SequenceMap runs a subgraph.
//   SequenceEmpty() -> seq                         SequenceConstruct(tensors...) -> seq
//   SequenceInsert(seq, tensor, position?) -> seq  SequenceErase(seq, position?) -> seq
//   SequenceAt(seq, position) -> tensor            SequenceLength(seq) -> int64 scalar
//   SplitToSequence(input, split?) -> seq          ConcatFromSequence(seq) -> tensor
//   SequenceMap(seq, additional..., captured...) -> seqs   runs body once per element
//   Optional(input?) -> optional                   OptionalHasElement(x?) -> bool scalar
//   OptionalGetElement(x) -> its element
// A sequence's length and its elements' shapes are known only at run time, so every kernel shapes
// its outputs (OutputsShapedByKernel); inference types them as far as the inputs tell.
#include <string>
#include <vector>

#include "graph/control_flow.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

// Sequences may hold tensors of any dtype we store.
void CheckElementDType(const InferContext& ctx, DType dtype, const char* what) {
  if (dtype != DType::kUndefined && DTypeSize(dtype) == 0)
    ctx.Error(what, " has dtype ", DTypeName(dtype), ", which a sequence cannot hold");
}

// A position input: one int32 or int64.
void CheckPosition(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return;
  const TensorType& t = ctx.input_type(i);
  if (t.dtype != DType::kInt32 && t.dtype != DType::kInt64 && t.dtype != DType::kUndefined)
    ctx.Error("position must be int32 or int64, got ", t.ToString());
  if (t.fully_known() && NumElements(t.ToShape()) != 1) ctx.Error("position must be one element, got ", t.ToString());
}

// `axis` in [-rank, rank - 1], made non-negative.
int64_t AxisIn(const InferContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) ctx.Error("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// The element type a sequence holding both `a` and `b` has (the same dtype, checked).
TensorType JoinElements(const InferContext& ctx, const TensorType& a, const TensorType& b) {
  if (a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype)
    ctx.Error("a sequence of ", DTypeName(a.dtype), " cannot hold a tensor of ", DTypeName(b.dtype));
  TensorType out = JoinTypes(a, b);
  if (out.dtype == DType::kUndefined) out.dtype = b.dtype;
  return out;
}

void InferSequenceEmpty(InferContext& ctx) {
  const int64_t code = ctx.attrs().GetInt("dtype", static_cast<int64_t>(DType::kFloat32));
  if (!IsKnownDType(static_cast<int32_t>(code))) ctx.Error("dtype ", code, " is not a known element type");
  const DType dtype = static_cast<DType>(code);
  CheckElementDType(ctx, dtype, "the sequence");
  ctx.set_output(0, TensorType::SequenceOf(TensorType::UnknownShape(dtype)));
}

void InferSequenceConstruct(InferContext& ctx) {
  TensorType element = ctx.input_type(0);
  CheckElementDType(ctx, element.dtype, "input 0");
  for (size_t i = 1; i < ctx.num_inputs(); ++i) element = JoinElements(ctx, element, ctx.input_type(i));
  ctx.set_output(0, TensorType::SequenceOf(element));
}

void InferSequenceInsert(InferContext& ctx) {
  CheckPosition(ctx, 2);
  const TensorType seq = ctx.input_type(0);
  // An empty sequence's element shape says nothing: the inserted tensor's does.
  TensorType element = JoinElements(ctx, seq.Element(), ctx.input_type(1));
  ctx.set_output(0, TensorType::SequenceOf(element));
}

void InferSequenceAt(InferContext& ctx) {
  CheckPosition(ctx, 1);
  ctx.set_output(0, ctx.input_type(0).Element());
}

void InferSequenceErase(InferContext& ctx) {
  CheckPosition(ctx, 1);
  ctx.set_output(0, ctx.input_type(0).Unwrapped());
}

void InferSequenceLength(InferContext& ctx) { ctx.set_output(0, TensorType::Of(DType::kInt64, Shape{})); }

void InferSplitToSequence(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  CheckElementDType(ctx, x.dtype, "the input");
  if (ctx.has_input(1)) {
    const TensorType& split = ctx.input_type(1);
    if (split.dtype != DType::kInt32 && split.dtype != DType::kInt64 && split.dtype != DType::kUndefined)
      ctx.Error("split must be int32 or int64, got ", split.ToString());
    if (split.has_rank && split.rank() > 1) ctx.Error("split must be a scalar or 1-D, got ", split.ToString());
  }
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::SequenceOf(TensorType::UnknownShape(x.dtype)));
    return;
  }
  const int64_t axis = AxisIn(ctx, ctx.attrs().GetInt("axis", 0), x.rank());
  TensorType element = x;
  const bool keepdims = ctx.attrs().GetInt("keepdims", 1) != 0;
  if (ctx.has_input(1)) {
    element.dims[static_cast<size_t>(axis)] = Dim::Unknown();
  } else if (keepdims) {
    element.dims[static_cast<size_t>(axis)] = Dim::Known(1);
  } else {
    element.dims.erase(element.dims.begin() + axis);
  }
  ctx.set_output(0, TensorType::SequenceOf(element));
}

void InferConcatFromSequence(InferContext& ctx) {
  const TensorType element = ctx.input_type(0).Element();
  const bool new_axis = ctx.attrs().GetInt("new_axis", 0) != 0;
  if (!element.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(element.dtype));
    return;
  }
  const int64_t r = element.rank() + (new_axis ? 1 : 0);
  if (!new_axis && r == 0) ctx.Error("cannot concatenate scalars without new_axis=1");
  const int64_t axis = AxisIn(ctx, ctx.attrs().GetInt("axis"), r);
  TensorType out = element;
  if (new_axis) out.dims.insert(out.dims.begin() + axis, Dim::Unknown());
  else out.dims[static_cast<size_t>(axis)] = Dim::Unknown();
  ctx.set_output(0, out);
}

void InferSequenceMap(InferContext& ctx) {
  const size_t declared = DeclaredInputCount(ctx.num_inputs(), ctx.attrs());
  std::vector<TensorType> inputs, captured;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) (i < declared ? inputs : captured).push_back(ctx.input_type(i));
  const SubgraphTypes body = SequenceMapBodyTypes(ctx.attrs().GetGraph("body"), inputs, captured, ctx.node() + ", body");
  if (body.outputs.size() != ctx.num_outputs())
    ctx.Error("the body returns ", body.outputs.size(), " outputs for the node's ", ctx.num_outputs());
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, TensorType::SequenceOf(body.outputs[i]));
}

void InferOptional(InferContext& ctx) {
  if (ctx.has_input(0)) {
    ctx.set_output(0, TensorType::OptionalOf(ctx.input_type(0)));
    return;
  }
  if (!ctx.attrs().has("type")) ctx.Error("an Optional without an input needs the 'type' attribute");
  const TensorType& type = ctx.attrs().GetType("type");
  if (type.is_optional) ctx.Error("'type' is ", type.ToString(), "; an optional cannot hold an optional");
  ctx.set_output(0, TensorType::OptionalOf(type));
}

void InferOptionalHasElement(InferContext& ctx) { ctx.set_output(0, TensorType::Of(DType::kBool, Shape{})); }

void InferOptionalGetElement(InferContext& ctx) { ctx.set_output(0, ctx.input_type(0).Unwrapped()); }

}  // namespace

void RegisterSequenceOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kSequenceEmpty).Since(11).Output("output").Attr("dtype", Attribute::Int(1))
      .OutputsShapedByKernel().Infer(InferSequenceEmpty).Doc("An empty sequence of tensors of `dtype`."));
  r.Register(OpSchema(OpId::kSequenceConstruct).Since(11).VariadicInput("inputs").Output("output_sequence")
      .OutputsShapedByKernel().Infer(InferSequenceConstruct).Doc("A sequence of the inputs, in order."));
  r.Register(OpSchema(OpId::kSequenceInsert).Since(11).Input("input_sequence").Accepting(kSequenceKind)
      .Input("tensor").OptionalInput("position").Output("output_sequence")
      .OutputsShapedByKernel().Infer(InferSequenceInsert)
      .Doc("The sequence with `tensor` inserted before `position` (in [-n, n]; default: at the end)."));
  r.Register(OpSchema(OpId::kSequenceAt).Since(11).Input("input_sequence").Accepting(kSequenceKind)
      .Input("position").Output("tensor").OutputsShapedByKernel().Infer(InferSequenceAt)
      .Doc("The element at `position` (in [-n, n - 1])."));
  r.Register(OpSchema(OpId::kSequenceErase).Since(11).Input("input_sequence").Accepting(kSequenceKind)
      .OptionalInput("position").Output("output_sequence").OutputsShapedByKernel().Infer(InferSequenceErase)
      .Doc("The sequence without the element at `position` (in [-n, n - 1]; default: the last)."));
  r.Register(OpSchema(OpId::kSequenceLength).Since(11).Input("input_sequence").Accepting(kSequenceKind)
      .Output("length").OutputsShapedByKernel().Infer(InferSequenceLength)
      .Doc("The number of elements, as an int64 scalar."));
  r.Register(OpSchema(OpId::kSplitToSequence).Since(11).Input("input").OptionalInput("split")
      .Output("output_sequence").Attr("axis", Attribute::Int(0)).Attr("keepdims", Attribute::Int(1))
      .OutputsShapedByKernel().Infer(InferSplitToSequence)
      .Doc("Splits `input` along `axis` into a sequence: into pieces of the sizes `split` lists, into "
           "pieces of `split` elements (the last may be shorter) when it is a scalar, else into single "
           "slices (the axis dropped when keepdims is 0)."));
  r.Register(OpSchema(OpId::kConcatFromSequence).Since(11).Input("input_sequence").Accepting(kSequenceKind)
      .Output("concat_result").RequiredAttr("axis", AttrKind::kInt).Attr("new_axis", Attribute::Int(0))
      .OutputsShapedByKernel().Infer(InferConcatFromSequence)
      .Doc("Concatenates the elements along `axis` (stacks them on a new axis when new_axis is 1)."));
  r.Register(OpSchema(OpId::kSequenceMap).Since(17).Input("input_sequence").Accepting(kSequenceKind)
      .VariadicInput("additional_inputs").Accepting(kTensorKind | kSequenceKind).VariadicOutput("out_sequence")
      .RequiredAttr("body", AttrKind::kGraph).OutputsShapedByKernel().Infer(InferSequenceMap)
      .Doc("Runs `body` once per element of input_sequence, given that element and, of each additional "
           "input, its element of the same index (a sequence of the same length) or the whole tensor; "
           "output sequence k collects body output k."));
  // Optional-15 takes tensors and sequences; 18 extends OptionalHasElement/GetElement to take them
  // bare (and HasElement to take nothing), which these schemas accept at every version.
  r.Register(OpSchema(OpId::kOptional).Since(15).OptionalInput("input").Accepting(kTensorKind | kSequenceKind)
      .Output("output").OptionalAttr("type", AttrKind::kType).OutputsShapedByKernel().Infer(InferOptional)
      .Doc("An optional holding `input`, or an empty one of element type `type`."));
  r.Register(OpSchema(OpId::kOptionalHasElement).Since(15).OptionalInput("input").Accepting(kAnyKind)
      .Output("output").OutputsShapedByKernel().Infer(InferOptionalHasElement)
      .Doc("Whether `input` holds a value (false for an absent input)."));
  r.Register(OpSchema(OpId::kOptionalGetElement).Since(15).Input("input").Accepting(kAnyKind).Output("output")
      .OutputsShapedByKernel().Infer(InferOptionalGetElement)
      .Doc("The value `input` holds; an error for an empty optional."));
}

}  // namespace oneflow
