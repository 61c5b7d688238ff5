// Parameter selection and glob matching.
#include "train/param_select.h"

#include "base/error.h"

namespace oneflow::train {

bool GlobMatch(const std::string& pattern, const std::string& name) {
  // Iterative matcher with one backtrack point (the last '*'): linear for patterns with one star,
  // never exponential.
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

static bool IsFloat(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16 || d == DType::kFloat64;
}

std::vector<int> SelectParameters(const Graph& g, const std::vector<std::string>& frozen) {
  std::vector<char> used(frozen.size(), 0);
  std::vector<int> selected;
  std::vector<char> is_input(g.values.size(), 0);
  for (int v : g.inputs) is_input[static_cast<size_t>(v)] = 1;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    if (!val.is_parameter || !val.constant.defined() || !IsFloat(val.constant.dtype()) || is_input[v]) continue;
    bool is_frozen = false;
    for (size_t i = 0; i < frozen.size(); ++i) {
      if (frozen[i] == val.name || GlobMatch(frozen[i], val.name)) {
        used[i] = 1;
        is_frozen = true;
      }
    }
    if (is_frozen) continue;
    OF_CHECK(val.constant.dtype() == DType::kFloat32, kUnsupported, "parameter '", val.name, "' is ",
             DTypeName(val.constant.dtype()), "; training updates float32 parameters only (freeze it to keep it fixed)");
    selected.push_back(static_cast<int>(v));
  }
  for (size_t i = 0; i < frozen.size(); ++i)
    OF_REQUIRE(used[i], "frozen parameter name or pattern '", frozen[i], "' matches no float parameter of the model");
  return selected;
}

}  // namespace oneflow::train
