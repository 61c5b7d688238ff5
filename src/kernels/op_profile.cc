#include "kernels/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

namespace oneflow {
namespace {

struct Totals {
  int64_t calls = 0, ns = 0;
};

class Profile {
 public:
  void Add(const std::string& op_type, const std::string& node, int64_t ns) {
    std::lock_guard<std::mutex> lock(mu_);
    Totals& t = by_op_[op_type];
    t.calls += 1;
    t.ns += ns;
    Totals& n = by_node_[node];
    n.calls += 1;
    n.ns += ns;
  }
  void AddFallback(const std::string& op_type, const std::string& node, bool planned, const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    FallbackCounts& c = fallbacks_[op_type];
    (planned ? c.planned : c.runtime) += 1;
    if (!planned) runtime_nodes_.emplace_back(node, reason);
  }
  ~Profile() { Print(); }

 private:
  static std::vector<std::pair<std::string, Totals>> Sorted(const std::map<std::string, Totals>& m) {
    std::vector<std::pair<std::string, Totals>> v(m.begin(), m.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    return v;
  }
  void Print() {
    std::lock_guard<std::mutex> lock(mu_);
    PrintFallbacks();
    if (by_op_.empty()) return;
    int64_t total = 0;
    for (const auto& [name, t] : by_op_) total += t.ns;
    std::fprintf(stderr, "oneflow profile (ONEFLOW_PROFILE): %.3f ms in kernels\n%-28s %9s %11s %6s %10s\n", total / 1e6,
                 "op type", "calls", "total ms", "%", "mean us");
    for (const auto& [name, t] : Sorted(by_op_))
      std::fprintf(stderr, "%-28s %9lld %11.3f %6.1f %10.2f\n", name.c_str(), static_cast<long long>(t.calls),
                   t.ns / 1e6, 100.0 * t.ns / std::max<int64_t>(total, 1), t.ns / 1e3 / t.calls);
    std::fprintf(stderr, "top nodes:\n");
    const auto nodes = Sorted(by_node_);
    for (size_t i = 0; i < nodes.size() && i < 25; ++i) {
      const Totals& t = nodes[i].second;
      std::fprintf(stderr, "  %-70.70s %9lld %11.3f %6.1f %10.2f\n", nodes[i].first.c_str(),
                   static_cast<long long>(t.calls), t.ns / 1e6, 100.0 * t.ns / std::max<int64_t>(total, 1),
                   t.ns / 1e3 / t.calls);
    }
  }

  // CUDA sessions' CPU fallbacks: first, since they explain a slow device run better than timings.
  void PrintFallbacks() {
    const std::string table = FormatFallbackTable(fallbacks_);
    if (table.empty()) return;
    std::fprintf(stderr, "oneflow profile (ONEFLOW_PROFILE): CUDA sessions ran these nodes on the CPU\n%s",
                 table.c_str());
    for (size_t i = 0; i < runtime_nodes_.size() && i < 25; ++i)
      std::fprintf(stderr, "  run-time fallback: %s: %s\n", runtime_nodes_[i].first.c_str(),
                   runtime_nodes_[i].second.c_str());
  }

  std::mutex mu_;
  std::map<std::string, Totals> by_op_, by_node_;
  std::map<std::string, FallbackCounts> fallbacks_;                 // by op type
  std::vector<std::pair<std::string, std::string>> runtime_nodes_;  // node, the kernel's reason
};

Profile& Global() {
  static Profile p;  // destroyed at exit, which prints the table
  return p;
}

}  // namespace

bool OpProfilingEnabled() {
  static const bool on = [] {
    const char* v = std::getenv("ONEFLOW_PROFILE");
    return v != nullptr && v[0] != '\0' && !(v[0] == '0' && v[1] == '\0');
  }();
  return on;
}

void RecordOpTime(const std::string& op_type, const std::string& node, int64_t ns) { Global().Add(op_type, node, ns); }

void RecordCudaFallback(const std::string& op_type, const std::string& node, bool planned, const std::string& reason) {
  Global().AddFallback(op_type, node, planned, reason);
}

std::string FormatFallbackTable(const std::map<std::string, FallbackCounts>& by_op) {
  std::vector<std::pair<std::string, FallbackCounts>> rows;
  for (const auto& [op, c] : by_op)
    if (c.planned + c.runtime > 0) rows.emplace_back(op, c);
  if (rows.empty()) return "";
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.planned + a.second.runtime > b.second.planned + b.second.runtime;
  });
  std::ostringstream os;
  char line[160];
  std::snprintf(line, sizeof(line), "%-28s %9s %9s\n", "op type (CPU fallback)", "planned", "run-time");
  os << line;
  for (const auto& [op, c] : rows) {
    std::snprintf(line, sizeof(line), "%-28s %9lld %9lld\n", op.c_str(), static_cast<long long>(c.planned),
                  static_cast<long long>(c.runtime));
    os << line;
  }
  return os.str();
}

}  // namespace oneflow
