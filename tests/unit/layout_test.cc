// Layout pass (passes/layout.cc): conv nets run NHWC at optimization level 2 with at most a
// transpose at the input and one at the end, and give the outputs of the unoptimized NCHW graph
// (level 0: plain Conv/Relu/MaxPool/Add/... kernels, each tested against naive loops elsewhere).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../graph_builder.h"
#include "engine/session.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

Tensor RandomTensor(std::mt19937& rng, const Shape& s, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// test_util::GraphBuilder plus a Conv node with random weights (and bias) and k/2 padding.
struct Builder : test_util::GraphBuilder {
  int Conv(std::mt19937& rng, int x, int64_t cin, int64_t cout, int64_t k, int64_t stride, bool bias) {
    AttrMap a;
    const int64_t p = k / 2;
    a.set("pads", Attribute::Ints({p, p, p, p}));
    a.set("strides", Attribute::Ints({stride, stride}));
    std::vector<int> ins = {x, Const(RandomTensor(rng, {cout, cin, k, k}, -0.3f, 0.3f))};
    if (bias) ins.push_back(Const(RandomTensor(rng, {cout})));
    return Node("Conv", ins, a);
  }
};

AttrMap PoolAttrs(std::vector<int64_t> k, std::vector<int64_t> s, std::vector<int64_t> pads) {
  AttrMap a;
  a.set("kernel_shape", Attribute::Ints(k));
  a.set("strides", Attribute::Ints(s));
  a.set("pads", Attribute::Ints(pads));
  return a;
}

int CountOps(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

// Runs the graph at levels 0 and 2 on `x` with 1 and 2 threads; expects equal outputs. Returns
// the level-2 graph.
Graph CompareLevels(Graph g, int output, const Tensor& x) {
  g.outputs = {output};
  PrepareGraph(g);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"X", x}};
  Session s0(g, SessionOptions{1, 0});
  const Tensor want = s0.Run(feeds, {})[0].second;
  Graph optimized;
  for (int threads : {1, 2}) {
    Session s2(g, SessionOptions{threads, 2});
    const Tensor got = s2.Run(feeds, {})[0].second;
    EXPECT_EQ(got.shape(), want.shape());
    int bad = 0;
    for (int64_t i = 0; i < want.numel() && got.numel() == want.numel(); ++i) {
      const float w = want.data<float>()[i], v = got.data<float>()[i];
      if (!(std::fabs(w - v) <= 1e-4f * (1.0f + std::fabs(w))) && ++bad <= 3)
        ADD_FAILURE() << "element " << i << ": level 2 gives " << v << ", level 0 " << w << " (threads " << threads
                      << ")";
    }
    optimized = s2.optimized();
  }
  return optimized;
}

// Conv/Relu/MaxPool/Conv/Conv + residual Add/Relu/AveragePool/Mul by a scalar/Sigmoid/
// GlobalAveragePool: NHWC from the first conv to the global pool.
void CheckResNetLike(const TensorType& x_type, const Tensor& x) {
  std::mt19937 rng(3);
  Builder b;
  const int X = b.Input("X", x_type);
  // Wide enough (> 3 MFLOP per conv) that the convs split across 2 threads.
  int t = b.Node("Relu", {b.Conv(rng, X, 16, 48, 3, 1, true)});
  const int p = b.Node("MaxPool", {t}, PoolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}));
  t = b.Node("Relu", {b.Conv(rng, p, 48, 48, 3, 1, false)});
  t = b.Node("Relu", {b.Node("Add", {b.Conv(rng, t, 48, 48, 3, 1, true), p})});
  AttrMap avg = PoolAttrs({3, 3}, {1, 1}, {1, 1, 1, 1});
  avg.set("count_include_pad", Attribute::Int(1));
  t = b.Node("AveragePool", {t}, avg);
  Tensor half(DType::kFloat32, Shape{});
  half.data<float>()[0] = 0.5f;
  t = b.Node("Sigmoid", {b.Node("Mul", {t, b.Const(half)})});
  const int y = b.Node("GlobalAveragePool", {t});
  const Graph opt = CompareLevels(b.g, y, x);
  // One transpose at the input; the one after the global pool only moves size-1 dims: a Reshape.
  EXPECT_EQ(CountOps(opt, "Transpose"), 1);
  EXPECT_EQ(CountOps(opt, "Reshape"), 1);
  EXPECT_EQ(CountOps(opt, "NhwcMaxPool"), 1);
  EXPECT_EQ(CountOps(opt, "NhwcAveragePool"), 1);
  EXPECT_EQ(CountOps(opt, "NhwcGlobalAveragePool"), 1);
  EXPECT_EQ(CountOps(opt, "FusedConv"), 3);
  for (const Node& n : opt.nodes) {
    if (n.op_type == "FusedConv") {
      EXPECT_EQ(n.attrs.GetString("layout"), "NHWC");
    }
  }
}

TEST(Layout, ResNetLikeStaticShape) {
  std::mt19937 rng(1);
  const Tensor x = RandomTensor(rng, {2, 16, 24, 24});
  CheckResNetLike(TensorType::Of(DType::kFloat32, x.shape()), x);
}

TEST(Layout, ResNetLikeSymbolicBatch) {
  std::mt19937 rng(2);
  // On 2 threads: batch 1 runs row bands; 3 one-image chunks; 19 two-image chunks and a tail.
  for (int64_t n : {1, 3, 19}) {
    const Tensor x = RandomTensor(rng, {n, 16, 23, 25});
    CheckResNetLike(TensorType::Of(DType::kFloat32, {Dim::Symbol("N"), Dim::Known(16), Dim::Known(23), Dim::Known(25)}), x);
  }
}

// Small maps with many channels at batch 1 run as slices of the output channels on 2 threads;
// residual, bias and both kinds of activation (oneDNN post-op, applied after) must land in place.
TEST(Layout, SmallMapChannelSlices) {
  std::mt19937 rng(6);
  for (const char* act : {"Relu", "Sigmoid"}) {
    Builder b;
    const Tensor x = RandomTensor(rng, {1, 64, 7, 6});
    const int X = b.Input("X", TensorType::Of(DType::kFloat32, x.shape()));
    const int c1 = b.Node("Relu", {b.Conv(rng, X, 64, 128, 3, 1, true)});
    const int c2 = b.Conv(rng, c1, 128, 128, 3, 1, true);
    const int y = b.Node(act, {b.Node("Add", {c2, c1})});
    SCOPED_TRACE(act);
    const Graph opt = CompareLevels(b.g, y, x);
    EXPECT_EQ(CountOps(opt, "Transpose"), 2);
    EXPECT_EQ(CountOps(opt, "FusedConv"), 2);
  }
}

// Few input channels (an image net's first conv) run the direct NHWC kernel (conv_direct.h) where
// the kernel is 3 wide at unit column stride: the cnn bench's layers, next to a strided 7x7 stem
// with auto_pad that stays on oneDNN, against the level-0 NCHW kernels.
TEST(Layout, FewInputChannelConvs) {
  std::mt19937 rng(8);
  for (int64_t batch : {1, 3}) {
    Builder b;
    const Tensor x = RandomTensor(rng, {batch, 3, 19, 21});
    const int X = b.Input("X", TensorType::Of(DType::kFloat32, x.shape()));
    int t = b.Node("Relu", {b.Conv(rng, X, 3, 32, 3, 1, true)});
    t = b.Node("MaxPool", {t}, PoolAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}));
    t = b.Node("Relu", {b.Conv(rng, t, 32, 64, 3, 1, true)});
    AttrMap stem;
    stem.set("auto_pad", Attribute::String("SAME_UPPER"));
    stem.set("strides", Attribute::Ints({2, 2}));
    const int s = b.Node("Conv", {X, b.Const(RandomTensor(rng, {16, 3, 7, 7}, -0.3f, 0.3f))}, stem);
    const int y = b.Node("Concat", {b.Node("Flatten", {t}), b.Node("Flatten", {s})}, [] {
      AttrMap a;
      a.set("axis", Attribute::Int(1));
      return a;
    }());
    SCOPED_TRACE("batch " + std::to_string(batch));
    const Graph opt = CompareLevels(b.g, y, x);
    EXPECT_EQ(CountOps(opt, "FusedConv"), 3);
  }
}

// NHWC pools over the geometries ONNX allows, on channel counts that take the vector path (32)
// and the generic one (5); max pools with every window inside the input take the interior path.
TEST(Layout, PoolGeometries) {
  struct Case {
    const char* op;
    std::vector<int64_t> k, s, pads, dil;
    int ceil, include_pad;
  };
  const Case cases[] = {
      {"MaxPool", {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 0},
      {"MaxPool", {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0},
      {"MaxPool", {3, 2}, {2, 1}, {1, 0, 0, 1}, {2, 1}, 1, 0},
      {"MaxPool", {3, 3}, {3, 3}, {0, 0, 0, 0}, {1, 1}, 1, 0},
      {"MaxPool", {3, 2}, {1, 2}, {0, 0, 0, 0}, {1, 1}, 0, 0},  // windows all inside, odd kernel
      {"MaxPool", {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, 0},
      {"AveragePool", {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 0},
      {"AveragePool", {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, 1},
      {"AveragePool", {2, 3}, {2, 2}, {0, 1, 1, 0}, {1, 1}, 1, 1},
      {"AveragePool", {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0, 0},
  };
  std::mt19937 rng(4);
  for (int64_t c : {32, 5}) {
    for (const Case& pc : cases) {
      Builder b;
      const Tensor x = RandomTensor(rng, {2, 3, 10, 9});
      const int X = b.Input("X", TensorType::Of(DType::kFloat32, x.shape()));
      AttrMap a = PoolAttrs(pc.k, pc.s, pc.pads);
      a.set("ceil_mode", Attribute::Int(pc.ceil));
      if (pc.dil != std::vector<int64_t>{1, 1}) a.set("dilations", Attribute::Ints(pc.dil));
      if (std::string(pc.op) == "AveragePool") a.set("count_include_pad", Attribute::Int(pc.include_pad));
      const int y = b.Node(pc.op, {b.Conv(rng, X, 3, c, 3, 1, true)}, a);
      SCOPED_TRACE(std::string(pc.op) + " channels " + std::to_string(c) + " ceil " + std::to_string(pc.ceil));
      const Graph opt = CompareLevels(b.g, y, x);
      EXPECT_EQ(CountOps(opt, std::string("Nhwc") + pc.op), 1);
      EXPECT_EQ(CountOps(opt, "Transpose"), 2);
    }
  }
}

// A conv output read by a layout-free op and by one that is not (Flatten): the transpose stays
// where it is rather than being duplicated.
TEST(Layout, NoPushWhenAReaderNeedsNchw) {
  std::mt19937 rng(5);
  Builder b;
  const Tensor x = RandomTensor(rng, {1, 4, 6, 6});
  const int X = b.Input("X", TensorType::Of(DType::kFloat32, x.shape()));
  const int c = b.Conv(rng, X, 4, 8, 3, 1, true);
  const int r = b.Node("Relu", {c});
  AttrMap fa;
  fa.set("axis", Attribute::Int(1));
  const int f = b.Node("Flatten", {c}, fa);
  const int y = b.Node("Add", {b.Node("Flatten", {r}, fa), f});
  const Graph opt = CompareLevels(b.g, y, x);
  EXPECT_EQ(CountOps(opt, "Transpose"), 2);
  EXPECT_EQ(CountOps(opt, "Relu"), 1);
}

}  // namespace
}  // namespace oneflow
