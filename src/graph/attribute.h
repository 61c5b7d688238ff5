// Node attributes: a typed value per name, as in ONNX (float, int, string, tensor, subgraph and lists).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "graph/tensor_type.h"

namespace oneflow {

class Graph;

enum class AttrKind { kUndefined, kFloat, kInt, kString, kTensor, kFloats, kInts, kStrings, kGraph, kType };
const char* AttrKindName(AttrKind k);

struct Attribute {
  AttrKind kind = AttrKind::kUndefined;
  float f = 0.0f;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  // A subgraph (If's branches, Loop's and Scan's body): shared and never edited once imported, so
  // copying a node's attributes stays cheap; code that needs a variant copies the graph.
  std::shared_ptr<const Graph> graph;
  TensorType type;  // kType: a value type (ONNX TYPE_PROTO, as Optional's `type` names its element)

  static Attribute Float(float v) { Attribute a; a.kind = AttrKind::kFloat; a.f = v; return a; }
  static Attribute Int(int64_t v) { Attribute a; a.kind = AttrKind::kInt; a.i = v; return a; }
  static Attribute String(std::string v) { Attribute a; a.kind = AttrKind::kString; a.s = std::move(v); return a; }
  static Attribute TensorValue(Tensor v) { Attribute a; a.kind = AttrKind::kTensor; a.t = std::move(v); return a; }
  static Attribute Floats(std::vector<float> v) { Attribute a; a.kind = AttrKind::kFloats; a.floats = std::move(v); return a; }
  static Attribute Ints(std::vector<int64_t> v) { Attribute a; a.kind = AttrKind::kInts; a.ints = std::move(v); return a; }
  static Attribute Strings(std::vector<std::string> v) { Attribute a; a.kind = AttrKind::kStrings; a.strings = std::move(v); return a; }
  static Attribute Subgraph(std::shared_ptr<const Graph> g) { Attribute a; a.kind = AttrKind::kGraph; a.graph = std::move(g); return a; }
  static Attribute Type(TensorType t) { Attribute a; a.kind = AttrKind::kType; a.type = std::move(t); return a; }
};

// Attributes of one node. After import, every attribute the op's schema declares with a default
// is present, so kernels read them without repeating defaults.
class AttrMap {
 public:
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  const Attribute* find(const std::string& name) const;
  void set(const std::string& name, Attribute a) { map_[name] = std::move(a); }
  void erase(const std::string& name) { map_.erase(name); }

  // Typed getters: throw kInvalidModel naming the attribute when it is missing or of the wrong kind.
  float GetFloat(const std::string& name) const;
  int64_t GetInt(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  const Tensor& GetTensor(const std::string& name) const;
  const std::vector<float>& GetFloats(const std::string& name) const;
  const std::vector<int64_t>& GetInts(const std::string& name) const;
  const std::vector<std::string>& GetStrings(const std::string& name) const;
  const Graph& GetGraph(const std::string& name) const;
  const TensorType& GetType(const std::string& name) const;

  // Getters with a fallback for attributes the schema leaves without a default.
  float GetFloat(const std::string& name, float fallback) const;
  int64_t GetInt(const std::string& name, int64_t fallback) const;
  std::string GetString(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> GetInts(const std::string& name, const std::vector<int64_t>& fallback) const;
  std::vector<float> GetFloats(const std::string& name, const std::vector<float>& fallback) const;

  const std::map<std::string, Attribute>& all() const { return map_; }

 private:
  const Attribute& Get(const std::string& name, AttrKind kind) const;
  std::map<std::string, Attribute> map_;
};

}  // namespace oneflow
