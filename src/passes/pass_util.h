// Small rewriting steps the fusion passes share.
#pragma once

#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/op_schema.h"

namespace oneflow {

// Who reads each value: how many node inputs, the (last) reading node, and whether it is a graph
// output. A rewrite may absorb a value only its one reader sees.
struct ValueUses {
  std::vector<int> consumers;  // per value: number of node inputs reading it
  std::vector<int> consumer;   // per value: the (last) consuming node
  std::vector<char> is_output;
};

inline ValueUses CountValueUses(const Graph& g) {
  ValueUses u;
  u.consumers.assign(g.values.size(), 0);
  u.consumer.assign(g.values.size(), kNoValue);
  u.is_output.assign(g.values.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs)
      if (v != kNoValue) {
        ++u.consumers[static_cast<size_t>(v)];
        u.consumer[static_cast<size_t>(v)] = static_cast<int>(n);
      }
  for (int v : g.outputs) u.is_output[static_cast<size_t>(v)] = 1;
  return u;
}

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
