// The subgraph signatures of If, Loop and Scan (graph/control_flow.h).
#include "graph/control_flow.h"

#include <algorithm>
#include <string>

#include "graph/op_schema.h"
#include "graph/prepare.h"

namespace oneflow {

namespace {

bool SameType(const TensorType& a, const TensorType& b) {
  return a.dtype == b.dtype && a.has_rank == b.has_rank && a.dims == b.dims && a.is_sequence == b.is_sequence &&
         a.is_optional == b.is_optional;
}

// `t` with nothing known of its (element) shape.
TensorType WithoutShape(TensorType t) {
  t.has_rank = false;
  t.dims.clear();
  return t;
}

size_t FormalInputs(const Graph& sub) { return sub.inputs.size() - sub.captured_inputs; }

std::vector<TensorType> OutputTypes(const Graph& typed) {
  std::vector<TensorType> out;
  for (int v : typed.outputs) out.push_back(typed.values[static_cast<size_t>(v)].type);
  return out;
}

}  // namespace

bool KindsJoin(const TensorType& a, const TensorType& b) {
  return a.unknown() || b.unknown() || a.is_sequence == b.is_sequence;
}

TensorType JoinTypes(const TensorType& a, const TensorType& b) {
  if (a.unknown()) return b;
  if (b.unknown()) return a;
  TensorType out = a;
  out.is_optional = a.is_optional || b.is_optional;
  if (!a.has_rank || !b.has_rank || a.rank() != b.rank()) return WithoutShape(out);
  for (size_t i = 0; i < out.dims.size(); ++i)
    if (!(a.dims[i] == b.dims[i])) out.dims[i] = Dim::Unknown();
  return out;
}

Graph TypedSubgraph(const Graph& sub, const std::vector<TensorType>& input_types) {
  OF_ASSERT(input_types.size() == sub.inputs.size());
  Graph g = sub;
  for (size_t i = 0; i < input_types.size(); ++i) {
    const TensorType& given = input_types[i];
    if (given.unknown()) continue;
    Value& v = g.values[static_cast<size_t>(g.inputs[i])];
    const bool kinds_fit = v.type.unknown() || (v.type.is_sequence == given.is_sequence &&
                                                (v.type.is_optional || !given.is_optional));
    OF_CHECK(kinds_fit && (v.type.dtype == DType::kUndefined || given.dtype == DType::kUndefined ||
                           v.type.dtype == given.dtype),
             kInvalidModel, "subgraph input '", v.name, "' is declared ", v.type.ToString(), " but is given ",
             given.ToString());
    // A rank the subgraph declares and the caller does not know stays; so does a declared optional
    // (the caller may pass none later, as a Loop's carried value may become).
    TensorType merged = given;
    if (!given.has_rank && v.type.has_rank) {
      merged.has_rank = true;
      merged.dims = v.type.dims;
    }
    merged.is_optional |= v.type.is_optional;
    if (merged.dtype == DType::kUndefined) merged.dtype = v.type.dtype;
    v.type = merged;
  }
  InferShapes(g);
  return g;
}

ScanSpec ParseScanSpec(const AttrMap& attrs, size_t declared_inputs, size_t num_outputs, const std::string& node) {
  ScanSpec s;
  const int64_t m = attrs.GetInt("num_scan_inputs");
  OF_CHECK(m >= 1 && static_cast<size_t>(m) <= declared_inputs, kInvalidModel, node, ": num_scan_inputs is ", m,
           "; it must be in [1, ", declared_inputs, "] (the node's inputs)");
  s.num_scan_inputs = static_cast<size_t>(m);
  s.num_states = declared_inputs - s.num_scan_inputs;
  OF_CHECK(num_outputs >= s.num_states, kInvalidModel, node, ": ", num_outputs, " outputs, fewer than its ",
           s.num_states, " states");
  s.num_scan_outputs = num_outputs - s.num_states;
  auto list = [&](const char* name, size_t count, bool directions) {
    std::vector<int64_t> v = attrs.GetInts(name, std::vector<int64_t>(count, 0));
    OF_CHECK(v.size() == count, kInvalidModel, node, ": ", name, " has ", v.size(), " entries for ", count,
             directions ? " scan inputs/outputs" : " scan inputs/outputs");
    if (directions)
      for (int64_t d : v) OF_CHECK(d == 0 || d == 1, kInvalidModel, node, ": ", name, " entries must be 0 or 1, got ", d);
    return v;
  };
  s.input_axes = list("scan_input_axes", s.num_scan_inputs, false);
  for (int64_t d : list("scan_input_directions", s.num_scan_inputs, true)) s.input_reverse.push_back(d != 0);
  s.output_axes = list("scan_output_axes", s.num_scan_outputs, false);
  for (int64_t d : list("scan_output_directions", s.num_scan_outputs, true)) s.output_reverse.push_back(d != 0);
  return s;
}

SubgraphTypes BranchTypes(const Graph& branch, const std::vector<TensorType>& captured, const std::string& node) {
  OF_CHECK(FormalInputs(branch) == 0, kInvalidModel, node, ": an If branch takes no inputs; '", branch.name,
           "' declares ", FormalInputs(branch));
  SubgraphTypes t;
  t.inputs = captured;
  t.outputs = OutputTypes(TypedSubgraph(branch, t.inputs));
  return t;
}

SubgraphTypes LoopBodyTypes(const Graph& body, const std::vector<TensorType>& carried,
                            const std::vector<TensorType>& captured, const std::string& node) {
  const size_t n = carried.size();
  OF_CHECK(FormalInputs(body) == 2 + n, kInvalidModel, node, ": the body takes ", FormalInputs(body),
           " inputs; a Loop with ", n, " loop-carried values passes ", 2 + n,
           " (iteration number, condition, the carried values)");
  OF_CHECK(body.outputs.size() >= 1 + n, kInvalidModel, node, ": the body returns ", body.outputs.size(),
           " outputs, fewer than the condition and ", n, " carried values");
  SubgraphTypes t;
  t.inputs.push_back(TensorType::Of(DType::kInt64, Shape{}));
  t.inputs.push_back(TensorType::Of(DType::kBool, Shape{}));
  t.inputs.insert(t.inputs.end(), carried.begin(), carried.end());
  t.inputs.insert(t.inputs.end(), captured.begin(), captured.end());
  // Carried values whose shape an iteration changes (a growing sequence, say) run with the dims
  // that stay; a few rounds reach the fixed point, and anything still moving has no shape.
  for (int round = 0;; ++round) {
    t.outputs = OutputTypes(TypedSubgraph(body, t.inputs));
    const TensorType& cond = t.outputs[0];
    OF_CHECK(cond.dtype == DType::kBool || cond.dtype == DType::kUndefined, kInvalidModel, node,
             ": the body's condition output is ", cond.ToString(), ", not bool");
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      TensorType& in = t.inputs[2 + i];
      const TensorType& out = t.outputs[1 + i];
      OF_CHECK(out.unknown() || ((out.dtype == in.dtype || out.dtype == DType::kUndefined) && KindsJoin(in, out)),
               kInvalidModel, node, ": carried value ", i, " enters the body as ", in.ToString(), " and leaves it as ",
               out.ToString());
      if (out.unknown() || SameType(in, out)) continue;
      TensorType joined = round < 3 ? JoinTypes(in, out) : WithoutShape(JoinTypes(in, out));
      if (!SameType(joined, in)) {
        in = joined;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return t;
}

SubgraphTypes SequenceMapBodyTypes(const Graph& body, const std::vector<TensorType>& inputs,
                                   const std::vector<TensorType>& captured, const std::string& node) {
  OF_CHECK(FormalInputs(body) == inputs.size(), kInvalidModel, node, ": the body takes ", FormalInputs(body),
           " inputs; the node passes ", inputs.size(), " (an element of the sequence, then the additional inputs)");
  SubgraphTypes t;
  for (const TensorType& in : inputs) t.inputs.push_back(in.is_sequence ? in.Element() : in);
  t.inputs.insert(t.inputs.end(), captured.begin(), captured.end());
  t.outputs = OutputTypes(TypedSubgraph(body, t.inputs));
  for (size_t i = 0; i < t.outputs.size(); ++i)
    OF_CHECK(t.outputs[i].is_tensor(), kInvalidModel, node, ": body output ", i, " is ", t.outputs[i].ToString(),
             "; each must be a tensor (an element of an output sequence)");
  return t;
}

SubgraphTypes ScanBodyTypes(const Graph& body, const ScanSpec& spec, const std::vector<TensorType>& states,
                            const std::vector<TensorType>& scan_inputs, const std::vector<TensorType>& captured,
                            const std::string& node) {
  OF_CHECK(FormalInputs(body) == spec.num_states + spec.num_scan_inputs, kInvalidModel, node, ": the body takes ",
           FormalInputs(body), " inputs; the Scan passes ", spec.num_states, " states and ", spec.num_scan_inputs,
           " scan slices");
  OF_CHECK(body.outputs.size() == spec.num_states + spec.num_scan_outputs, kInvalidModel, node, ": the body returns ",
           body.outputs.size(), " outputs; the Scan has ", spec.num_states, " states and ", spec.num_scan_outputs,
           " scan outputs");
  SubgraphTypes t;
  t.inputs = states;
  for (size_t j = 0; j < scan_inputs.size(); ++j) {
    const TensorType& x = scan_inputs[j];
    if (!x.has_rank) {
      t.inputs.push_back(TensorType::UnknownShape(x.dtype));
      continue;
    }
    OF_CHECK(x.rank() >= 1, kInvalidModel, node, ": scan input ", j, " is a scalar");
    int64_t axis = spec.input_axes[j];
    OF_CHECK(axis >= -x.rank() && axis < x.rank(), kInvalidModel, node, ": scan_input_axes[", j, "] = ", axis,
             " is out of range for ", x.ToString());
    if (axis < 0) axis += x.rank();
    TensorType slice = x;
    slice.dims.erase(slice.dims.begin() + axis);
    t.inputs.push_back(slice);
  }
  t.inputs.insert(t.inputs.end(), captured.begin(), captured.end());
  t.outputs = OutputTypes(TypedSubgraph(body, t.inputs));
  for (size_t i = 0; i < spec.num_states; ++i)
    OF_CHECK((t.outputs[i].dtype == states[i].dtype || t.outputs[i].dtype == DType::kUndefined) &&
                 KindsJoin(states[i], t.outputs[i]), kInvalidModel, node,
             ": state ", i, " enters the body as ", states[i].ToString(), " and leaves it as ", t.outputs[i].ToString());
  return t;
}

}  // namespace oneflow
