// Graph IR helpers: value table, topological order.
#include "graph/graph.h"

#include <algorithm>

namespace oneflow {

std::string Node::Describe() const {
  std::string s = domain.empty() ? op_type : domain + "::" + op_type;
  if (!name.empty()) s += " '" + name + "'";
  return s + " (opset " + std::to_string(opset) + ")";
}

size_t CapturedInputCount(const AttrMap& attrs) {
  size_t count = 0;
  for (const auto& [name, a] : attrs.all())
    if (a.kind == AttrKind::kGraph && a.graph) count = std::max(count, a.graph->captured_inputs);
  return count;
}

int Graph::AddValue(const std::string& value_name, TensorType type) {
  std::string n = value_name.empty() ? UniqueName("_v") : value_name;
  OF_CHECK(by_name_.count(n) == 0, kInvalidModel, "value name '", n, "' is defined twice");
  Value v;
  v.name = n;
  v.type = std::move(type);
  values.push_back(std::move(v));
  int id = static_cast<int>(values.size()) - 1;
  by_name_[n] = id;
  return id;
}

int Graph::FindValue(const std::string& value_name) const {
  auto it = by_name_.find(value_name);
  return it == by_name_.end() ? kNoValue : it->second;
}

int Graph::AddConstant(const std::string& value_name, Tensor t) {
  int id = AddValue(value_name, TensorType::Of(t.dtype(), t.shape()));
  values[static_cast<size_t>(id)].constant = std::move(t);
  return id;
}

std::string Graph::UniqueName(const std::string& base) {
  for (size_t i = values.size();; ++i) {
    std::string n = base + "_" + std::to_string(i);
    if (!by_name_.count(n)) return n;
  }
}

void Graph::Reindex() {
  by_name_.clear();
  for (size_t i = 0; i < values.size(); ++i) by_name_[values[i].name] = static_cast<int>(i);
}

std::vector<int> Graph::Producers() const {
  std::vector<int> producer(values.size(), kNoValue);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int v : nodes[n].outputs)
      if (v != kNoValue) producer[static_cast<size_t>(v)] = static_cast<int>(n);
  return producer;
}

std::vector<int> Graph::TopologicalOrder() const {
  // Kahn's algorithm over node dependencies; keeps the file order among ready nodes, which makes
  // plans deterministic and easy to read.
  std::vector<int> producer = Producers();
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> consumers(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int v : nodes[n].inputs) {
      if (v == kNoValue) continue;
      int p = producer[static_cast<size_t>(v)];
      if (p == kNoValue) continue;
      ++pending[n];
      consumers[static_cast<size_t>(p)].push_back(static_cast<int>(n));
    }
  }
  std::vector<int> order, ready;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (pending[n] == 0) ready.push_back(static_cast<int>(n));
  std::reverse(ready.begin(), ready.end());
  while (!ready.empty()) {
    int n = ready.back();
    ready.pop_back();
    order.push_back(n);
    std::vector<int> newly;
    for (int c : consumers[static_cast<size_t>(n)])
      if (--pending[static_cast<size_t>(c)] == 0) newly.push_back(c);
    std::sort(newly.rbegin(), newly.rend());
    ready.insert(ready.end(), newly.begin(), newly.end());
    std::sort(ready.rbegin(), ready.rend());
  }
  if (order.size() != nodes.size()) {
    for (size_t n = 0; n < nodes.size(); ++n)
      if (pending[n] > 0)
        Fail(ErrorCode::kInvalidModel, "graph has a cycle through node ", nodes[n].Describe());
  }
  return order;
}

}  // namespace oneflow
