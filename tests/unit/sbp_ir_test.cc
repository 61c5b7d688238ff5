// Placement and SBP in the IR: parsing/printing, the balanced split rule against a naive
// reference, fit errors, and the SBP signatures ops declare.
#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/op_schema.h"
#include "graph/placement.h"
#include "graph/sbp.h"

namespace oneflow {
namespace {

TEST(SbpPlacement, ParsesAndPrints) {
  Placement a = Placement::Parse("cpu:0-3");
  EXPECT_EQ(a.hierarchy, (std::vector<int64_t>{4}));
  EXPECT_EQ(a.devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(a.ToString(), "cpu:0-3");
  Placement b = Placement::Parse("cpu:[[0,1],[2,3]]");
  EXPECT_EQ(b.hierarchy, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(b.ToString(), "cpu:[[0,1],[2,3]]");
  EXPECT_EQ(Placement::Parse(b.ToString()), b);
  Placement c = Placement::Parse("cuda:[3, 1]");
  EXPECT_EQ(c.device, "cuda");
  EXPECT_EQ(c.ToString(), "cuda:[3,1]");
  EXPECT_EQ(Placement::Parse("0,1").device, "cpu");
  // Coordinates and groups along an axis of a 2x3 array.
  Placement d = Placement::Parse("cpu:[[0,1,2],[3,4,5]]");
  EXPECT_EQ(d.Coord(4), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(d.AxisGroup(4, 0), (std::vector<int>{1, 4}));
  EXPECT_EQ(d.AxisGroup(4, 1), (std::vector<int>{3, 4, 5}));
}

TEST(SbpPlacement, BadTextAndMissingDevices) {
  for (const char* bad : {"cpu:", "tpu:0-3", "cpu:[[0,1],[2]]", "cpu:0,0", "cpu:3-1", "cpu:[0,1", "cpu:a"}) {
    try {
      Placement::Parse(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("placement"), std::string::npos) << e.what();
    }
  }
  try {
    Placement::Parse("cpu:0-5").CheckDevicesExist(4);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device(s) 4, 5"), std::string::npos) << e.what();
  }
}

TEST(SbpText, ParsesAndPrints) {
  EXPECT_EQ(ParseSbp("S(2)"), Sbp::S(2));
  EXPECT_EQ(ParseSbp(" B "), Sbp::B());
  EXPECT_EQ(ParseSbp("P"), Sbp::P());
  EXPECT_EQ(NdSbpToString(ParseNdSbp("(S(0), B)")), "(S(0),B)");
  EXPECT_EQ(NdSbpToString(ParseNdSbp("[P,S(1)]")), "(P,S(1))");
  EXPECT_EQ(NdSbpToString(ParseNdSbp("S(1)")), "S(1)");
  for (const char* bad : {"S", "S(x)", "Q", "S(-1)", ""}) EXPECT_THROW(ParseNdSbp(bad), Error) << bad;
}

// The uneven rule against a naive per-element assignment: element e of n goes to the piece whose
// range holds it; pieces differ by at most one and the larger ones come first.
TEST(SbpSplit, BalancedRuleMatchesNaiveAssignment) {
  for (int64_t n = 1; n <= 23; ++n)
    for (int64_t parts = 1; parts <= n; ++parts) {
      std::vector<int64_t> owner;
      for (int64_t p = 0; p < parts; ++p) {
        int64_t size = n / parts + (p < n % parts ? 1 : 0);
        for (int64_t i = 0; i < size; ++i) owner.push_back(p);
      }
      ASSERT_EQ(static_cast<int64_t>(owner.size()), n);
      for (int64_t p = 0; p < parts; ++p) {
        Range r = BalancedPart(n, parts, p);
        for (int64_t e = r.start; e < r.start + r.size; ++e) EXPECT_EQ(owner[static_cast<size_t>(e)], p);
      }
    }
}

TEST(SbpSplit, NestedBlocksAndFit) {
  // 7 rows over a 2x2 array, split on both axes: 4|3, then 2|2 and 2|1.
  std::vector<int64_t> h{2, 2};
  NdSbp s = ParseNdSbp("(S(0),S(0))");
  auto rows = [&](int64_t a, int64_t b) { return LocalBlock({7, 3}, s, h, {a, b})[0]; };
  EXPECT_EQ(rows(0, 0).start, 0);
  EXPECT_EQ(rows(0, 1).start, 2);
  EXPECT_EQ(rows(1, 0).start, 4);
  EXPECT_EQ(rows(1, 1).start, 6);
  EXPECT_EQ(rows(1, 1).size, 1);
  EXPECT_EQ(LocalShape({7, 3}, ParseNdSbp("(S(1),P)"), h, {1, 0}), (Shape{7, 1}));
  EXPECT_TRUE(SbpMisfit({7, 3}, s, h).empty());
  EXPECT_NE(SbpMisfit({3, 3}, s, h).find("at least"), std::string::npos);   // 3 -> 2|1 -> 1|1 and 1|0
  EXPECT_NE(SbpMisfit({7, 3}, ParseNdSbp("(S(2),B)"), h).find("axis 2"), std::string::npos);
  EXPECT_NE(SbpMisfit({7, 3}, ParseNdSbp("S(0)"), h).find("entries"), std::string::npos);
  EXPECT_THROW(CheckSbpFits("x", {2, 3}, ParseNdSbp("S(0)"), Placement::Parse("cpu:0-3")), Error);
}

TEST(SbpRules, MatMulDeclaresDataColumnAndRowParallel) {
  const OpSchema* s = OpRegistry::Global().Find("", "MatMul", 17);
  ASSERT_TRUE(s && s->sbp);
  Shape a{8, 16}, b{16, 32}, y{8, 32};
  SbpContext c;
  AttrMap attrs;
  c.attrs = &attrs;
  c.inputs = {&a, &b};
  c.outputs = {&y};
  c.values = {nullptr, nullptr};
  c.devices = 4;
  bool data = false, column = false, row = false;
  for (const SbpSignature& sig : s->sbp(c)) {
    data |= sig.in[0] == Sbp::S(0) && sig.in[1] == Sbp::B() && sig.out[0] == Sbp::S(0);
    column |= sig.in[0] == Sbp::B() && sig.in[1] == Sbp::S(1) && sig.out[0] == Sbp::S(1);
    row |= sig.in[0] == Sbp::S(1) && sig.in[1] == Sbp::S(0) && sig.out[0] == Sbp::P();
  }
  EXPECT_TRUE(data && column && row);
  // Ops without a rule run replicated ("all B"); Slice has none.
  EXPECT_FALSE(OpRegistry::Global().Find("", "Slice", 17)->sbp);
}

}  // namespace
}  // namespace oneflow
