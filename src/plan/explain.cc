// Plan explanation: per op the SBP chosen, each inserted collective with bytes and estimated
// time, per-device memory and the estimated step time, as text and as JSON.
#include <cstdio>
#include <sstream>

#include "base/json_text.h"
#include "plan/plan.h"

namespace oneflow {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string Human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) { bytes /= 1024; ++u; }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return buf;
}

std::string StepsJson(const std::vector<BoxingStep>& steps) {
  std::string o = "[";
  for (size_t i = 0; i < steps.size(); ++i) {
    const BoxingStep& s = steps[i];
    o += (i ? "," : "") + std::string("{\"collective\":\"") + s.kind + "\",\"placement_axis\":" + std::to_string(s.axis) +
         ",\"from\":\"" + NdSbpToString(s.before) + "\",\"to\":\"" + NdSbpToString(s.after) +
         "\",\"bytes_per_device\":" + Num(s.bytes) + ",\"seconds\":" + Num(s.seconds) + "}";
  }
  return o + "]";
}

void StepsText(std::ostringstream& os, const std::string& what, const std::vector<BoxingStep>& steps) {
  for (const BoxingStep& s : steps)
    os << "      boxing " << what << ": " << s.kind << " on placement axis " << s.axis << "  "
       << NdSbpToString(s.before) << " -> " << NdSbpToString(s.after) << "  " << Human(s.bytes)
       << "/device  " << Num(s.seconds * 1e6) << " us\n";
}

std::string SbpList(const std::vector<NdSbp>& l) {
  std::string o;
  for (size_t i = 0; i < l.size(); ++i) o += (i ? ", " : "") + (l[i].empty() ? std::string("-") : NdSbpToString(l[i]));
  return o;
}

}  // namespace

std::string Plan::ToText() const {
  std::ostringstream os;
  const Graph& g = logical;
  os << "plan for '" << g.name << "' on " << options.placement.ToString() << " (" << options.placement.size()
     << " devices), mode " << PlanModeName(options.mode) << "\n";
  os << "  inputs:\n";
  for (int id : g.inputs)
    os << "    " << g.values[static_cast<size_t>(id)].name << " " << g.values[static_cast<size_t>(id)].type.ToString()
       << "  " << NdSbpToString(value_sbp[static_cast<size_t>(id)]) << "\n";
  os << "  ops (SBP of inputs -> outputs; compute on the busiest device):\n";
  for (const NodePlan& np : nodes) {
    const Node& n = g.nodes[static_cast<size_t>(np.node)];
    os << "    " << n.op_type << " '" << n.name << "'  (" << SbpList(np.in) << ") -> (" << SbpList(np.out) << ")  "
       << Num(np.flops) << " flop  " << Num(np.compute_seconds * 1e6) << " us"
       << (np.replicated ? "  [replicated: no split signature used]" : "") << "\n";
    for (size_t i = 0; i < np.in_boxing.size(); ++i)
      if (!np.in_boxing[i].empty())  // omitted optional inputs (kNoValue) have no boxing
        StepsText(os, "of input '" + g.values[static_cast<size_t>(n.inputs[i])].name + "'", np.in_boxing[i]);
    for (size_t j = 0; j < np.out_boxing.size(); ++j)
      if (!np.out_boxing[j].empty())
        StepsText(os, "of output '" + g.values[static_cast<size_t>(n.outputs[j])].name + "'", np.out_boxing[j]);
  }
  os << "  outputs:\n";
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const std::string& name = g.values[static_cast<size_t>(g.outputs[i])].name;
    auto it = options.output_sbp.find(name);
    const std::string to = it != options.output_sbp.end() ? NdSbpToString(it->second) : "B";
    // A reduced output's all-reduce over its B axes is left to the caller (the trainer buckets it);
    // one returned split on every axis (ZeRO-3's gradients) is reduced inside the plan.
    bool caller_reduces = false;
    if (options.reduce_outputs.count(name))
      for (const Sbp& s : it != options.output_sbp.end() ? it->second : NdSbp{Sbp::B()}) caller_reduces |= s.is_broadcast();
    os << "    " << name << (to == "B" ? " (returned whole)" : " (returned as " + to + ")")
       << (caller_reduces ? " [the all-reduce to it is the caller's: bucketed by the trainer]" : "") << "\n";
    StepsText(os, "to " + to, output_boxing[i]);
  }
  os << "  memory per device: parameters " << Human(static_cast<double>(param_bytes)) << ", activations (peak) "
     << Human(static_cast<double>(activation_bytes)) << ", optimizer state "
     << (options.optimizer_states > 0 ? Human(static_cast<double>(optimizer_bytes)) : std::string("0 B (inference)"))
     << (options.zero_stage > 0 ? " (ZeRO-" + std::to_string(options.zero_stage) + ")" : std::string());
  if (options.memory_budget_bytes > 0) os << ", budget " << Human(static_cast<double>(options.memory_budget_bytes));
  os << "\n  estimated step time: " << Num(step_seconds * 1e3) << " ms (compute " << Num(compute_seconds * 1e3)
     << " ms, communication " << Num(comm_seconds * 1e3) << " ms)\n";
  os << "  search: " << states_explored << " states" << (search_truncated ? " (state cap reached: beam)" : " (exact)")
     << ", graph hash " << std::hex << graph_hash << std::dec << "\n";
  return os.str();
}

std::string Plan::ToJson() const {
  std::ostringstream os;
  const Graph& g = logical;
  os << "{\"model\":\"" << JsonEscape(g.name) << "\",\"placement\":\"" << options.placement.ToString()
     << "\",\"devices\":" << options.placement.size() << ",\"mode\":\"" << PlanModeName(options.mode) << "\",\"inputs\":[";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Value& v = g.values[static_cast<size_t>(g.inputs[i])];
    os << (i ? "," : "") << "{\"name\":\"" << JsonEscape(v.name) << "\",\"type\":\"" << v.type.ToString() << "\",\"sbp\":\""
       << NdSbpToString(value_sbp[static_cast<size_t>(g.inputs[i])]) << "\"}";
  }
  os << "],\"ops\":[";
  for (size_t k = 0; k < nodes.size(); ++k) {
    const NodePlan& np = nodes[k];
    const Node& n = g.nodes[static_cast<size_t>(np.node)];
    os << (k ? "," : "") << "{\"name\":\"" << JsonEscape(n.name) << "\",\"op\":\"" << n.op_type << "\",\"in\":[";
    for (size_t i = 0; i < np.in.size(); ++i) os << (i ? "," : "") << "\"" << NdSbpToString(np.in[i]) << "\"";
    os << "],\"out\":[";
    for (size_t j = 0; j < np.out.size(); ++j) os << (j ? "," : "") << "\"" << NdSbpToString(np.out[j]) << "\"";
    os << "],\"replicated\":" << (np.replicated ? "true" : "false") << ",\"flops\":" << Num(np.flops)
       << ",\"compute_seconds\":" << Num(np.compute_seconds) << ",\"boxing\":[";
    bool first = true;
    auto add = [&](const std::string& value, const std::vector<BoxingStep>& steps) {
      if (steps.empty()) return;
      os << (first ? "" : ",") << "{\"value\":\"" << JsonEscape(value) << "\",\"steps\":" << StepsJson(steps) << "}";
      first = false;
    };
    for (size_t i = 0; i < np.in_boxing.size(); ++i)
      if (!np.in_boxing[i].empty()) add(g.values[static_cast<size_t>(n.inputs[i])].name, np.in_boxing[i]);
    for (size_t j = 0; j < np.out_boxing.size(); ++j)
      if (!np.out_boxing[j].empty()) add(g.values[static_cast<size_t>(n.outputs[j])].name, np.out_boxing[j]);
    os << "]}";
  }
  os << "],\"outputs\":[";
  for (size_t i = 0; i < g.outputs.size(); ++i)
    os << (i ? "," : "") << "{\"name\":\"" << JsonEscape(g.values[static_cast<size_t>(g.outputs[i])].name)
       << "\",\"boxing\":" << StepsJson(output_boxing[i]) << "}";
  os << "],\"memory_per_device\":{\"parameters\":" << param_bytes << ",\"activations_peak\":" << activation_bytes
     << ",\"optimizer_state\":" << optimizer_bytes << ",\"budget\":" << options.memory_budget_bytes << "},\"estimated_seconds\":{\"step\":"
     << Num(step_seconds) << ",\"compute\":" << Num(compute_seconds) << ",\"communication\":" << Num(comm_seconds)
     << "},\"search\":{\"states\":" << states_explored << ",\"exact\":" << (search_truncated ? "false" : "true")
     << "},\"graph_hash\":\"" << std::hex << graph_hash << std::dec << "\"}";
  return os.str();
}

}  // namespace oneflow
