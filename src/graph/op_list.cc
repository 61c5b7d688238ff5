#include "graph/op_list.h"

#include <string>
#include <unordered_map>

namespace oneflow {

OpId FindOpId(std::string_view domain, std::string_view name) {
  // Keyed by "domain\0name": a name may stand in two domains (ONNX Gelu and com.microsoft Gelu).
  static const auto* index = [] {
    auto* m = new std::unordered_map<std::string, OpId>();
    for (int i = 1; i < kOpCount; ++i) {
      const auto& e = op_list_detail::kEntries[i];
      std::string key(e.domain);
      key.push_back('\0');
      key += e.name;
      m->emplace(std::move(key), static_cast<OpId>(i));
    }
    return m;
  }();
  if (domain == "ai.onnx") domain = {};  // ONNX's default domain, spelled out
  std::string key(domain);
  key.push_back('\0');
  key.append(name);
  auto it = index->find(key);
  return it == index->end() ? OpId::kUnknown : it->second;
}

}  // namespace oneflow
