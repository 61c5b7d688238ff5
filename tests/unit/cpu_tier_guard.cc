// Linked into each tier's copy of the kernels' unit tests (tests/CMakeLists.txt, "per CPU tier"):
// those test files are compiled with ONEFLOW_CPU_TIER, so they call that tier's copy of the kernels
// (kernels/cpu/isa_region.h). On a CPU that does not run the tier, or under an ONEFLOW_MAX_ISA below
// it, every test skips and says why rather than dying on an illegal instruction. (gtest 1.12 counts
// a skip in an environment as a pass, so ctest recognizes the message: tests/CMakeLists.txt.)
#include <gtest/gtest.h>

#include "base/cpu_isa.h"

namespace oneflow {
namespace {

class CpuTierGuard : public ::testing::Environment {
 public:
  void SetUp() override {
    const auto tier = static_cast<CpuIsa>(ONEFLOW_CPU_TIER);
    if (ActiveCpuIsa() < tier)
      GTEST_SKIP() << "these tests run the " << CpuIsaName(tier) << " kernels; this CPU runs " << CpuIsaSummary();
  }
};

[[maybe_unused]] ::testing::Environment* const kGuard = ::testing::AddGlobalTestEnvironment(new CpuTierGuard);

}  // namespace
}  // namespace oneflow
