// The instruction-set tiers (base/cpu_isa.h): names round-trip, ONEFLOW_MAX_ISA only lowers the
// tier, and the kernels the registry keeps run at the active tier or below.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/cpu_isa.h"
#include "graph/op_list.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

TEST(CpuIsa, NamesRoundTripAndAliasesParse) {
  for (CpuIsa isa : {CpuIsa::kSse42, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Vnni}) {
    CpuIsa parsed;
    ASSERT_TRUE(ParseCpuIsa(CpuIsaName(isa), &parsed)) << CpuIsaName(isa);
    EXPECT_EQ(parsed, isa);
  }
  CpuIsa parsed;
  EXPECT_TRUE(ParseCpuIsa("X86-64-V3", &parsed));
  EXPECT_EQ(parsed, CpuIsa::kAvx2);
  EXPECT_TRUE(ParseCpuIsa("baseline", &parsed));
  EXPECT_EQ(parsed, CpuIsa::kSse42);
  EXPECT_FALSE(ParseCpuIsa("avx1024", &parsed));
  EXPECT_FALSE(ParseCpuIsa("", &parsed));
}

TEST(CpuIsa, TheCapOnlyLowersTheTier) {
  EXPECT_LE(ActiveCpuIsa(), DetectedCpuIsa());
  const char* cap = std::getenv("ONEFLOW_MAX_ISA");
  CpuIsa limit;
  if (cap != nullptr && ParseCpuIsa(cap, &limit)) {
    EXPECT_EQ(ActiveCpuIsa(), std::min(limit, DetectedCpuIsa()));
    EXPECT_EQ(CpuIsaCapped(), limit < DetectedCpuIsa());
  } else {
    EXPECT_EQ(ActiveCpuIsa(), DetectedCpuIsa());
    EXPECT_FALSE(CpuIsaCapped());
  }
  const std::string summary = CpuIsaSummary();
  EXPECT_NE(summary.find(std::string("active ") + CpuIsaName(ActiveCpuIsa())), std::string::npos) << summary;
}

// Every CPU kernel in the registry was compiled for a tier this CPU runs, and in a build with the
// wider tiers (kernels/cpu/isa_region.h) the elementwise and GEMM kernels are the active tier's.
TEST(CpuIsa, TheRegistryHoldsKernelsOfTheActiveTierOrBelow) {
  const KernelRegistry& r = KernelRegistry::Global();
  for (int op = 1; op < kOpCount; ++op) {
    const KernelDef* def = r.Find(static_cast<OpId>(op), DeviceType::kCpu);
    if (def != nullptr) EXPECT_LE(def->tier, ActiveCpuIsa()) << OpName(static_cast<OpId>(op));
  }
#if defined(ONEFLOW_TEST_CPU_TIERS)  // the build compiled avx2 and avx512 copies (tests/CMakeLists.txt)
  const CpuIsa float_tier = std::min(ActiveCpuIsa(), CpuIsa::kAvx512);  // VNNI is the int8 MatMul's only
  for (OpId op : {OpId::kRelu, OpId::kAdd, OpId::kMatMul, OpId::kSoftmax}) {
    ASSERT_NE(r.Find(op, DeviceType::kCpu), nullptr) << OpName(op);
    EXPECT_EQ(r.Find(op, DeviceType::kCpu)->tier, float_tier) << OpName(op);
  }
  ASSERT_NE(r.Find(OpId::kMatMulInteger, DeviceType::kCpu), nullptr);
  EXPECT_EQ(r.Find(OpId::kMatMulInteger, DeviceType::kCpu)->tier, ActiveCpuIsa());
#endif
}

}  // namespace
}  // namespace oneflow
