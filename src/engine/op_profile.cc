#include "engine/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
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
  ~Profile() { Print(); }

 private:
  static std::vector<std::pair<std::string, Totals>> Sorted(const std::map<std::string, Totals>& m) {
    std::vector<std::pair<std::string, Totals>> v(m.begin(), m.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    return v;
  }
  void Print() {
    std::lock_guard<std::mutex> lock(mu_);
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

  std::mutex mu_;
  std::map<std::string, Totals> by_op_, by_node_;
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

}  // namespace oneflow
