// Dead-code elimination.
#include <algorithm>

#include "passes/passes.h"

namespace oneflow {

int EliminateDeadCode(Graph& g) {
  std::vector<char> live_value(g.values.size(), 0);
  for (int v : g.outputs) live_value[static_cast<size_t>(v)] = 1;
  std::vector<char> live_node(g.nodes.size(), 0);
  // Walk backwards from the outputs in reverse topological order.
  std::vector<int> order = g.TopologicalOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = g.nodes[static_cast<size_t>(*it)];
    bool used = std::any_of(n.outputs.begin(), n.outputs.end(),
                            [&](int v) { return v != kNoValue && live_value[static_cast<size_t>(v)]; });
    if (!used) continue;
    live_node[static_cast<size_t>(*it)] = 1;
    for (int v : n.inputs)
      if (v != kNoValue) live_value[static_cast<size_t>(v)] = 1;
  }
  std::vector<Node> kept;
  int removed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (live_node[i]) kept.push_back(std::move(g.nodes[i]));
    else ++removed;
  }
  g.nodes = std::move(kept);
  // Drop the data of constants nobody reads (the values stay so ids remain stable).
  for (size_t v = 0; v < g.values.size(); ++v)
    if (!live_value[v] && g.values[v].constant.defined()) g.values[v].constant = Tensor();
  return removed;
}

}  // namespace oneflow
