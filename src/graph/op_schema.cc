// OpSchema builder and the registry.
#include "graph/op_schema.h"

#include "graph/ops/all_ops.h"

namespace oneflow {

const TensorType& InferContext::input_type(size_t i) const {
  if (!has_input(i)) Fail(ErrorCode::kInvalidModel, *node_desc_, ": input ", i, " is required but missing");
  return *types_[i];
}

void InferContext::set_output(size_t i, TensorType t) {
  if (i < outputs_.size()) outputs_[i] = std::move(t);
}

OpSchema& OpSchema::Attr(std::string n, Attribute default_value) {
  AttrSpec s;
  s.name = std::move(n);
  s.kind = default_value.kind;
  s.has_default = true;
  s.default_value = std::move(default_value);
  attrs.push_back(std::move(s));
  return *this;
}

OpSchema& OpSchema::RequiredAttr(std::string n, AttrKind kind) {
  AttrSpec s;
  s.name = std::move(n);
  s.kind = kind;
  s.required = true;
  attrs.push_back(std::move(s));
  return *this;
}

OpSchema& OpSchema::OptionalAttr(std::string n, AttrKind kind) {
  AttrSpec s;
  s.name = std::move(n);
  s.kind = kind;
  attrs.push_back(std::move(s));
  return *this;
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterAllOps(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::Register(OpSchema schema) {
  schema.id = FindOpId(schema.domain, schema.name);
  OF_CHECK(schema.id != OpId::kUnknown, kInternal, "op ", schema.name, " of domain '", schema.domain,
           "' is not in the op list (graph/op_list.h)");
  auto& list = schemas_[{schema.domain, schema.name}];
  for (const OpSchema& s : list) {
    OF_CHECK(schema.last_version < s.since_version || schema.since_version > s.last_version, kInternal,
             "op ", schema.name, " registered twice for overlapping opsets");
  }
  OF_CHECK(static_cast<bool>(schema.infer), kInternal, "op ", schema.name, " has no inference function");
  list.push_back(std::move(schema));
}

const OpSchema* OpRegistry::Find(const std::string& domain, const std::string& op, int opset) const {
  auto it = schemas_.find({domain, op});
  if (it == schemas_.end()) return nullptr;
  for (const OpSchema& s : it->second)
    if (opset >= s.since_version && opset <= s.last_version) return &s;
  return nullptr;
}

std::vector<const OpSchema*> OpRegistry::FindAllVersions(const std::string& domain, const std::string& op) const {
  std::vector<const OpSchema*> out;
  auto it = schemas_.find({domain, op});
  if (it != schemas_.end())
    for (const OpSchema& s : it->second) out.push_back(&s);
  return out;
}

std::vector<const OpSchema*> OpRegistry::All() const {
  std::vector<const OpSchema*> out;
  for (const auto& kv : schemas_)
    for (const OpSchema& s : kv.second) out.push_back(&s);
  return out;
}

}  // namespace oneflow

namespace oneflow {

void OpRegistry::SetSbp(const std::string& domain, const std::string& op, const SbpFn& fn) {
  auto it = schemas_.find({domain, op});
  OF_CHECK(it != schemas_.end(), kInternal, "SBP rule for unregistered op '", op, "'");
  for (OpSchema& s : it->second) s.sbp = fn;
}

}  // namespace oneflow
