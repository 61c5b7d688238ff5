// `oneflow info`: describes a model and lists every op this build cannot run (not just the first).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "cli.h"
#include "engine/session.h"
#include "graph/op_schema.h"
#include "kernels/kernel.h"
#include "serialize/model_io.h"

namespace oneflow {
namespace cli {

namespace {

std::string DomainName(const std::string& d) { return d.empty() ? "ai.onnx" : d; }

// Why (domain, op, opset) cannot run here, or "" when it can.
std::string UnsupportedReason(const std::string& domain, const std::string& op, int opset) {
  const OpRegistry& ops = OpRegistry::Global();
  if (ops.Find(domain, op, opset) == nullptr) {
    auto versions = ops.FindAllVersions(domain, op);
    if (versions.empty()) return "unknown op";
    std::string ranges;
    for (const OpSchema* s : versions) {
      ranges += (ranges.empty() ? "" : ", ") + std::to_string(s->since_version);
      ranges += s->last_version == INT_MAX ? "+" : "-" + std::to_string(s->last_version);
    }
    return "not supported at this opset (supported opsets: " + ranges + ")";
  }
  if (KernelRegistry::Global().Find(domain, op, DeviceType::kCpu) == nullptr) return "no CPU kernel";
  return "";
}

void PrintValue(const Value& v) { std::printf("  %s: %s\n", v.name.c_str(), v.type.ToString().c_str()); }

}  // namespace

int InfoCommand(const std::vector<std::string>& args) {
  ParsedArgs a = ParseArgs("info", args, {});
  if (a.positionals.size() != 1) throw UsageError("'oneflow info' takes exactly one MODEL path");
  const std::string path = a.positionals[0];
  ModelLoadOptions load;
  load.validate = false;  // shown as stored; validated below, reporting why it fails if it does
  Graph g = LoadModelFile(path, load);

  std::printf("model: %s\n", path.c_str());
  std::printf("format: %s\n", ModelFormatName(SniffFileFormat(path)));
  if (!g.name.empty()) std::printf("graph: %s\n", g.name.c_str());
  if (!g.producer.empty()) std::printf("producer: %s\n", g.producer.c_str());
  std::printf("opset imports:");
  for (const auto& [domain, version] : g.opset_imports) std::printf(" %s=%d", DomainName(domain).c_str(), version);
  std::printf("\n");

  // The declared types; replaced by the inferred ones below when the graph validates.
  Graph declared = g;
  std::string validation = "ok";
  std::unique_ptr<Graph> prepared;
  try {
    prepared = std::make_unique<Graph>(g);
    PrepareGraph(*prepared);
    Session session(*prepared, SessionOptions{});  // creates every kernel
  } catch (const Error& e) {
    validation = std::string(ErrorCodeName(e.code())) + ": " + e.what();
    prepared.reset();
  }
  const Graph& shown = prepared ? *prepared : declared;

  std::printf("inputs (%zu):\n", shown.inputs.size());
  for (int v : shown.inputs) PrintValue(shown.values[static_cast<size_t>(v)]);
  std::printf("outputs (%zu):\n", shown.outputs.size());
  for (int v : shown.outputs) PrintValue(shown.values[static_cast<size_t>(v)]);

  size_t num_params = 0, param_bytes = 0;
  for (const Value& v : g.values) {
    if (!v.is_parameter) continue;
    ++num_params;
    param_bytes += v.constant.nbytes();
  }
  std::printf("initializers: %zu (%zu bytes)\n", num_params, param_bytes);

  std::map<std::tuple<std::string, std::string>, int> histogram;
  std::set<std::tuple<std::string, std::string, int>> kinds;
  for (const Node& n : g.nodes) {
    ++histogram[{n.domain, n.op_type}];
    kinds.insert({n.domain, n.op_type, n.opset});
  }
  std::vector<std::pair<int, std::tuple<std::string, std::string>>> by_count;
  for (const auto& [key, count] : histogram) by_count.emplace_back(count, key);
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::printf("ops (%zu nodes, %zu distinct):\n", g.nodes.size(), by_count.size());
  for (const auto& [count, key] : by_count) {
    const auto& [domain, op] = key;
    std::printf("  %-28s %d\n", (domain.empty() ? op : domain + "::" + op).c_str(), count);
  }

  int unsupported = 0;
  std::string lines;
  for (const auto& [domain, op, opset] : kinds) {
    std::string why = UnsupportedReason(domain, op, opset);
    if (why.empty()) continue;
    ++unsupported;
    lines += "  " + op + " (domain " + DomainName(domain) + ", opset " + std::to_string(opset) + "): " + why + "\n";
  }
  if (unsupported) {
    std::printf("unsupported ops (%d):\n%s", unsupported, lines.c_str());
    std::printf("status: NOT RUNNABLE: %d op type(s) are unsupported by this build\n", unsupported);
  } else if (validation != "ok") {
    std::printf("unsupported ops: none\nstatus: INVALID: %s\n", validation.c_str());
  } else {
    std::printf("unsupported ops: none\nstatus: ok (the model validates and every op has a CPU kernel)\n");
  }
  return 0;
}

}  // namespace cli
}  // namespace oneflow
