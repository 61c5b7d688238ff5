// AttrMap lookups with errors that name the attribute.
#include "graph/attribute.h"

namespace oneflow {

const char* AttrKindName(AttrKind k) {
  switch (k) {
    case AttrKind::kFloat: return "float";
    case AttrKind::kInt: return "int";
    case AttrKind::kString: return "string";
    case AttrKind::kTensor: return "tensor";
    case AttrKind::kFloats: return "floats";
    case AttrKind::kInts: return "ints";
    case AttrKind::kStrings: return "strings";
    case AttrKind::kGraph: return "graph";
    case AttrKind::kType: return "type";
    default: return "undefined";
  }
}

const Attribute* AttrMap::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

const Attribute& AttrMap::Get(const std::string& name, AttrKind kind) const {
  const Attribute* a = find(name);
  OF_CHECK(a != nullptr, kInvalidModel, "missing attribute '", name, "'");
  OF_CHECK(a->kind == kind, kInvalidModel, "attribute '", name, "' is ", AttrKindName(a->kind),
           ", expected ", AttrKindName(kind));
  return *a;
}

float AttrMap::GetFloat(const std::string& n) const { return Get(n, AttrKind::kFloat).f; }
int64_t AttrMap::GetInt(const std::string& n) const { return Get(n, AttrKind::kInt).i; }
const std::string& AttrMap::GetString(const std::string& n) const { return Get(n, AttrKind::kString).s; }
const Tensor& AttrMap::GetTensor(const std::string& n) const { return Get(n, AttrKind::kTensor).t; }
const std::vector<float>& AttrMap::GetFloats(const std::string& n) const { return Get(n, AttrKind::kFloats).floats; }
const std::vector<int64_t>& AttrMap::GetInts(const std::string& n) const { return Get(n, AttrKind::kInts).ints; }
const std::vector<std::string>& AttrMap::GetStrings(const std::string& n) const {
  return Get(n, AttrKind::kStrings).strings;
}

const Graph& AttrMap::GetGraph(const std::string& n) const {
  const Attribute& a = Get(n, AttrKind::kGraph);
  OF_CHECK(a.graph != nullptr, kInvalidModel, "attribute '", n, "' holds no graph");
  return *a.graph;
}

const TensorType& AttrMap::GetType(const std::string& n) const { return Get(n, AttrKind::kType).type; }

float AttrMap::GetFloat(const std::string& n, float fb) const { return has(n) ? GetFloat(n) : fb; }
int64_t AttrMap::GetInt(const std::string& n, int64_t fb) const { return has(n) ? GetInt(n) : fb; }
std::string AttrMap::GetString(const std::string& n, const std::string& fb) const {
  return has(n) ? GetString(n) : fb;
}
std::vector<int64_t> AttrMap::GetInts(const std::string& n, const std::vector<int64_t>& fb) const {
  return has(n) ? GetInts(n) : fb;
}
std::vector<float> AttrMap::GetFloats(const std::string& n, const std::vector<float>& fb) const {
  return has(n) ? GetFloats(n) : fb;
}

}  // namespace oneflow
