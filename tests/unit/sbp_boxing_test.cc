// Boxing between every pair of SBPs (1-D over 4 devices, 2-D over 2x2), uneven splits included,
// run on 4 in-process devices and checked against numpy-style slicing of the logical tensor.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "base/error.h"
#include "comm/communicator.h"
#include "engine/executor.h"
#include "plan/plan.h"
#include "boxing_reference.h"

namespace oneflow {
namespace {

using boxing_ref::CheckOutputs;
using boxing_ref::MakeInputs;
using boxing_ref::OneD;

// Runs `from` -> `to` for a [rows, cols] tensor on placement `pl` and checks every device.
void CheckPair(const Placement& pl, const Shape& shape, const NdSbp& from, const NdSbp& to) {
  SCOPED_TRACE(NdSbpToString(from) + " -> " + NdSbpToString(to) + " on " + pl.ToString() + " of " + ShapeToString(shape));
  Tensor x;
  std::vector<Tensor> in = MakeInputs(pl, shape, from, x);
  const int n = pl.size();
  auto comms = CreateInProcessGroup(n, 20000);
  std::vector<std::unique_ptr<Executor>> ex;
  std::vector<std::string> keys;
  static int serial = 0;
  for (int p = 0; p < n; ++p) {
    keys.push_back("boxing_test/" + std::to_string(serial++));
    RegisterCommunicator(keys.back(), comms[static_cast<size_t>(p)]);
    auto g = std::make_shared<Graph>(BuildBoxingGraph(shape, DType::kFloat32, from, to, pl, p, keys.back()));
    ex.push_back(std::make_unique<Executor>(g, 1));
  }
  std::vector<Tensor> out(static_cast<size_t>(n));
  std::vector<std::string> err(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p)
    threads.emplace_back([&, p] {
      try {
        out[static_cast<size_t>(p)] = ex[static_cast<size_t>(p)]->Run({in[static_cast<size_t>(p)]})[0];
      } catch (const std::exception& e) {
        err[static_cast<size_t>(p)] = e.what();
        comms[static_cast<size_t>(p)]->Abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  ex.clear();
  for (const std::string& k : keys) UnregisterCommunicator(k);
  for (int p = 0; p < n; ++p) ASSERT_EQ(err[static_cast<size_t>(p)], "") << "device " << p;
  CheckOutputs(pl, to, x, out);
}

TEST(SbpBoxing, EveryPair1DUneven) {
  Placement pl = Placement::Parse("cpu:0-3");
  for (const Sbp& a : OneD())
    for (const Sbp& b : OneD()) {
      CheckPair(pl, {7, 6}, {a}, {b});  // 7 rows: 2,2,2,1; 6 cols: 2,2,1,1
      CheckPair(pl, {8, 4}, {a}, {b});  // even
    }
}

TEST(SbpBoxing, EveryPair2DUneven) {
  Placement pl = Placement::Parse("cpu:[[0,1],[2,3]]");
  std::vector<NdSbp> all;
  for (const Sbp& a : OneD())
    for (const Sbp& b : OneD()) all.push_back({a, b});
  for (const NdSbp& from : all)
    for (const NdSbp& to : all) CheckPair(pl, {7, 5}, from, to);
}

TEST(SbpBoxing, StepsFollowTheTable) {
  Placement pl = Placement::Parse("cpu:0-3");
  auto kind = [&](const char* a, const char* b) {
    auto steps = PlanBoxing({8, 8}, DType::kFloat32, ParseNdSbp(a), ParseNdSbp(b), pl, CostModel());
    return steps.size() == 1 ? steps[0].kind : std::string("?");
  };
  EXPECT_EQ(kind("P", "B"), "all_reduce");
  EXPECT_EQ(kind("P", "S(1)"), "reduce_scatter");
  EXPECT_EQ(kind("S(0)", "B"), "all_gather");
  EXPECT_EQ(kind("S(0)", "S(1)"), "all_to_all");
  EXPECT_EQ(kind("B", "S(0)"), "slice");
  EXPECT_EQ(kind("B", "P"), "zero_fill");
  // All-reduce moves 2(n-1)/n of the tensor per device: 2 * 3/4 * 256 bytes.
  auto ar = PlanBoxing({8, 8}, DType::kFloat32, {Sbp::P()}, {Sbp::B()}, pl, CostModel());
  EXPECT_DOUBLE_EQ(ar[0].bytes, 384.0);
}

TEST(SbpComm, LostRankIsNamedWithinTheTimeout) {
  auto comms = CreateInProcessGroup(4, 300);
  std::vector<std::string> err(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)  // rank 3 never joins
    threads.emplace_back([&, r] {
      float v = 1;
      try {
        comms[static_cast<size_t>(r)]->AllReduceSum(&v, 1, DType::kFloat32, {0, 1, 2, 3});
      } catch (const Error& e) {
        err[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const std::string& e : err) EXPECT_NE(e.find("lost rank(s): 3"), std::string::npos) << e;
}

// Point-to-point and the remaining collectives of the in-process backend, on sub-groups.
TEST(SbpComm, SendRecvBroadcastBarrier) {
  auto comms = CreateInProcessGroup(4, 20000);
  std::vector<std::string> err(4);
  std::vector<int> got(4, -1), bcast(4, -1);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      try {
        Communicator& c = *comms[static_cast<size_t>(r)];
        int token = 100 + r;
        c.Send(&token, sizeof token, (r + 1) % 4);  // mailboxes: sends do not block
        c.Recv(&got[static_cast<size_t>(r)], sizeof(int), (r + 3) % 4);
        std::vector<int> group = r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
        bcast[static_cast<size_t>(r)] = r;
        c.Broadcast(&bcast[static_cast<size_t>(r)], sizeof(int), 1, group);
        c.Barrier({0, 1, 2, 3});
      } catch (const std::exception& e) {
        err[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(err[static_cast<size_t>(r)], "");
    EXPECT_EQ(got[static_cast<size_t>(r)], 100 + (r + 3) % 4);
    EXPECT_EQ(bcast[static_cast<size_t>(r)], r < 2 ? 1 : 3);
  }
  EXPECT_THROW(comms[0]->Send(&err, 1, 7), Error);  // no rank 7
}

}  // namespace
}  // namespace oneflow
