// Small rewriting steps the fusion passes share.
#pragma once

#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/op_schema.h"

namespace oneflow {

// Drops the nodes marked in `removed` (indexed like g.nodes), keeping the others in their order.
inline void RemoveMarkedNodes(Graph& g, const std::vector<char>& removed) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!removed[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

// Turns `n` into the internal op `op` (domain ai.oneflow, which the graph then imports) with no
// attributes yet; its schema is resolved again by the caller.
inline void MakeOneflowOp(Graph& g, Node& n, const char* op) {
  n.op_type = op;
  n.domain = kOneflowDomain;
  n.opset = kOneflowDomainVersion;
  n.schema = nullptr;
  n.attrs = AttrMap();
  n.defaulted_attrs.clear();
  g.opset_imports.emplace(kOneflowDomain, kOneflowDomainVersion);
}

}  // namespace oneflow
