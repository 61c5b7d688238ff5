// Run-time lookups over the unary op rows of unary_ops.h.
#include "graph/ops/unary_ops.h"

#include <cstring>

#include "base/error.h"
#include "graph/attribute.h"

namespace oneflow {

const UnaryOpInfo* FindUnaryOp(const std::string& domain, const std::string& name) {
  for (const UnaryOpInfo& info : kUnaryOps)
    if (name == info.name && domain == info.domain) return &info;
  return nullptr;
}

namespace {

// Position of `value` in the '|'-separated `choices`, or -1.
int ChoiceIndex(const char* choices, const std::string& value) {
  int index = 0;
  for (const char* p = choices;; ++index) {
    const char* end = std::strchr(p, '|');
    const size_t len = end ? static_cast<size_t>(end - p) : std::strlen(p);
    if (value.size() == len && value.compare(0, len, p, len) == 0) return index;
    if (!end) return -1;
    p = end + 1;
  }
}

}  // namespace

void ReadUnaryParams(const UnaryOpInfo& info, const AttrMap& attrs, float* out, const std::string& what) {
  for (int i = 0; i < unary::kMaxParams; ++i) out[i] = 0.0f;
  for (int i = 0; i < info.params.count; ++i) {
    const unary::Param& p = info.params.items[i];
    if (!p.choices) {
      out[i] = attrs.GetFloat(p.name, p.value);
      continue;
    }
    const std::string value = attrs.has(p.name) ? attrs.GetString(p.name) : std::string();
    const int index = value.empty() ? 0 : ChoiceIndex(p.choices, value);
    OF_CHECK(index >= 0, kUnsupported, what, ": ", info.name, " ", p.name, "='", value, "' (expected one of ",
             p.choices, ")");
    out[i] = static_cast<float>(index);
  }
}

bool TryReadUnaryParams(const UnaryOpInfo& info, const AttrMap& attrs, float* out) {
  try {
    ReadUnaryParams(info, attrs, out, info.name);
    return true;
  } catch (const Error&) {
    return false;
  }
}


}  // namespace oneflow
