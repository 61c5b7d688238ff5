// Native format (.ofm) plan table: the graph's placement and per-value n-D SBP annotations round
// trip field by field, a graph without them writes no plan, and every malformed plan is refused
// with kInvalidModel naming the problem (files built by hand through the generated flatbuffer API).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "plan/plan.h"
#include "passes/passes.h"
#include "ofm_generated.h"
#include "serialize/checksum.h"
#include "serialize/native_format.h"
#include "serialize/native_layout.h"
#include "../graph_builder.h"

namespace oneflow {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

// X[8,4] x W[4,6] -> Y[8,6] on cpu:[[0,1],[2,3]], the contraction split: X (S(0),S(1)),
// W (B,S(0)), Y (S(0),P).
Graph AnnotatedMatMul() {
  Graph g;
  g.name = "mm";
  g.opset_imports[""] = 17;
  int x = g.AddValue("X", TensorType::Of(DType::kFloat32, Shape{8, 4}));
  Tensor w(DType::kFloat32, {4, 6});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.5f * static_cast<float>(i);
  int wid = test_util::AddParam(g, "W", w);
  int y = test_util::AddOp(g, "MatMul", {x, wid}, "Y");
  g.values[static_cast<size_t>(y)].type = TensorType::Of(DType::kFloat32, Shape{8, 6});
  g.inputs = {x};
  g.outputs = {y};
  g.placement = Placement::Parse("cpu:[[0,1],[2,3]]");
  g.values[static_cast<size_t>(x)].sbp = {Sbp::S(0), Sbp::S(1)};
  g.values[static_cast<size_t>(wid)].sbp = {Sbp::B(), Sbp::S(0)};
  g.values[static_cast<size_t>(y)].sbp = {Sbp::S(0), Sbp::P()};
  return g;
}

const ofm::Model* ModelOf(const std::string& file) {
  return ofm::GetModel(file.data() + kNativeHeaderBytes);
}

TEST(NativePlan, PlacementAndSbpRoundTripFieldByField) {
  const Graph g = AnnotatedMatMul();
  const std::string bytes = SerializeNativeModel(g);
  // The file holds the plan as docs/native-format.md describes it.
  const ofm::Plan* plan = ModelOf(bytes)->plan();
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->placements()->size(), 1u);
  EXPECT_EQ(plan->placements()->Get(0)->device_type()->str(), "cpu");
  EXPECT_EQ(plan->annotations()->size(), 3u);
  EXPECT_EQ(plan->node_placements(), nullptr) << "every node runs on placements[0]";

  const Graph back = ReadNativeModelMemory(bytes.data(), bytes.size());
  EXPECT_EQ(back.placement.device, "cpu");
  EXPECT_EQ(back.placement.hierarchy, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(back.placement.devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(back.placement, g.placement);
  ASSERT_EQ(back.values.size(), g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i) {
    const NdSbp& a = g.values[i].sbp;
    const NdSbp& b = back.values[i].sbp;
    ASSERT_EQ(a.size(), b.size()) << g.values[i].name;
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].kind, b[k].kind) << g.values[i].name << " axis " << k;
      EXPECT_EQ(a[k].axis, b[k].axis) << g.values[i].name << " axis " << k;
    }
  }
  EXPECT_EQ(NdSbpToString(back.values[0].sbp), "(S(0),S(1))");
  EXPECT_EQ(NdSbpToString(back.values[1].sbp), "(B,S(0))");
  EXPECT_EQ(NdSbpToString(back.values[2].sbp), "(S(0),P)");
  // Writing the loaded graph again gives the same bytes.
  EXPECT_EQ(SerializeNativeModel(back), bytes);
}

TEST(NativePlan, ManualPlanOfTheLoadedModelMatchesTheOriginal) {
  Graph g = AnnotatedMatMul();
  const std::string bytes = SerializeNativeModel(g);
  Graph back = ReadNativeModelMemory(bytes.data(), bytes.size());
  ResolveSchemas(g);
  ResolveSchemas(back);
  PlanOptions o;
  o.placement = g.placement;
  o.mode = PlanMode::kManual;
  const Plan a = MakePlan(g, o);
  const Plan b = MakePlan(back, o);
  ASSERT_EQ(a.value_sbp.size(), b.value_sbp.size());
  for (size_t i = 0; i < a.value_sbp.size(); ++i)
    EXPECT_EQ(NdSbpToString(a.value_sbp[i]), NdSbpToString(b.value_sbp[i])) << "value " << i;
  // The annotation is what the plan feeds the input in (the annotation reached the planner).
  EXPECT_EQ(NdSbpToString(b.value_sbp[0]), "(S(0),S(1))");
  EXPECT_EQ(a.ToJson(), b.ToJson());
}

TEST(NativePlan, GraphWithoutPlacementWritesNoPlan) {
  Graph g = AnnotatedMatMul();
  g.placement = Placement();
  for (Value& v : g.values) v.sbp.clear();
  const std::string bytes = SerializeNativeModel(g);
  EXPECT_EQ(ModelOf(bytes)->plan(), nullptr);
  const Graph back = ReadNativeModelMemory(bytes.data(), bytes.size());
  EXPECT_TRUE(back.placement.empty());
  EXPECT_TRUE(back.placement.hierarchy.empty());
  for (const Value& v : back.values) EXPECT_TRUE(v.sbp.empty()) << v.name;
}

TEST(NativePlan, SbpWithoutPlacementIsKeptUnbound) {
  Graph g = AnnotatedMatMul();
  g.placement = Placement();
  const std::string bytes = SerializeNativeModel(g);
  const ofm::Plan* plan = ModelOf(bytes)->plan();
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(plan->placements()->size(), 0u);
  EXPECT_EQ(plan->annotations()->Get(0)->placement(), -1);
  const Graph back = ReadNativeModelMemory(bytes.data(), bytes.size());
  EXPECT_TRUE(back.placement.empty());
  EXPECT_EQ(NdSbpToString(back.values[2].sbp), "(S(0),P)");
}

TEST(NativePlan, WriterRefusesAnSbpThatDoesNotFitThePlacement) {
  Graph g = AnnotatedMatMul();
  g.values[0].sbp = {Sbp::S(0)};
  try {
    SerializeNativeModel(g);
    FAIL() << "a 1-entry SBP on a 2-D placement was written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("value 'X'"), std::string::npos) << e.what();
  }
}

// ---- Malformed plans ------------------------------------------------------------------------------

struct PlacementSpec {
  std::string device = "cpu";
  std::vector<int> ranks{0, 1, 2, 3};
  std::vector<int64_t> hierarchy{2, 2};
};
struct SbpSpec {
  uint8_t kind;  // ofm::SbpKind
  int axis;
};
struct AnnotationSpec {
  int value = 0;
  int placement = 0;
  std::vector<SbpSpec> sbp{{1, 1}, {0, 0}};  // (S(1), B)
};
struct PlanSpec {
  std::vector<PlacementSpec> placements{PlacementSpec{}};
  std::vector<AnnotationSpec> annotations{AnnotationSpec{}};
};

// A whole native file built by hand: Relu X[8,4] -> Y (values 0 and 1), plus the plan `spec`.
std::string FileWithPlan(const PlanSpec& spec) {
  FlatBufferBuilder b;
  std::vector<Offset<ofm::Value>> values;
  for (const char* name : {"X", "Y"}) {
    std::vector<Offset<ofm::Dim>> dims{ofm::CreateDim(b, 8), ofm::CreateDim(b, 4)};
    values.push_back(ofm::CreateValue(
        b, b.CreateString(name),
        ofm::CreateTensorType(b, static_cast<int32_t>(DType::kFloat32), true, b.CreateVector(dims))));
  }
  std::vector<int> in{0}, out{1};
  std::vector<Offset<ofm::Node>> nodes{ofm::CreateNode(b, b.CreateString("relu"), b.CreateString("Relu"), 0, 17,
                                                       b.CreateVector(in), b.CreateVector(out))};
  std::vector<Offset<ofm::OpsetImport>> opsets{ofm::CreateOpsetImport(b, b.CreateString(""), 17)};
  auto graph = ofm::CreateGraph(b, b.CreateString("g"), b.CreateVector(values), b.CreateVector(nodes),
                                b.CreateVector(in), b.CreateVector(out), b.CreateVector(opsets));
  std::vector<Offset<ofm::Placement>> placements;
  for (const PlacementSpec& p : spec.placements)
    placements.push_back(ofm::CreatePlacement(b, b.CreateString(p.device), b.CreateVector(p.ranks),
                                              b.CreateVector(p.hierarchy)));
  std::vector<Offset<ofm::SbpAnnotation>> annotations;
  for (const AnnotationSpec& a : spec.annotations) {
    std::vector<Offset<ofm::Sbp>> sbp;
    for (const SbpSpec& s : a.sbp) sbp.push_back(ofm::CreateSbp(b, static_cast<ofm::SbpKind>(s.kind), s.axis));
    annotations.push_back(ofm::CreateSbpAnnotation(b, a.value, a.placement, b.CreateVector(sbp)));
  }
  auto plan = ofm::CreatePlan(b, 0, b.CreateVector(placements), b.CreateVector(annotations));
  b.Finish(ofm::CreateModel(b, 0, graph, plan));

  native::Header h;
  h.flatbuffer_offset = kNativeHeaderBytes;
  h.flatbuffer_size = b.GetSize();
  h.flatbuffer_checksum = Xxh64(b.GetBufferPointer(), b.GetSize());
  h.data_offset = native::AlignUp(kNativeHeaderBytes + b.GetSize(), kSegmentAlignment);
  h.file_size = h.data_offset;
  std::string file(static_cast<size_t>(h.file_size), '\0');
  native::EncodeHeader(h, reinterpret_cast<unsigned char*>(&file[0]));
  std::memcpy(&file[kNativeHeaderBytes], b.GetBufferPointer(), b.GetSize());
  return file;
}

// The load error of `spec`'s file; expects `code` and a message containing `needle`.
void ExpectRefused(const PlanSpec& spec, ErrorCode code, const std::string& needle) {
  const std::string file = FileWithPlan(spec);
  try {
    ReadNativeModelMemory(file.data(), file.size());
    ADD_FAILURE() << "loaded; expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(NativePlan, HandBuiltWellFormedPlanLoads) {
  const std::string file = FileWithPlan(PlanSpec{});
  const Graph g = ReadNativeModelMemory(file.data(), file.size());
  EXPECT_EQ(g.placement.ToString(), "cpu:[[0,1],[2,3]]");
  EXPECT_EQ(NdSbpToString(g.values[0].sbp), "(S(1),B)");
  EXPECT_TRUE(g.values[1].sbp.empty());
}

TEST(NativePlan, MalformedPlansAreNamed) {
  const ErrorCode bad = ErrorCode::kInvalidModel;
  PlanSpec s;
  s.annotations[0].placement = 1;
  ExpectRefused(s, bad, "names placement 1, out of range (1 placements)");

  s = PlanSpec{};
  s.annotations[0].value = 2;
  ExpectRefused(s, bad, "names value 2, out of range (2 values)");
  s.annotations[0].value = -1;
  ExpectRefused(s, bad, "names value -1, out of range");

  s = PlanSpec{};
  s.annotations[0].sbp = {{1, 0}};
  ExpectRefused(s, bad, "1 SBP entries, but the placement has 2 axes");

  s = PlanSpec{};
  s.annotations[0].sbp = {{1, 2}, {0, 0}};
  ExpectRefused(s, bad, "split axis 2 out of range for a rank-2 tensor");
  s.annotations[0].sbp = {{1, -1}, {0, 0}};
  ExpectRefused(s, bad, "split axis -1 out of range");

  s = PlanSpec{};
  s.annotations[0].sbp = {{7, 0}, {0, 0}};
  ExpectRefused(s, bad, "unknown SBP kind 7");

  s = PlanSpec{};
  s.placements[0].hierarchy = {2, 3};
  ExpectRefused(s, bad, "a hierarchy whose product is not its 4 ranks");
  s.placements[0].hierarchy = {2, int64_t{1} << 62, 4};  // the product must not overflow (a fuzz finding)
  ExpectRefused(s, bad, "a hierarchy whose product is not its 4 ranks");
  s.placements[0].hierarchy = {int64_t{1} << 62, int64_t{1} << 62};
  ExpectRefused(s, bad, "a hierarchy whose product is not its 4 ranks");
  s.placements[0].hierarchy = {4, 0};
  ExpectRefused(s, bad, "hierarchy entry 0");
  s.placements[0].hierarchy = {};
  ExpectRefused(s, bad, "an empty hierarchy");

  s = PlanSpec{};
  s.placements[0].device = "tpu";
  ExpectRefused(s, bad, "unknown device type 'tpu'");
  s = PlanSpec{};
  s.placements[0].ranks = {0, 1, 1, 2};
  ExpectRefused(s, bad, "rank 1 listed twice");

  s = PlanSpec{};
  s.annotations.push_back(AnnotationSpec{});
  ExpectRefused(s, bad, "value 'X' is annotated twice");

  s = PlanSpec{};
  s.placements.push_back(PlacementSpec{});
  ExpectRefused(s, ErrorCode::kUnsupported, "one placement per graph");
}

}  // namespace
}  // namespace oneflow
