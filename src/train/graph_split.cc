// Forward/backward/eval graph extraction and activation-checkpoint selection.
#include "train/graph_split.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "base/error.h"

namespace oneflow::train {

Graph ExtractSubgraph(const Graph& g, const std::vector<int>& node_order, const std::vector<int>& inputs,
                      const std::vector<int>& outputs) {
  const std::vector<int> producer = g.Producers();
  std::vector<char> allowed(g.nodes.size(), 0), keep_node(g.nodes.size(), 0);
  for (int n : node_order) allowed[static_cast<size_t>(n)] = 1;
  std::vector<char> is_input(g.values.size(), 0), input_used(g.values.size(), 0), visited(g.values.size(), 0);
  for (int v : inputs) is_input[static_cast<size_t>(v)] = 1;

  std::vector<int> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    const size_t v = static_cast<size_t>(stack.back());
    stack.pop_back();
    if (visited[v]) continue;
    visited[v] = 1;
    if (is_input[v]) { input_used[v] = 1; continue; }
    if (g.values[v].constant.defined()) continue;
    const int p = producer[v];
    OF_CHECK(p != kNoValue && allowed[static_cast<size_t>(p)], kInternal, "training graph split: value '",
             g.values[v].name, "' cannot be computed from the part's inputs");
    if (keep_node[static_cast<size_t>(p)]) continue;
    keep_node[static_cast<size_t>(p)] = 1;
    for (int in : g.nodes[static_cast<size_t>(p)].inputs)
      if (in != kNoValue) stack.push_back(in);
  }

  Graph out;
  out.name = g.name;
  out.producer = g.producer;
  out.opset_imports = g.opset_imports;
  std::vector<int> remap(g.values.size(), kNoValue);
  auto map_value = [&](int v) {
    if (v == kNoValue) return kNoValue;
    int& m = remap[static_cast<size_t>(v)];
    if (m == kNoValue) {
      const Value& src = g.values[static_cast<size_t>(v)];
      m = src.constant.defined() ? out.AddConstant(src.name, src.constant) : out.AddValue(src.name, src.type);
      out.values[static_cast<size_t>(m)].type = src.type;
      out.values[static_cast<size_t>(m)].is_parameter = src.is_parameter;
    }
    return m;
  };
  for (int v : inputs)
    if (input_used[static_cast<size_t>(v)]) out.inputs.push_back(map_value(v));
  for (int n : node_order) {
    if (!keep_node[static_cast<size_t>(n)]) continue;
    Node node = g.nodes[static_cast<size_t>(n)];
    for (int& v : node.inputs) v = map_value(v);
    for (int& v : node.outputs) {
      OF_CHECK(v == kNoValue || !is_input[static_cast<size_t>(v)], kInternal, "training graph split: node ",
               node.Describe(), " recomputes '", g.values[static_cast<size_t>(v)].name, "', an input of the part");
      v = map_value(v);
    }
    out.nodes.push_back(std::move(node));
  }
  for (int v : outputs) out.outputs.push_back(map_value(v));
  return out;
}

std::vector<Separator> SingleValueSeparators(const Graph& g, const std::vector<int>& order) {
  const std::vector<int> producer = g.Producers();
  const size_t m = order.size();
  std::vector<int> pos(g.nodes.size(), -1);
  for (size_t i = 0; i < m; ++i) pos[static_cast<size_t>(order[i])] = static_cast<int>(i);
  std::vector<int> last_use(g.values.size(), -1);
  for (size_t i = 0; i < m; ++i)
    for (int v : g.nodes[static_cast<size_t>(order[i])].inputs)
      if (v != kNoValue) last_use[static_cast<size_t>(v)] = static_cast<int>(i);
  // Values crossing the boundary after position i: count and the sum of their ids (which is the
  // id itself when exactly one crosses).
  std::vector<int64_t> count(m + 1, 0), id_sum(m + 1, 0);
  for (size_t v = 0; v < g.values.size(); ++v) {
    int p = producer[v];
    if (p == kNoValue || pos[static_cast<size_t>(p)] < 0) continue;
    int d = pos[static_cast<size_t>(p)], l = last_use[v];
    if (l <= d) continue;
    count[static_cast<size_t>(d)] += 1;
    count[static_cast<size_t>(l)] -= 1;
    id_sum[static_cast<size_t>(d)] += static_cast<int64_t>(v);
    id_sum[static_cast<size_t>(l)] -= static_cast<int64_t>(v);
  }
  std::vector<Separator> out;
  int64_t live = 0, ids = 0;
  for (size_t i = 0; i + 1 < m; ++i) {
    live += count[i];
    ids += id_sum[i];
    if (live != 1) continue;
    const int v = static_cast<int>(ids);
    const Node& n = g.nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])];
    int real_outputs = 0;
    for (int o : n.outputs) real_outputs += o != kNoValue;
    if (real_outputs == 1) out.push_back({i, v});
  }
  return out;
}

namespace {

size_t StaticBytes(const TensorType& t) {
  if (!t.has_rank || t.dtype == DType::kUndefined) return 0;
  size_t n = DTypeSize(t.dtype);
  for (const Dim& d : t.dims) n *= d.known() ? static_cast<size_t>(std::max<int64_t>(d.value, 1)) : 1;
  return n;
}

void AppendUnique(std::vector<int>& list, std::vector<char>& seen, int v) {
  if (v == kNoValue || seen[static_cast<size_t>(v)]) return;
  seen[static_cast<size_t>(v)] = 1;
  list.push_back(v);
}

// Segment boundaries: separators of the forward order, chosen greedily so that each segment holds
// about sqrt(total saved bytes * mean boundary bytes) of saved activations (Chen et al.'s sqrt(n)
// rule generalized to unequal sizes).
std::set<int> ChooseCheckpoints(const Graph& g, const std::vector<int>& fwd_order,
                                const std::vector<char>& needed_by_backward) {
  std::vector<int> candidates;
  for (const Separator& s : SingleValueSeparators(g, fwd_order)) candidates.push_back(s.value);
  if (candidates.empty()) return {};
  double saved_total = 0, cand_total = 0;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (needed_by_backward[v]) saved_total += static_cast<double>(StaticBytes(g.values[v].type));
  for (int c : candidates) cand_total += static_cast<double>(StaticBytes(g.values[static_cast<size_t>(c)].type));
  const double threshold = std::sqrt(saved_total * cand_total / static_cast<double>(candidates.size()));

  std::set<int> chosen;
  std::vector<char> is_candidate(g.values.size(), 0);
  for (int c : candidates) is_candidate[static_cast<size_t>(c)] = 1;
  double since_last = 0;
  for (size_t i = 0; i < fwd_order.size(); ++i) {
    for (int o : g.nodes[static_cast<size_t>(fwd_order[i])].outputs) {
      if (o == kNoValue) continue;
      if (is_candidate[static_cast<size_t>(o)] && since_last >= threshold) {
        chosen.insert(o);
        since_last = 0;
      } else if (needed_by_backward[static_cast<size_t>(o)]) {
        since_last += static_cast<double>(StaticBytes(g.values[static_cast<size_t>(o)].type));
      }
    }
  }
  return chosen;
}

}  // namespace

TrainingGraphs SplitForTraining(const Graph& g, const SplitRequest& r) {
  const std::vector<int> producer = g.Producers();
  const std::vector<int> order = g.TopologicalOrder();
  // Backward nodes that only read the shape of a forward value (Shape, Size) run in forward: a
  // few int64s are kept instead of the whole activation.
  std::vector<char> in_forward(g.nodes.size(), 0);
  for (int n : order) {
    const Node& node = g.nodes[static_cast<size_t>(n)];
    bool forward = static_cast<size_t>(n) < r.first_backward_node;
    if (!forward && (node.op_type == op::kShape || node.op_type == op::kSize) && node.domain.empty()) {
      forward = true;
      for (int v : node.inputs) {
        int p = v == kNoValue ? kNoValue : producer[static_cast<size_t>(v)];
        if (p != kNoValue && !in_forward[static_cast<size_t>(p)]) forward = false;
      }
    }
    in_forward[static_cast<size_t>(n)] = forward;
  }
  // Forward order: each moved node right after the last producer of its inputs, so it does not
  // stretch the lifetime of the activation it measures.
  std::vector<int> fwd_order, bwd_order, moved_front;
  std::vector<std::vector<int>> moved_after(g.nodes.size());
  std::vector<int> position(g.nodes.size(), -1);
  int next_position = 0;
  for (int n : order) {
    if (!in_forward[static_cast<size_t>(n)]) { bwd_order.push_back(n); continue; }
    if (static_cast<size_t>(n) < r.first_backward_node) { position[static_cast<size_t>(n)] = next_position++; continue; }
    int last = kNoValue;
    for (int v : g.nodes[static_cast<size_t>(n)].inputs) {
      int p = v == kNoValue ? kNoValue : producer[static_cast<size_t>(v)];
      if (p != kNoValue && (last == kNoValue || position[static_cast<size_t>(p)] > position[static_cast<size_t>(last)])) last = p;
    }
    (last == kNoValue ? moved_front : moved_after[static_cast<size_t>(last)]).push_back(n);
  }
  fwd_order = moved_front;
  for (int n : order) {
    if (static_cast<size_t>(n) >= r.first_backward_node) continue;
    fwd_order.push_back(n);
    fwd_order.insert(fwd_order.end(), moved_after[static_cast<size_t>(n)].begin(), moved_after[static_cast<size_t>(n)].end());
  }
  auto is_forward_value = [&](int v) {
    int p = producer[static_cast<size_t>(v)];
    return p != kNoValue && in_forward[static_cast<size_t>(p)];
  };

  std::vector<char> needed(g.values.size(), 0);
  for (int n : bwd_order)
    for (int v : g.nodes[static_cast<size_t>(n)].inputs)
      if (v != kNoValue && is_forward_value(v)) needed[static_cast<size_t>(v)] = 1;

  TrainingGraphs out;
  std::vector<int> data_and_params = r.data_inputs;
  data_and_params.insert(data_and_params.end(), r.params.begin(), r.params.end());

  std::vector<int> saved, backward_order;
  std::vector<char> saved_seen(g.values.size(), 0);
  // User outputs and the loss leave forward anyway: backward reads them from there.
  std::vector<char> kept(g.values.size(), 0);
  for (int v : r.user_outputs) kept[static_cast<size_t>(v)] = 1;
  if (r.loss != kNoValue) kept[static_cast<size_t>(r.loss)] = 1;

  if (!r.checkpointing) {
    for (size_t v = 0; v < g.values.size(); ++v)
      if (needed[v]) AppendUnique(saved, saved_seen, static_cast<int>(v));
    backward_order = bwd_order;
  } else {
    std::set<int> ckpt = ChooseCheckpoints(g, fwd_order, needed);
    for (int c : ckpt) kept[static_cast<size_t>(c)] = 1;
    // Shapes measured in forward are kept: recomputing one would recompute what it measures.
    for (size_t n = r.first_backward_node; n < g.nodes.size(); ++n)
      if (in_forward[n])
        for (int v : g.nodes[n].outputs)
          if (v != kNoValue) kept[static_cast<size_t>(v)] = 1;
    std::vector<char> emitted(g.nodes.size(), 0);
    // Emits the forward nodes computing `v` from kept values, inputs and constants, producer-first.
    std::function<void(int)> recompute = [&](int v) {
      if (v == kNoValue || !is_forward_value(v)) return;
      if (kept[static_cast<size_t>(v)]) { AppendUnique(saved, saved_seen, v); return; }
      const int p = producer[static_cast<size_t>(v)];
      if (emitted[static_cast<size_t>(p)]) return;
      emitted[static_cast<size_t>(p)] = 1;
      for (int in : g.nodes[static_cast<size_t>(p)].inputs) recompute(in);
      backward_order.push_back(p);
      ++out.recomputed_nodes;
    };
    for (int n : bwd_order) {
      for (int v : g.nodes[static_cast<size_t>(n)].inputs) recompute(v);
      backward_order.push_back(n);
    }
    for (int c : ckpt) out.checkpoints.push_back(g.values[static_cast<size_t>(c)].name);
  }

  std::vector<int> fwd_outputs;
  std::vector<char> out_seen(g.values.size(), 0);
  for (int v : r.user_outputs) AppendUnique(fwd_outputs, out_seen, v);
  AppendUnique(fwd_outputs, out_seen, r.loss);
  for (int v : saved) AppendUnique(fwd_outputs, out_seen, v);
  out.forward = ExtractSubgraph(g, fwd_order, data_and_params, fwd_outputs);

  std::vector<int> bwd_inputs = saved;
  bwd_inputs.insert(bwd_inputs.end(), data_and_params.begin(), data_and_params.end());
  out.backward = ExtractSubgraph(g, backward_order, bwd_inputs, r.gradients);
  out.eval = ExtractSubgraph(g, fwd_order, data_and_params, r.user_outputs);
  for (int v : saved) out.saved.push_back(g.values[static_cast<size_t>(v)].name);
  return out;
}

}  // namespace oneflow::train
