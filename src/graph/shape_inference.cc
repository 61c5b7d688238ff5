// Static type and shape inference.
#include "graph/op_schema.h"
#include "graph/prepare.h"

namespace oneflow {

// Keeps the more informative of the declared and the inferred type.
static TensorType Merge(const TensorType& declared, const TensorType& inferred, const Node& n) {
  if (declared.dtype != DType::kUndefined && inferred.dtype != DType::kUndefined)
    OF_CHECK(declared.dtype == inferred.dtype, kInvalidModel, n.Describe(), ": output declared as ",
             declared.ToString(), " but inferred as ", inferred.ToString());
  TensorType out = inferred;
  if (out.dtype == DType::kUndefined) out.dtype = declared.dtype;
  if (!out.has_rank) return declared.has_rank ? TensorType::Of(out.dtype, declared.dims) : out;
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

void InferNodeTypes(Graph& g, const Node& n) {
  OF_ASSERT(n.schema != nullptr);
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
