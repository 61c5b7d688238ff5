// Boxing between every pair of SBPs (1-D over 4 devices, 2-D over 2x2), uneven splits included,
// run on 4 in-process devices and checked against numpy-style slicing of the logical tensor.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "base/error.h"
#include "engine/comm/communicator.h"
#include "engine/executor.h"
#include "engine/plan/plan.h"

namespace oneflow {
namespace {

// Reference slicing, written independently of sbp.cc: `x[lo0:hi0, lo1:hi1]` of a rank-2 tensor,
// the bounds from the balanced rule (first n % parts pieces get one more), nested over axes.
struct Bounds { int64_t lo[2], hi[2]; };
Bounds RefBlock(const Shape& shape, const NdSbp& sbp, const std::vector<int64_t>& hier, const std::vector<int64_t>& coord) {
  Bounds b{{0, 0}, {shape[0], shape[1]}};
  for (size_t k = 0; k < sbp.size(); ++k) {
    if (!sbp[k].is_split()) continue;
    int a = sbp[k].axis;
    int64_t n = b.hi[a] - b.lo[a], parts = hier[k], i = coord[k];
    int64_t start = 0;
    for (int64_t p = 0; p < i; ++p) start += n / parts + (p < n % parts ? 1 : 0);
    b.lo[a] += start;
    b.hi[a] = b.lo[a] + n / parts + (i < n % parts ? 1 : 0);
  }
  return b;
}

Tensor Slice(const Tensor& x, const Bounds& b) {
  Tensor t(DType::kFloat32, {b.hi[0] - b.lo[0], b.hi[1] - b.lo[1]});
  for (int64_t i = b.lo[0]; i < b.hi[0]; ++i)
    for (int64_t j = b.lo[1]; j < b.hi[1]; ++j)
      t.data<float>()[(i - b.lo[0]) * t.dim(1) + (j - b.lo[1])] = x.data<float>()[i * x.dim(1) + j];
  return t;
}

// Runs `from` -> `to` for a [rows, cols] tensor on placement `pl` and checks every device.
void CheckPair(const Placement& pl, const Shape& shape, const NdSbp& from, const NdSbp& to) {
  SCOPED_TRACE(NdSbpToString(from) + " -> " + NdSbpToString(to) + " on " + pl.ToString() + " of " + ShapeToString(shape));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor x(DType::kFloat32, shape);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  const int n = pl.size();
  // Inputs: the block of x; for P axes, random parts whose sum over each P group is the block.
  std::vector<Tensor> in(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    NdSbp as_b = from;
    for (Sbp& s : as_b) if (s.is_partial()) s = Sbp::B();
    in[static_cast<size_t>(p)] = Slice(x, RefBlock(shape, as_b, pl.hierarchy, pl.Coord(p)));
  }
  for (int p = 0; p < n; ++p) {
    std::vector<int64_t> c = pl.Coord(p);
    bool first = true;
    for (size_t k = 0; k < from.size(); ++k) first &= !from[k].is_partial() || c[k] == 0;
    if (first) continue;
    // Move a random share from this device to the first device of its P group.
    std::vector<int64_t> c0 = c;
    for (size_t k = 0; k < from.size(); ++k) if (from[k].is_partial()) c0[k] = 0;
    Tensor& mine = in[static_cast<size_t>(p)];
    Tensor& root = in[static_cast<size_t>(pl.Position(c0))];
    for (int64_t i = 0; i < mine.numel(); ++i) {
      float r = u(rng);
      root.data<float>()[i] -= r;
      mine.data<float>()[i] = r;
    }
  }
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
  // Expected: the block of x under `to`; for P axes, the sum over each P group equals the block.
  for (int p = 0; p < n; ++p) {
    std::vector<int64_t> c = pl.Coord(p);
    bool first = true;
    for (size_t k = 0; k < to.size(); ++k) first &= !to[k].is_partial() || c[k] == 0;
    if (!first) continue;
    NdSbp as_b = to;
    for (Sbp& s : as_b) if (s.is_partial()) s = Sbp::B();
    Tensor want = Slice(x, RefBlock(shape, as_b, pl.hierarchy, c));
    Tensor got(DType::kFloat32, want.shape());
    for (int q = 0; q < n; ++q) {
      std::vector<int64_t> cq = pl.Coord(q);
      bool same = true;
      for (size_t k = 0; k < to.size(); ++k) same &= to[k].is_partial() || cq[k] == c[k];
      if (!same) continue;
      const Tensor& o = out[static_cast<size_t>(q)];
      ASSERT_EQ(o.shape(), want.shape()) << "device " << q;
      for (int64_t i = 0; i < o.numel(); ++i) got.data<float>()[i] += o.data<float>()[i];
    }
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-5) << "device " << p << " element " << i;
  }
}

std::vector<Sbp> OneD() { return {Sbp::S(0), Sbp::S(1), Sbp::B(), Sbp::P()}; }

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
