// Turns the search's choices into the explained plan: per node SBPs, boxing steps, totals,
// per-device memory (parameters as stored, peak of live activations).
#include <algorithm>
#include <set>

#include "base/error.h"
#include "plan/plan_internal.h"

namespace oneflow {

NdSbp PartialOnBroadcastAxes(const NdSbp& s) {
  NdSbp p = s;
  for (Sbp& x : p)
    if (x.is_broadcast()) x = Sbp::P();
  return p;
}

void ReplayPlan(Plan& plan, const std::vector<int>& fed, const std::vector<NdSbp>& fed_sbp,
                const std::vector<std::vector<Candidate>>& cands, const std::vector<int>& choice) {
  const Graph& g = plan.logical;
  const Placement& P = plan.options.placement;
  const CostModel& cost = plan.options.cost;
  const int nd = P.ndim();
  plan.value_sbp.assign(g.values.size(), AllBroadcast(nd));
  for (size_t i = 0; i < fed.size(); ++i) plan.value_sbp[static_cast<size_t>(fed[i])] = fed_sbp[i];

  auto local_bytes = [&](int id, const NdSbp& s) {
    const Value& v = g.values[static_cast<size_t>(id)];
    return static_cast<int64_t>(NumElements(LocalShape(v.type.ToShape(), s, P.hierarchy, P.Coord(0)))) *
           static_cast<int64_t>(DTypeSize(v.type.dtype));
  };
  std::vector<int> last(g.values.size(), -1);
  for (size_t t = 0; t < plan.order.size(); ++t)
    for (int id : g.nodes[static_cast<size_t>(plan.order[t])].inputs)
      if (id != kNoValue) last[static_cast<size_t>(id)] = static_cast<int>(t);
  for (int id : g.outputs) last[static_cast<size_t>(id)] = static_cast<int>(plan.order.size());

  std::set<std::pair<int, std::string>> stored;  // (parameter, SBP) pairs held per device
  int64_t live = 0;
  // Optimizer state of a parameter held in SBP `s`: its local bytes per state tensor, divided over
  // its replicas (the product of its B axes) under ZeRO.
  auto add_optimizer_state = [&](int id, const NdSbp& s) {
    if (plan.options.optimizer_states <= 0) return;
    int64_t bytes = local_bytes(id, s) / static_cast<int64_t>(DTypeSize(g.values[static_cast<size_t>(id)].type.dtype)) * 4;
    int64_t replicas = 1;
    for (size_t a = 0; a < s.size(); ++a)
      if (s[a].is_broadcast()) replicas *= P.hierarchy[a];
    if (plan.options.zero_stage >= 1) bytes = (bytes + replicas - 1) / replicas;
    plan.optimizer_bytes += bytes * plan.options.optimizer_states;
  };
  for (int id : fed) {
    const NdSbp& s = plan.value_sbp[static_cast<size_t>(id)];
    if (g.values[static_cast<size_t>(id)].is_parameter) {  // a training graph's weight, fed as an input
      plan.param_bytes += local_bytes(id, s);
      add_optimizer_state(id, s);
    } else {
      live += local_bytes(id, s);
    }
  }
  plan.activation_bytes = live;
  for (size_t t = 0; t < plan.order.size(); ++t) {
    const Node& n = g.nodes[static_cast<size_t>(plan.order[t])];
    const Candidate& c = cands[t][static_cast<size_t>(choice[t])];
    NodePlan np;
    np.node = plan.order[t];
    np.in = c.in;
    np.out = c.out;
    np.flops = c.flops;
    np.compute_seconds = c.seconds;
    np.replicated = c.replicated && P.size() > 1;
    np.in_boxing.resize(n.inputs.size());
    np.out_boxing.resize(n.outputs.size());
    int64_t transient = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int id = n.inputs[i];
      if (id == kNoValue) continue;
      const Value& v = g.values[static_cast<size_t>(id)];
      if (v.constant.defined()) {
        if (v.is_parameter && stored.insert({id, NdSbpToString(c.in[i])}).second) {
          plan.param_bytes += local_bytes(id, c.in[i]);
          add_optimizer_state(id, c.in[i]);
        }
        continue;
      }
      const NdSbp& have = plan.value_sbp[static_cast<size_t>(id)];
      if (have != c.in[i]) {
        np.in_boxing[i] = PlanBoxing(v.type.ToShape(), v.type.dtype, have, c.in[i], P, cost);
        transient += local_bytes(id, c.in[i]);
      }
    }
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      int id = n.outputs[j];
      if (id == kNoValue) continue;
      const Value& v = g.values[static_cast<size_t>(id)];
      NdSbp s = c.out[j];
      if (!v.sbp.empty() && v.sbp != s) {
        np.out_boxing[j] = PlanBoxing(v.type.ToShape(), v.type.dtype, s, v.sbp, P, cost);
        s = v.sbp;
      }
      plan.value_sbp[static_cast<size_t>(id)] = s;
      live += local_bytes(id, s);
    }
    plan.activation_bytes = std::max(plan.activation_bytes, live + transient);
    for (int id : n.inputs)
      if (id != kNoValue && last[static_cast<size_t>(id)] == static_cast<int>(t) &&
          !g.values[static_cast<size_t>(id)].constant.defined())
        live -= local_bytes(id, plan.value_sbp[static_cast<size_t>(id)]);
    for (int id : n.outputs)  // produced but never read
      if (id != kNoValue && last[static_cast<size_t>(id)] < 0) live -= local_bytes(id, plan.value_sbp[static_cast<size_t>(id)]);
    plan.compute_seconds += np.compute_seconds;
    for (const auto& steps : np.in_boxing)
      for (const BoxingStep& b : steps) plan.comm_seconds += b.seconds;
    for (const auto& steps : np.out_boxing)
      for (const BoxingStep& b : steps) plan.comm_seconds += b.seconds;
    plan.nodes.push_back(std::move(np));
  }
  for (int id : g.outputs) {
    const Value& v = g.values[static_cast<size_t>(id)];
    auto it = plan.options.output_sbp.find(v.name);
    const NdSbp target = it != plan.options.output_sbp.end() ? it->second : AllBroadcast(nd);
    const NdSbp& from = plan.value_sbp[static_cast<size_t>(id)];
    std::vector<BoxingStep> steps;
    size_t reduce_start = 0;
    if (!v.constant.defined()) {
      if (plan.options.reduce_outputs.count(v.name)) {
        const NdSbp partial = PartialOnBroadcastAxes(target);
        steps = PlanBoxing(v.type.ToShape(), v.type.dtype, from, partial, P, cost);
        reduce_start = steps.size();
        for (BoxingStep& b : PlanBoxing(v.type.ToShape(), v.type.dtype, partial, target, P, cost)) steps.push_back(b);
      } else {
        steps = PlanBoxing(v.type.ToShape(), v.type.dtype, from, target, P, cost);
        reduce_start = steps.size();
      }
    }
    plan.output_reduce_start.push_back(reduce_start);
    for (const BoxingStep& b : steps) plan.comm_seconds += b.seconds;
    plan.output_boxing.push_back(std::move(steps));
  }
  plan.step_seconds = plan.compute_seconds + plan.comm_seconds;
  std::string where = P.ToString() + "|" + PlanModeName(plan.options.mode);
  for (const auto& [name, sbp] : plan.options.output_sbp) where += "|" + name + "=" + NdSbpToString(sbp);
  for (const std::string& name : plan.options.reduce_outputs) where += "|reduce:" + name;
  plan.graph_hash = Fnv1a(where.data(), where.size(), GraphHash(g));
}

}  // namespace oneflow
