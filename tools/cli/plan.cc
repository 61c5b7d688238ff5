// `oneflow plan`: plans a model over a placement and prints the explanation (text or JSON).
#include <cstdio>
#include <cstdlib>

#include "cli.h"
#include "engine/plan/plan.h"
#include "engine/session.h"
#include "serialize/onnx_import.h"

namespace oneflow {
namespace cli {

static double PositiveNumber(const ParsedArgs& a, const std::string& name, double fallback) {
  if (!a.Has(name)) return fallback;
  std::string text = a.Get(name);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e18)
    throw UsageError("--" + name + " needs a positive number, got '" + text + "'");
  return v;
}

// "8x784" -> {8, 784}.
static Shape ParseDims(const std::string& name, const std::string& text) {
  Shape s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t x = text.find('x', start);
    std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    bool ok = !part.empty() && part.size() <= 15 && part.find_first_not_of("0123456789") == std::string::npos;
    if (!ok) throw UsageError("--shape " + name + "=" + text + ": dims must be non-negative integers joined by 'x'");
    s.push_back(std::stoll(part));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return s;
}

int PlanCommand(const std::vector<std::string>& args) {
  ParsedArgs a = ParseArgs("plan", args,
                           {"placement", "mode", "shape", "sbp", "memory-budget-mb", "link-gbps", "latency-us", "gflops",
                            "devices"},
                           {"json"});
  if (a.positionals.size() != 1) throw UsageError("plan needs exactly one MODEL (see 'oneflow help')");
  if (!a.Has("placement")) throw UsageError("plan needs --placement (e.g. --placement cpu:0-3)");
  PlanOptions o;
  o.placement = Placement::Parse(a.Get("placement"));
  o.mode = ParsePlanMode(a.Get("mode", "data"));
  o.available_devices = a.GetInt("devices", 0, 0, 4096);
  for (const std::string& spec : a.All("shape")) {
    auto [name, text] = SplitAssignment("shape", spec);
    o.input_shapes[name] = ParseDims(name, text);
  }
  for (const std::string& spec : a.All("sbp")) {
    auto [name, text] = SplitAssignment("sbp", spec);
    o.sbp[name] = ParseNdSbp(text);
  }
  o.memory_budget_bytes = static_cast<int64_t>(PositiveNumber(a, "memory-budget-mb", 0) * 1024 * 1024);
  o.cost.link_bytes_per_s = PositiveNumber(a, "link-gbps", o.cost.link_bytes_per_s / 1e9) * 1e9;
  o.cost.link_latency_s = PositiveNumber(a, "latency-us", o.cost.link_latency_s * 1e6) / 1e6;
  o.cost.flops_per_s = PositiveNumber(a, "gflops", o.cost.flops_per_s / 1e9) * 1e9;
  Graph g = LoadOnnxFile(a.positionals[0]);
  PrepareGraph(g);
  for (const auto& [name, shape] : o.input_shapes) {
    bool found = false;
    for (int id : g.inputs) found |= g.values[static_cast<size_t>(id)].name == name;
    OF_CHECK(found, kNotFound, "--shape names '", name, "', but the model has no such input");
  }
  Plan plan = MakePlan(g, o);
  std::string out = a.Has("json") ? plan.ToJson() + "\n" : plan.ToText();
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace cli
}  // namespace oneflow
