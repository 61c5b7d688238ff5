// Static type and shape inference.
#include "graph/op_schema.h"
#include "graph/prepare.h"

namespace oneflow {

bool ParamAccepts(uint8_t kinds, const TensorType& t) {
  if (t.unknown()) return true;
  if (t.is_optional && !(kinds & kOptionalKind)) return false;
  return (kinds & (t.is_sequence ? kSequenceKind : kTensorKind)) != 0;
}

// Keeps the more informative of the declared and the inferred type.
static TensorType Merge(const TensorType& declared, const TensorType& inferred, const Node& n) {
  if (inferred.unknown()) return declared;
  const bool same_kind = declared.is_sequence == inferred.is_sequence && declared.is_optional == inferred.is_optional;
  OF_CHECK(declared.unknown() || same_kind, kInvalidModel, n.Describe(), ": output declared as ",
           declared.ToString(), " but inferred as ", inferred.ToString());
  if (declared.dtype != DType::kUndefined && inferred.dtype != DType::kUndefined)
    OF_CHECK(declared.dtype == inferred.dtype, kInvalidModel, n.Describe(), ": output declared as ",
             declared.ToString(), " but inferred as ", inferred.ToString());
  TensorType out = inferred;
  if (out.dtype == DType::kUndefined) out.dtype = declared.dtype;
  if (!out.has_rank && declared.has_rank) {
    out.has_rank = true;
    out.dims = declared.dims;
  }
  if (!out.has_rank) return out;
  if (declared.has_rank && declared.rank() == out.rank()) {
    for (size_t i = 0; i < out.dims.size(); ++i)
      if (!out.dims[i].known() && (declared.dims[i].known() || out.dims[i].symbol.empty()))
        out.dims[i] = declared.dims[i];
  }
  return out;
}

void InferShapes(Graph& g) {
  for (int idx : g.TopologicalOrder()) InferNodeTypes(g, g.nodes[static_cast<size_t>(idx)]);
}

// Sequences and optionals reach only the inputs that accept them (ParamSpec::kinds); captured
// inputs of subgraph-carrying nodes take any kind.
static void CheckInputKinds(const Graph& g, const Node& n) {
  const std::vector<ParamSpec>& specs = n.schema->inputs;
  const size_t declared = n.inputs.size() - CapturedInputCount(n.attrs);
  for (size_t i = 0; i < declared && !specs.empty(); ++i) {
    if (n.inputs[i] == kNoValue) continue;
    const ParamSpec& spec = i < specs.size() ? specs[i] : specs.back();
    const Value& v = g.values[static_cast<size_t>(n.inputs[i])];
    OF_CHECK(ParamAccepts(spec.kinds, v.type), kInvalidModel, n.Describe(), ": input '", spec.name, "' ('", v.name,
             "') is ", v.type.ToString(), ", but the op takes ",
             spec.kinds == kTensorKind ? "a tensor there" : "another kind of value there");
  }
}

// String tensors hold constructed std::strings, not bytes: only ops whose kernels say so
// (OpSchema::takes_strings) may read or write one, so no byte-copying kernel ever meets one.
static void CheckStringValues(const Graph& g, const Node& n, bool outputs) {
  if (n.schema->takes_strings) return;
  const std::vector<int>& values = outputs ? n.outputs : n.inputs;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == kNoValue) continue;
    const Value& v = g.values[static_cast<size_t>(values[i])];
    OF_CHECK(v.type.dtype != DType::kString, kUnsupported, n.Describe(), ": ", outputs ? "output" : "input", " '",
             v.name, "' is ", v.type.ToString(), ", and this op does not take string tensors (docs/string-ops.md "
             "lists the ops that do)");
  }
}

void InferNodeTypes(Graph& g, const Node& n) {
  OF_ASSERT(n.schema != nullptr);
  CheckInputKinds(g, n);
  CheckStringValues(g, n, false);
  const std::string desc = n.Describe();
  InferContext ctx(n.attrs, n.opset, desc, n.outputs.size());
  for (int v : n.inputs) {
    if (v == kNoValue) {
      ctx.AddInput(nullptr, nullptr);
      continue;
    }
    const Value& val = g.values[static_cast<size_t>(v)];
    ctx.AddInput(&val.type, val.constant.defined() ? &val.constant : nullptr);
  }
  try {
    n.schema->infer(ctx);
  } catch (const Error& e) {
    // Shape errors found statically are model errors; keep the op's message.
    throw Error(e.code() == ErrorCode::kInvalidArgument ? ErrorCode::kInvalidModel : e.code(), e.what());
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i] == kNoValue) continue;
    Value& out = g.values[static_cast<size_t>(n.outputs[i])];
    out.type = Merge(out.type, ctx.output(i), n);
  }
  CheckStringValues(g, n, true);
}

int AppendTypedNode(Graph& g, const std::string& op, std::vector<int> inputs, const std::string& out, AttrMap attrs,
                    const std::string& node_name) {
  Node n;
  n.name = node_name.empty() ? out : node_name;
  n.op_type = op;
  auto it = g.opset_imports.find("");
  n.opset = it != g.opset_imports.end() ? it->second : kMaxOnnxOpset;
  n.inputs = std::move(inputs);
  n.outputs.push_back(g.AddValue(out));
  n.attrs = std::move(attrs);
  ResolveNodeSchema(n);
  InferNodeTypes(g, n);
  g.nodes.push_back(std::move(n));
  return g.nodes.back().outputs[0];
}

}  // namespace oneflow
