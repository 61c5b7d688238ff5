// Schema resolution and attribute validation.
#include "graph/op_schema.h"
#include "graph/prepare.h"

#include <map>
#include <memory>

namespace oneflow {

static void CheckArity(const Node& n, const std::vector<ParamSpec>& specs, const std::vector<int>& ids,
                       const char* what) {
  size_t min = 0, max = 0;
  bool variadic = false;
  for (const ParamSpec& p : specs) {
    if (p.arity == ParamArity::kSingle) ++min;
    if (p.arity == ParamArity::kVariadic) variadic = true;
    ++max;
  }
  if (variadic && min > 0 && specs.back().arity == ParamArity::kVariadic) --min;  // variadic may take >= 1
  OF_CHECK(ids.size() >= min && (variadic || ids.size() <= max), kInvalidModel, n.Describe(), " has ",
           ids.size(), " ", what, "s; the op takes ", min, variadic ? " or more" : (min == max ? "" : " to "),
           variadic || min == max ? "" : std::to_string(max));
  for (size_t i = 0; i < ids.size() && i < specs.size(); ++i) {
    if (specs[i].arity == ParamArity::kSingle)
      OF_CHECK(ids[i] != kNoValue, kInvalidModel, n.Describe(), ": required ", what, " '", specs[i].name,
               "' is missing");
  }
}

void ResolveSchemas(Graph& g) {
  for (Node& n : g.nodes) ResolveNodeSchema(n);
}

void ResolveNodeSchema(Node& n) {
  const OpRegistry& registry = OpRegistry::Global();
  const OpSchema* s = registry.Find(n.domain, n.op_type, n.opset);
  if (s == nullptr) {
    auto versions = registry.FindAllVersions(n.domain, n.op_type);
    std::string domain = n.domain.empty() ? "ai.onnx" : n.domain;
    if (versions.empty())
      Fail(ErrorCode::kUnsupported, "unsupported op '", n.op_type, "' (domain '", domain, "', opset ", n.opset,
           ")", n.name.empty() ? "" : " in node '" + n.name + "'");
    std::string ranges;
    for (const OpSchema* v : versions) {
      if (!ranges.empty()) ranges += ", ";
      ranges += std::to_string(v->since_version) + "+";
    }
    Fail(ErrorCode::kUnsupported, "op '", n.op_type, "' (domain '", domain, "') is not supported at opset ",
         n.opset, "; supported from opset ", ranges);
  }
  n.schema = s;
  // Subgraphs resolve with their node (a copy: an imported subgraph is shared and never edited).
  // Iterating a copy of the map: set() below replaces entries.
  const std::map<std::string, Attribute> attrs = n.attrs.all();
  for (const auto& [name, a] : attrs) {
    if (a.kind != AttrKind::kGraph || !a.graph) continue;
    bool resolved = true;
    for (const Node& inner : a.graph->nodes) resolved &= inner.schema != nullptr;
    if (resolved) continue;
    auto copy = std::make_shared<Graph>(*a.graph);
    try {
      ResolveSchemas(*copy);
    } catch (const Error& e) {
      throw Error(e.code(), n.Describe() + ", subgraph '" + name + "': " + e.what());
    }
    n.attrs.set(name, Attribute::Subgraph(std::move(copy)));
  }
  // Values a subgraph reads from the enclosing scope trail the declared inputs (Graph::captured_inputs).
  const size_t captured = CapturedInputCount(n.attrs);
  OF_CHECK(captured <= n.inputs.size(), kInvalidModel, n.Describe(), ": its subgraphs capture ", captured,
           " outer values but the node has ", n.inputs.size(), " inputs");
  CheckArity(n, s->inputs, std::vector<int>(n.inputs.begin(), n.inputs.end() - static_cast<long>(captured)), "input");
  CheckArity(n, s->outputs, n.outputs, "output");
  for (const AttrSpec& spec : s->attrs) {
    const Attribute* a = n.attrs.find(spec.name);
    if (a == nullptr) {
      OF_CHECK(!spec.required, kInvalidModel, n.Describe(), ": required attribute '", spec.name, "' is missing");
      if (spec.has_default) {
        n.attrs.set(spec.name, spec.default_value);
        n.defaulted_attrs.insert(spec.name);  // the ONNX exporter leaves these out
      }
      continue;
    }
    // ONNX writers sometimes store a single int as ints or vice versa; accept the obvious cases.
    OF_CHECK(a->kind == spec.kind, kInvalidModel, n.Describe(), ": attribute '", spec.name, "' is ",
             AttrKindName(a->kind), ", expected ", AttrKindName(spec.kind));
  }
}

}  // namespace oneflow

namespace oneflow {

void PrepareGraph(Graph& g) {
  ResolveSchemas(g);
  InferShapes(g);
}

}  // namespace oneflow
