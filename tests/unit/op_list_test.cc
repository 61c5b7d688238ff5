// Walks the op list (graph/op_list.h) against the op and kernel registries: every id names exactly
// one op, every op with a schema has a CPU kernel or is a view, and the registries accept nothing the
// list lacks. The expectations come from the list's own rules (a unary row has a schema when it is
// standalone, a <Name>Grad op when its formula has a derivative), not from a snapshot of today's ops.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>

#include "base/error.h"
#include "graph/op_schema.h"
#include "graph/ops/binary_ops.h"
#include "graph/ops/unary_ops.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

std::string Describe(OpId id) { return std::string(OpDomain(id)) + "::" + OpName(id); }

TEST(OpList, EveryIdRoundTripsThroughItsNameAndDomain) {
  std::set<std::string> names;
  for (int i = 1; i < kOpCount; ++i) {
    const OpId id = static_cast<OpId>(i);
    ASSERT_NE(std::string(OpName(id)), "") << "id " << i;
    EXPECT_TRUE(names.insert(Describe(id)).second) << Describe(id) << " is listed twice";
    EXPECT_EQ(FindOpId(OpDomain(id), OpName(id)), id) << Describe(id);
  }
  EXPECT_EQ(FindOpId("", "Conv"), OpId::kConv);
  EXPECT_EQ(FindOpId("ai.onnx", "Conv"), OpId::kConv) << "ONNX's default domain spelled out";
  EXPECT_EQ(FindOpId("ai.oneflow", "Conv"), OpId::kUnknown) << "the domain is part of the key";
  EXPECT_EQ(FindOpId("", "NoSuchOp"), OpId::kUnknown);
  EXPECT_EQ(std::string(op::kHardSwishGrad), "HardSwishGrad");
  // A contrib op that reuses an ONNX name: its own id, the shared name, its own domain.
  EXPECT_EQ(std::string(op::kMsGelu), "Gelu");
  EXPECT_EQ(FindOpId("com.microsoft", "Gelu"), OpId::kMsGelu);
  EXPECT_EQ(FindOpId("", "Gelu"), OpId::kGelu);
  EXPECT_EQ(UnaryInfo(UnaryOpId::kSigmoid).grad_op, OpId::kSigmoidGrad);
  EXPECT_EQ(std::string(OpDomain(OpId::kSigmoidGrad)), "ai.oneflow");
}

// Which ids must have a schema: every general and binary op; a standalone unary row; a row's
// <Name>Grad when the row is standalone and has a derivative formula. A row that is not standalone
// may have its schema written by hand (Clip takes its bounds as inputs) or none at all (Square and
// Cube are fused-program instructions only): nullopt, no expectation.
std::optional<bool> ExpectsSchema(OpId id) {
  for (const UnaryOpInfo& row : kUnaryOps) {
    if (row.op == id) return row.standalone ? std::optional<bool>(true) : std::nullopt;
    if (row.grad_op == id) return row.standalone && row.grad != unary::GradFrom::kNone;
  }
  return true;
}

TEST(OpList, EveryListedOpHasASchemaWhereItsRowSaysSo) {
  const OpRegistry& r = OpRegistry::Global();
  for (int i = 1; i < kOpCount; ++i) {
    const OpId id = static_cast<OpId>(i);
    const bool has = !r.FindAllVersions(OpDomain(id), OpName(id)).empty();
    const std::optional<bool> expected = ExpectsSchema(id);
    if (!expected) continue;
    EXPECT_EQ(has, *expected) << Describe(id) << (has ? " has a schema its row does not declare"
                                                               : " is listed but has no schema");
  }
}

TEST(OpList, EverySchemaCarriesItsListId) {
  for (const OpSchema* s : OpRegistry::Global().All()) {
    ASSERT_NE(s->id, OpId::kUnknown) << s->domain << "::" << s->name;
    EXPECT_EQ(OpName(s->id), s->name);
    EXPECT_EQ(OpDomain(s->id), s->domain);
  }
}

// The embedded default runs everything on the CPU: every op with a schema has a CPU kernel unless
// it is a view (no kernel on any device), and every CUDA kernel has a CPU twin to fall back to.
TEST(OpList, EveryOpRunsOnTheCpu) {
  const KernelRegistry& k = KernelRegistry::Global();
  for (const OpSchema* s : OpRegistry::Global().All()) {
    if (s->view) {
      EXPECT_EQ(k.Find(s->id, DeviceType::kCpu), nullptr) << s->name << ": a view registers no kernel";
      EXPECT_EQ(k.Find(s->id, DeviceType::kCuda), nullptr) << s->name << ": a view registers no kernel";
      continue;
    }
    EXPECT_NE(k.Find(s->id, DeviceType::kCpu), nullptr) << s->domain << "::" << s->name << " has no CPU kernel";
  }
  for (int i = 1; i < kOpCount; ++i) {
    const OpId id = static_cast<OpId>(i);
    if (k.Find(id, DeviceType::kCuda) != nullptr)
      EXPECT_NE(k.Find(id, DeviceType::kCpu), nullptr) << Describe(id) << " has a CUDA kernel and no CPU one";
  }
}

TEST(OpList, RegistriesRefuseWhatTheListLacks) {
  OpRegistry ops;
  try {
    ops.Register(OpSchema("NotAnOp").Since(13).Input("X").Output("Y").Infer([](InferContext&) {}));
    FAIL() << "an op outside the list was registered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("NotAnOp"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("op_list.h"), std::string::npos) << e.what();
  }
  KernelRegistry kernels;
  EXPECT_THROW(kernels.RegisterFn(OpId::kUnknown, [](KernelContext&) {}), Error);
  kernels.RegisterFn(OpId::kRelu, [](KernelContext&) {});
  EXPECT_THROW(kernels.RegisterFn(OpId::kRelu, [](KernelContext&) {}), Error) << "registered twice";
  EXPECT_NE(kernels.Find("", "Relu", DeviceType::kCpu), nullptr);
  EXPECT_EQ(kernels.Find("", "NoSuchOp", DeviceType::kCpu), nullptr);
}

// Kernels register themselves at load (ONEFLOW_KERNEL beside each definition): a second kernel for
// an (op, device) that already has one stops the program at load, naming the op, rather than
// silently replacing the first.
TEST(OpList, ASecondRegistrarForAnOpStopsTheProgramNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const KernelDef* relu = KernelRegistry::Global().Find(OpId::kRelu, DeviceType::kCpu);
  ASSERT_NE(relu, nullptr);
  EXPECT_DEATH(KernelRegistrar(relu->tier, OpId::kRelu, DeviceType::kCpu, [](KernelContext&) {}),
               "kernel registration failed: kernel for Relu registered twice");
}

// Each CPU kernel exists once per instruction-set tier (kernels/cpu/isa_region.h): the registry
// keeps the widest copy this CPU runs, whatever order the registrars run in, and never keeps a copy
// for a tier above ActiveCpuIsa().
TEST(OpList, TheRegistryKeepsTheWidestTierTheCpuRuns) {
  auto def = [](CpuIsa tier) {
    return KernelDef{OpId::kRelu, DeviceType::kCpu, [](const KernelInitContext&) { return std::unique_ptr<OpKernel>(); },
                     tier};
  };
  const CpuIsa active = ActiveCpuIsa();
  if (active != CpuIsa::kAvx512Vnni) {
    KernelRegistry kernels;
    kernels.Register(def(CpuIsa::kAvx512Vnni));
    EXPECT_EQ(kernels.Find(OpId::kRelu, DeviceType::kCpu), nullptr) << "kept a copy this CPU cannot run";
  }
  if (active == CpuIsa::kSse42) GTEST_SKIP() << "this CPU (or ONEFLOW_MAX_ISA) runs the baseline tier alone";
  for (bool narrow_first : {false, true}) {
    KernelRegistry kernels;
    kernels.Register(def(narrow_first ? CpuIsa::kSse42 : active));
    kernels.Register(def(narrow_first ? active : CpuIsa::kSse42));
    ASSERT_NE(kernels.Find(OpId::kRelu, DeviceType::kCpu), nullptr);
    EXPECT_EQ(kernels.Find(OpId::kRelu, DeviceType::kCpu)->tier, active) << "narrow first: " << narrow_first;
  }
}

}  // namespace
}  // namespace oneflow
