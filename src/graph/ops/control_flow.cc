// Op family: control flow. Each op runs a subgraph (graph/control_flow.h says what a subgraph is
// given); the kernels are engine/control_flow_kernels.cc, since running a graph is the engine's job.
//   If(cond, captured...) -> outputs             runs then_branch or else_branch
//   Loop(M?, cond?, v_initial..., captured...) -> v_final..., scan_outputs...
//                                                runs body while i < M and cond; body(i, cond, v...)
//                                                -> (cond, v..., scan slices...); the slices of every
//                                                iteration are stacked on a new axis 0
//   Scan(states..., scan_inputs..., captured...) -> final states..., scan_outputs...   (opset 9+)
//                                                runs body once per slice along each scan input's
//                                                axis; body(states..., slices...) -> (states...,
//                                                output slices...), stacked along scan_output_axes
// Outputs are shaped by the kernels; inference here types them as far as the subgraph tells.
#include <string>

#include "graph/control_flow.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

std::vector<TensorType> InputTypes(const InferContext& ctx, size_t from, size_t to) {
  std::vector<TensorType> out;
  for (size_t i = from; i < to; ++i) out.push_back(ctx.has_input(i) ? ctx.input_type(i) : TensorType());
  return out;
}

// A scalar-like control input (one element): M of Loop, cond of If and Loop.
void CheckControlInput(const InferContext& ctx, size_t i, DType want, const char* name) {
  if (!ctx.has_input(i)) return;
  const TensorType& t = ctx.input_type(i);
  if (t.dtype != want) ctx.Error(name, " must be ", DTypeName(want), ", got ", t.ToString());
  if (t.fully_known() && NumElements(t.ToShape()) != 1) ctx.Error(name, " must hold one element, got ", t.ToString());
}

// `element` with a dim of `length` inserted at `axis` (normalized against the result's rank).
TensorType Stacked(const TensorType& element, Dim length, int64_t axis, const InferContext& ctx, size_t k) {
  if (!element.has_rank) return TensorType::UnknownShape(element.dtype);
  const int64_t r = element.rank() + 1;
  if (axis < -r || axis >= r) ctx.Error("scan_output_axes[", k, "] = ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  TensorType out = element;
  out.dims.insert(out.dims.begin() + axis, length);
  return out;
}

void InferIf(InferContext& ctx) {
  const size_t declared = DeclaredInputCount(ctx.num_inputs(), ctx.attrs());
  CheckControlInput(ctx, 0, DType::kBool, "cond");
  const std::vector<TensorType> captured = InputTypes(ctx, declared, ctx.num_inputs());
  const SubgraphTypes then = BranchTypes(ctx.attrs().GetGraph("then_branch"), captured, ctx.node() + ", then_branch");
  const SubgraphTypes other = BranchTypes(ctx.attrs().GetGraph("else_branch"), captured, ctx.node() + ", else_branch");
  if (then.outputs.size() != ctx.num_outputs() || other.outputs.size() != ctx.num_outputs())
    ctx.Error("the node has ", ctx.num_outputs(), " outputs; then_branch returns ", then.outputs.size(),
              " and else_branch ", other.outputs.size());
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    const TensorType& a = then.outputs[i];
    const TensorType& b = other.outputs[i];
    if ((a.dtype != DType::kUndefined && b.dtype != DType::kUndefined && a.dtype != b.dtype) || !KindsJoin(a, b))
      ctx.Error("output ", i, " is ", a.ToString(), " in then_branch but ", b.ToString(), " in else_branch");
    TensorType joined = JoinTypes(a, b);
    if (joined.dtype == DType::kUndefined) joined.dtype = a.dtype != DType::kUndefined ? a.dtype : b.dtype;
    ctx.set_output(i, joined);
  }
}

void InferLoop(InferContext& ctx) {
  const size_t declared = DeclaredInputCount(ctx.num_inputs(), ctx.attrs());
  if (declared < 2) ctx.Error("Loop takes M and cond (either may be empty) before its loop-carried values");
  CheckControlInput(ctx, 0, DType::kInt64, "M (the trip count)");
  CheckControlInput(ctx, 1, DType::kBool, "cond");
  const size_t n = declared - 2;
  if (ctx.num_outputs() < n) ctx.Error(ctx.num_outputs(), " outputs, fewer than its ", n, " loop-carried values");
  const std::vector<TensorType> carried = InputTypes(ctx, 2, declared);
  for (size_t i = 0; i < n; ++i)
    if (!ctx.has_input(2 + i)) ctx.Error("loop-carried value ", i, " is missing");
  const SubgraphTypes body = LoopBodyTypes(ctx.attrs().GetGraph("body"), carried,
                                           InputTypes(ctx, declared, ctx.num_inputs()), ctx.node() + ", body");
  const size_t k = ctx.num_outputs() - n;
  if (body.outputs.size() != 1 + n + k)
    ctx.Error("the body returns ", body.outputs.size(), " outputs; the node needs 1 + ", n, " carried + ", k,
              " scan outputs");
  for (size_t i = 0; i < n; ++i) {
    // Typed as ONNX types it: the body's output kind (a carried optional the body always fills is
    // not optional once the loop has run), with the dims the iterations keep.
    TensorType out = body.inputs[2 + i];
    if (!body.outputs[1 + i].unknown()) out.is_optional = body.outputs[1 + i].is_optional;
    ctx.set_output(i, out);
  }
  for (size_t j = 0; j < k; ++j) {
    const TensorType& element = body.outputs[1 + n + j];
    if (!element.is_tensor()) ctx.Error("scan output ", j, " is ", element.ToString(), "; scan outputs are tensors");
    ctx.set_output(n + j, element.has_rank ? Stacked(element, Dim::Unknown(), 0, ctx, j)
                                           : TensorType::UnknownShape(element.dtype));
  }
}

void InferScan(InferContext& ctx) {
  const size_t declared = DeclaredInputCount(ctx.num_inputs(), ctx.attrs());
  const ScanSpec spec = ParseScanSpec(ctx.attrs(), declared, ctx.num_outputs(), ctx.node());
  const std::vector<TensorType> states = InputTypes(ctx, 0, spec.num_states);
  const std::vector<TensorType> scans = InputTypes(ctx, spec.num_states, declared);
  // The sequence length: the scan axis of every scan input, which must agree.
  Dim length = Dim::Unknown();
  for (size_t j = 0; j < scans.size(); ++j) {
    if (!scans[j].has_rank || scans[j].rank() == 0) continue;
    int64_t axis = spec.input_axes[j];
    if (axis < -scans[j].rank() || axis >= scans[j].rank())
      ctx.Error("scan_input_axes[", j, "] = ", axis, " is out of range for ", scans[j].ToString());
    if (axis < 0) axis += scans[j].rank();
    const Dim& d = scans[j].dims[static_cast<size_t>(axis)];
    if (d.known() && length.known() && d.value != length.value)
      ctx.Error("scan input ", j, " has ", d.value, " steps along its axis; an earlier one has ", length.value);
    if (d.known() || (!length.known() && !d.symbol.empty())) length = d;
  }
  const SubgraphTypes body = ScanBodyTypes(ctx.attrs().GetGraph("body"), spec, states, scans,
                                           InputTypes(ctx, declared, ctx.num_inputs()), ctx.node() + ", body");
  for (size_t i = 0; i < spec.num_states; ++i)
    ctx.set_output(i, body.outputs[i].unknown() ? states[i] : JoinTypes(states[i], body.outputs[i]));
  for (size_t j = 0; j < spec.num_scan_outputs; ++j)
    ctx.set_output(spec.num_states + j,
                   Stacked(body.outputs[spec.num_states + j], length, spec.output_axes[j], ctx, j));
}

}  // namespace

void RegisterControlFlowOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kIf).Since(1).Input("cond").VariadicOutput("outputs")
      .RequiredAttr("then_branch", AttrKind::kGraph).RequiredAttr("else_branch", AttrKind::kGraph)
      .OutputsShapedByKernel().Infer(InferIf)
      .Doc("Runs then_branch when cond is true, else else_branch; returns that branch's outputs."));
  r.Register(OpSchema(OpId::kLoop).Since(1).OptionalInput("M").OptionalInput("cond").VariadicInput("v_initial").Accepting(kAnyKind)
      .VariadicOutput("v_final_and_scan_outputs").RequiredAttr("body", AttrKind::kGraph)
      .OutputsShapedByKernel().Infer(InferLoop)
      .Doc("Runs body while the iteration number is below M and cond holds, carrying values across "
           "iterations and stacking the scan outputs of every iteration."));
  r.Register(OpSchema(OpId::kScan).Since(9).VariadicInput("initial_state_and_scan_inputs")
      .VariadicOutput("final_state_and_scan_outputs").RequiredAttr("body", AttrKind::kGraph)
      .RequiredAttr("num_scan_inputs", AttrKind::kInt).OptionalAttr("scan_input_axes", AttrKind::kInts)
      .OptionalAttr("scan_input_directions", AttrKind::kInts).OptionalAttr("scan_output_axes", AttrKind::kInts)
      .OptionalAttr("scan_output_directions", AttrKind::kInts)
      .OutputsShapedByKernel().Infer(InferScan)
      .Doc("Runs body once per slice of the scan inputs, carrying states and stacking the output slices."));
}

}  // namespace oneflow
