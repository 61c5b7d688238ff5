// Every op with a gradient rule has a finite-difference check registered in the table
// (tests/unit/gradcheck.h; the harness is gradcheck.cc).
#include <iostream>

#include "gradcheck.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace testing {
namespace {

TEST(GradCheckTable, EveryOpWithAGradientRuleHasACheck) {
  std::set<std::string> with_rule, missing;
  for (const OpSchema* s : OpRegistry::Global().All()) {
    if (!s->grad) continue;
    const std::string key = s->domain.empty() ? s->name : s->domain + "::" + s->name;
    with_rule.insert(key);
    if (!GradCheckedOps().count(key)) missing.insert(key);
  }
  std::string list, miss;
  for (const auto& k : with_rule) list += " " + k;
  for (const auto& k : missing) miss += " " + k;
  std::cout << "ops with a gradient rule (" << with_rule.size() << "):" << list << "\n";
  EXPECT_TRUE(missing.empty()) << "ops with a gradient rule but no GRADCHECK_TEST:" << miss;
  EXPECT_FALSE(with_rule.empty());
}

}  // namespace
}  // namespace testing
}  // namespace oneflow
