// ColumnRowLayout: classify MatMul weights in topological order by what their input activation
// descends from.
#include "train/tensor_parallel.h"

#include <set>
#include <vector>

#include "graph/ops/binary_ops.h"

namespace oneflow::train {

namespace {

bool IsWeight(const Graph& g, int v) {
  if (v == kNoValue) return false;
  const Value& val = g.values[static_cast<size_t>(v)];
  return val.is_parameter && val.type.has_rank && val.type.rank() == 2;
}

}  // namespace

std::map<std::string, Sbp> ColumnRowLayout(const Graph& g) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs)
      if (v != kNoValue) producer[static_cast<size_t>(v)] = static_cast<int>(i);
  // Per node: 1 column MatMul, 2 row MatMul, 0 other.
  std::vector<int> kind(g.nodes.size(), 0);
  std::map<std::string, Sbp> layout;
  auto is_weight_matmul = [&](const Node& n) {
    return n.op_type == op::kMatMul && n.domain.empty() && n.inputs.size() == 2 && IsWeight(g, n.inputs[1]);
  };
  for (int ni : g.TopologicalOrder()) {
    const Node& n = g.nodes[static_cast<size_t>(ni)];
    if (!is_weight_matmul(n)) continue;
    // Walk back from the activation operand to the nearest weight MatMuls.
    bool after_column = false;
    std::vector<int> stack{n.inputs[0]};
    std::set<int> seen;
    while (!stack.empty() && !after_column) {
      int v = stack.back();
      stack.pop_back();
      if (v == kNoValue || !seen.insert(v).second) continue;
      int p = producer[static_cast<size_t>(v)];
      if (p < 0) continue;
      if (kind[static_cast<size_t>(p)] != 0) {
        after_column = kind[static_cast<size_t>(p)] == 1;
        continue;
      }
      for (int in : g.nodes[static_cast<size_t>(p)].inputs) stack.push_back(in);
    }
    kind[static_cast<size_t>(ni)] = after_column ? 2 : 1;
    layout[g.values[static_cast<size_t>(n.inputs[1])].name] = after_column ? Sbp::S(0) : Sbp::S(1);
  }
  // Biases of column MatMuls: a rank-1 weight added to the MatMul's result.
  for (const Node& n : g.nodes) {
    if (n.op_type != binary::Add::kName || n.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      int mm = n.inputs[static_cast<size_t>(side)], b = n.inputs[static_cast<size_t>(1 - side)];
      if (mm == kNoValue || b == kNoValue) continue;
      const Value& bv = g.values[static_cast<size_t>(b)];
      int p = producer[static_cast<size_t>(mm)];
      if (p >= 0 && kind[static_cast<size_t>(p)] == 1 && bv.is_parameter && bv.type.has_rank && bv.type.rank() == 1)
        layout[bv.name] = Sbp::S(0);
    }
  }
  return layout;
}

}  // namespace oneflow::train
