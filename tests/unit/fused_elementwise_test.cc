// Elementwise fusion (passes/elementwise_fusion.cc) and the CPU FusedElementwise kernel:
// random chains and trees of elementwise ops run fused and unfused (the same graph optimized with
// the pass on and off) must agree to 1e-6 in f32; f16/bf16 fused chains must be the f32 result
// rounded once; the pass must leave observable intermediates and unindexable broadcasts alone.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "../graph_builder.h"
#include "base/half.h"
#include "engine/executor.h"
#include "engine/session.h"
#include "graph/fused_elementwise_program.h"
#include "graph/op_schema.h"
#include "passes/passes.h"

namespace oneflow {
namespace {

using test_util::GraphBuilder;

int CountOps(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

std::shared_ptr<Graph> Optimized(const Graph& model, bool fuse, DeviceType device = DeviceType::kCpu) {
  auto g = std::make_shared<Graph>(model);
  PrepareGraph(*g);
  ThreadPool pool(1);
  OptimizeForDevice(*g, 2, pool, device, fuse);
  return g;
}

Tensor RandomTensor(DType dt, const Shape& s, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  Tensor t(DType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  if (dt == DType::kFloat32) return t;
  Tensor h(dt, s);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DType::kFloat16) h.data<Float16>()[i] = Float16(t.data<float>()[i]);
    else h.data<BFloat16>()[i] = BFloat16(t.data<float>()[i]);
  }
  return h;
}

Tensor ToF32(const Tensor& t) {
  Tensor out(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) out.data<float>()[i] = static_cast<float>(t.GetAsDouble(i));
  return out;
}

// |got - want| <= tol * (1 + |want|) elementwise; NaN and infinities must match exactly.
void ExpectClose(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int bad = 0;
  for (int64_t i = 0; i < want.numel() && bad < 5; ++i) {
    const double a = got.GetAsDouble(i), b = want.GetAsDouble(i);
    const bool ok = std::isnan(b) ? std::isnan(a) : (std::isinf(b) ? a == b : std::fabs(a - b) <= tol * (1.0 + std::fabs(b)));
    if (!ok) {
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", want " << b;
      ++bad;
    }
  }
}

// A random elementwise DAG over output shape [4, 7, 67] (more than one 512-element tile, odd
// sizes): graph inputs of that shape, a bias [67], a per-row statistic [4, 7, 1], a middle block
// [7, 1] and a trailing block [7, 67], scalar constants. `observe` makes one intermediate a graph
// output too. Constants are rounded to `dt` so a wider graph sees the same values.
struct RandomChain {
  Graph g;
  std::vector<Shape> input_shapes;
};

RandomChain MakeRandomChain(uint32_t seed, DType dt, DType storage_of_constants, bool observe, int steps) {
  std::mt19937 rng(seed);
  GraphBuilder b;
  const Shape full{4, 7, 67};
  const std::vector<Shape> shapes = {full, full, {67}, {4, 7, 1}, {7, 1}, {7, 67}};
  RandomChain rc;
  std::vector<int> fulls, leaves;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const int v = b.Input("in" + std::to_string(i), TensorType::Of(dt, shapes[i]));
    rc.input_shapes.push_back(shapes[i]);
    (shapes[i] == full ? fulls : leaves).push_back(v);
  }
  auto scalar = [&](float v) {
    const double rounded = Tensor::Scalar(storage_of_constants, v).GetAsDouble(0);
    return b.Const("c" + std::to_string(b.g.values.size()), Tensor::Scalar(dt, rounded));
  };
  const char* unary[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Gelu", "HardSigmoid", "HardSwish", "Exp",
                         "Log", "Neg", "Abs", "Sqrt", "Reciprocal", "Erf", "Softplus", "Clip"};
  const char* binary[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"};
  std::uniform_int_distribution<int> coin(0, 99);
  auto pick = [&](const std::vector<int>& from) { return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)]; };
  int last = kNoValue;
  std::vector<int> made;
  for (int s = 0; s < steps; ++s) {
    // Mostly extend the latest value, so chains are long; sometimes start from another full value.
    const int a = (last != kNoValue && coin(rng) < 70) ? last : pick(fulls);
    int out;
    if (coin(rng) < 45) {
      const std::string op = unary[std::uniform_int_distribution<int>(0, 15)(rng)];
      AttrMap attrs;
      if (op == "LeakyRelu") attrs.set("alpha", Attribute::Float(0.1f));
      if (op == "Gelu" && coin(rng) < 50) attrs.set("approximate", Attribute::String("tanh"));
      std::vector<int> in = {a};
      if (op == "Clip") in = {a, scalar(-0.75f), scalar(1.25f)};
      out = b.Node(op, in, attrs);
      if (op == "Gelu") b.g.nodes.back().opset = 20;
    } else {
      const std::string op = binary[std::uniform_int_distribution<int>(0, 6)(rng)];
      int other;
      const int kind = coin(rng);
      if (op == "Pow") {
        const float exps[] = {2.0f, 3.0f, 0.5f, -1.0f, 1.5f};
        other = scalar(exps[std::uniform_int_distribution<int>(0, 4)(rng)]);
      } else if (kind < 35) {
        other = pick(fulls);
      } else if (kind < 75) {
        other = pick(leaves);
      } else {
        other = scalar(std::uniform_real_distribution<float>(-1.5f, 1.5f)(rng));
      }
      const bool swap = op != "Pow" && coin(rng) < 40;
      out = b.Node(op, swap ? std::vector<int>{other, a} : std::vector<int>{a, other});
    }
    fulls.push_back(out);
    made.push_back(out);
    last = out;
  }
  b.g.outputs = {last};
  if (observe && made.size() > 2) b.g.outputs.push_back(made[made.size() / 2]);
  rc.g = std::move(b.g);
  return rc;
}

std::vector<Tensor> RunGraph(const std::shared_ptr<Graph>& g, const std::vector<Tensor>& feeds, int threads = 2) {
  Executor ex(g, threads);
  return ex.Run(feeds);
}

TEST(FusedElementwise, RandomChainsMatchTheUnfusedGraph) {
  int fused_nodes = 0, graphs_fused = 0;
  for (uint32_t seed = 1; seed <= 120; ++seed) {
    RandomChain rc = MakeRandomChain(seed, DType::kFloat32, DType::kFloat32, seed % 4 == 0, 2 + static_cast<int>(seed % 11));
    auto off = Optimized(rc.g, false);
    auto on = Optimized(rc.g, true);
    ASSERT_EQ(CountOps(*off, "FusedElementwise"), 0);
    const int n = CountOps(*on, "FusedElementwise");
    fused_nodes += n;
    graphs_fused += n > 0;
    std::mt19937 rng(seed * 7919u);
    std::vector<Tensor> feeds;
    for (const Shape& s : rc.input_shapes) feeds.push_back(RandomTensor(DType::kFloat32, s, rng));
    const auto want = RunGraph(off, feeds);
    const auto got = RunGraph(on, feeds);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ExpectClose(got[i], want[i], 1e-6, "seed " + std::to_string(seed));
    if (HasFailure()) return;
  }
  // Nearly every graph has a fusable pair; the pass must have found them.
  EXPECT_GE(graphs_fused, 100);
  EXPECT_GE(fused_nodes, graphs_fused);
}

// f16/bf16: a fused chain computes in f32 and rounds once, so it equals the f32 graph (inputs and
// constants the same values) to half an ulp of the storage type.
void CheckHalfChains(DType dt, double rel) {
  int fused_graphs = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const int steps = 2 + static_cast<int>(seed % 9);
    RandomChain half = MakeRandomChain(seed, dt, dt, false, steps);
    RandomChain wide = MakeRandomChain(seed, DType::kFloat32, dt, false, steps);
    auto fused = Optimized(half.g, true);
    // Every live node fuses into one program (no half rounding in between); a chain whose result
    // depends on one node only keeps that node.
    ASSERT_EQ(fused->nodes.size(), 1u) << "seed " << seed;
    fused_graphs += fused->nodes[0].op_type == "FusedElementwise";
    std::mt19937 rng(seed * 104729u);
    std::vector<Tensor> feeds, wide_feeds;
    for (const Shape& s : half.input_shapes) {
      feeds.push_back(RandomTensor(dt, s, rng));
      wide_feeds.push_back(ToF32(feeds.back()));
    }
    const Tensor got = RunGraph(fused, feeds)[0];
    const Tensor want = RunGraph(Optimized(wide.g, false), wide_feeds)[0];
    ASSERT_EQ(got.dtype(), dt);
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double a = got.GetAsDouble(i), r = want.GetAsDouble(i);
      if (!std::isfinite(r) || std::fabs(r) > 6e4) continue;  // beyond f16's range
      ASSERT_LE(std::fabs(a - r), rel * std::fabs(r) + 1e-7) << DTypeName(dt) << " seed " << seed << " element " << i;
    }
  }
  EXPECT_GE(fused_graphs, 30);
}

TEST(FusedElementwise, Float16ChainsRoundOnce) { CheckHalfChains(DType::kFloat16, 4.9e-4); }
TEST(FusedElementwise, BFloat16ChainsRoundOnce) { CheckHalfChains(DType::kBFloat16, 3.91e-3); }

// x * sigmoid(x + bias) over a symbolic batch: one fused node reading x and the bias; outputs for
// two batch sizes against a double-precision loop.
TEST(FusedElementwise, SwishWithBiasOverASymbolicBatch) {
  GraphBuilder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, std::vector<Dim>{Dim::Symbol("N"), Dim::Known(300)}));
  std::mt19937 rng(3);
  const Tensor bias = RandomTensor(DType::kFloat32, Shape{300}, rng);
  const int h = b.Node("Add", {x, b.Const("bias", bias)});
  b.g.outputs = {b.Node("Mul", {h, b.Node("Sigmoid", {h})})};
  auto on = Optimized(b.g, true);
  ASSERT_EQ(on->nodes.size(), 1u);
  ASSERT_EQ(on->nodes[0].op_type, "FusedElementwise");
  EXPECT_EQ(on->nodes[0].inputs.size(), 2u);
  Executor ex(on, 2);
  for (int64_t n : {3, 17}) {
    const Tensor xt = RandomTensor(DType::kFloat32, Shape{n, 300}, rng);
    const Tensor y = ex.Run({xt})[0];
    ASSERT_EQ(y.shape(), (Shape{n, 300}));
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double v = double(xt.data<float>()[i]) + bias.data<float>()[i % 300];
      ASSERT_NEAR(y.data<float>()[i], v / (1.0 + std::exp(-v)), 1e-6 * (1.0 + std::fabs(v)));
    }
  }
}

// Values someone else sees stay: a graph output, a value a ReduceSum also reads.
TEST(FusedElementwise, ObservableIntermediatesAreNotFused) {
  GraphBuilder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{8, 16}));
  const int e = b.Node("Exp", {x});
  const int r = b.Node("Relu", {e});         // read by Tanh and ReduceSum
  const int t = b.Node("Tanh", {r});
  const int s = b.Node("ReduceSum", {r});
  const int u = b.Node("Neg", {t});          // a graph output, read by Abs as well
  const int y = b.Node("Abs", {u});
  b.g.outputs = {y, u, s};
  auto on = Optimized(b.g, true);
  // Exp+Relu fuse (Relu's output is the group's result), Tanh+Neg fuse, Abs stays alone.
  EXPECT_EQ(CountOps(*on, "FusedElementwise"), 2);
  EXPECT_EQ(CountOps(*on, "Abs"), 1);
  EXPECT_EQ(CountOps(*on, "ReduceSum"), 1);
  std::mt19937 rng(5);
  const std::vector<Tensor> feeds = {RandomTensor(DType::kFloat32, Shape{8, 16}, rng, -1.0f, 1.0f)};
  const auto want = RunGraph(Optimized(b.g, false), feeds);
  const auto got = RunGraph(on, feeds);
  for (size_t i = 0; i < want.size(); ++i) ExpectClose(got[i], want[i], 1e-6, "output " + std::to_string(i));
}

// [4, 1, 67] on [4, 7, 67] broadcasts inside its block of dims: not indexable by (e / div) % mod,
// so its Add stays outside the fused group (the Relu -> Tanh pair still fuses).
TEST(FusedElementwise, SplitBroadcastStaysUnfused) {
  GraphBuilder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{4, 7, 67}));
  const int z = b.Input("z", TensorType::Of(DType::kFloat32, Shape{4, 1, 67}));
  b.g.outputs = {b.Node("Add", {b.Node("Tanh", {b.Node("Relu", {x})}), z})};
  auto on = Optimized(b.g, true);
  EXPECT_EQ(CountOps(*on, "FusedElementwise"), 1);
  EXPECT_EQ(CountOps(*on, "Add"), 1);
  std::mt19937 rng(9);
  const std::vector<Tensor> feeds = {RandomTensor(DType::kFloat32, Shape{4, 7, 67}, rng),
                                     RandomTensor(DType::kFloat32, Shape{4, 1, 67}, rng)};
  ExpectClose(RunGraph(on, feeds)[0], RunGraph(Optimized(b.g, false), feeds)[0], 1e-6, "split broadcast");
}

TEST(FusedElementwise, OperandIndexMaps) {
  const Shape out{4, 7, 67};
  auto map = [&](const Shape& in) { return MakeOperandIndexMap(in, out, "test"); };
  EXPECT_EQ(map({4, 7, 67}).div, 1);
  EXPECT_EQ(map({4, 7, 67}).mod, 4 * 7 * 67);
  EXPECT_EQ(map({67}).div, 1);
  EXPECT_EQ(map({67}).mod, 67);
  EXPECT_EQ(map({4, 7, 1}).div, 67);
  EXPECT_EQ(map({4, 7, 1}).mod, 28);
  EXPECT_EQ(map({7, 1}).div, 67);
  EXPECT_EQ(map({7, 1}).mod, 7);
  EXPECT_EQ(map({1, 1, 1}).mod, 1);
  EXPECT_EQ(map({}).mod, 1);
  EXPECT_THROW(map({4, 1, 67}), Error);
  EXPECT_THROW(map({5}), Error);
  EXPECT_THROW(map({1, 4, 7, 67}), Error);
}

// A hand-written program reading a register before writing it is refused when the graph is
// prepared, naming the node and the problem.
TEST(FusedElementwise, InvalidProgramIsAClearError) {
  GraphBuilder b;
  b.g.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{4}));
  const int y = b.Node("FusedElementwise", {x});
  Node& n = b.g.nodes.back();
  n.domain = kOneflowDomain;
  n.opset = kOneflowDomainVersion;
  EwProgram p;
  p.code = {{EwOp::kLoad, 0, 0, 0}, {EwOp::kAdd, 1, 0, 2}};
  p.num_registers = 3;
  p.ToAttrs(n.attrs);
  b.g.outputs = {y};
  try {
    PrepareGraph(b.g);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("reads register 2 before it is written"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("FusedElementwise"), std::string::npos) << e.what();
  }
}

// The pass keeps programs within the kernels' register file: a wide tree of 20 leaves combined
// pairwise fuses with few registers.
TEST(FusedElementwise, RegisterAllocationReusesRegisters) {
  GraphBuilder b;
  std::vector<int> level;
  for (int i = 0; i < 16; ++i) level.push_back(b.Input("x" + std::to_string(i), TensorType::Of(DType::kFloat32, Shape{33})));
  std::vector<int> xs = level;
  while (level.size() > 1) {
    std::vector<int> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back(b.Node(i % 4 ? "Mul" : "Add", {level[i], level[i + 1]}));
    level = next;
  }
  b.g.outputs = {b.Node("Tanh", {level[0]})};
  auto on = Optimized(b.g, true);
  ASSERT_EQ(on->nodes.size(), 1u);
  const EwProgram p = EwProgram::FromAttrs(on->nodes[0].attrs, on->nodes[0].inputs.size(), "test");
  EXPECT_LE(p.num_registers, 6);
  std::mt19937 rng(11);
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < xs.size(); ++i) feeds.push_back(RandomTensor(DType::kFloat32, Shape{33}, rng));
  ExpectClose(RunGraph(on, feeds)[0], RunGraph(Optimized(b.g, false), feeds)[0], 1e-6, "tree");
}

// CUDA sessions' pass order (no device needed to optimize): the bench transformer's attention
// spelling becomes FusedAttention (its scale Div is not taken into an elementwise chain first), and
// the residual + activation chain after it fuses.
TEST(FusedElementwise, CudaOrderFusesAttentionBeforeElementwise) {
  GraphBuilder b;
  const TensorType t = TensorType::Of(DType::kFloat32, Shape{2, 4, 16, 8});
  const int q = b.Input("q", t), k = b.Input("k", t), v = b.Input("v", t), r = b.Input("r", t);
  const int kt = b.Node("Transpose", {k}, [] { AttrMap a; a.set("perm", Attribute::Ints({0, 1, 3, 2})); return a; }());
  const int scores = b.Node("Div", {b.Node("MatMul", {q, kt}), b.Const("scale", Tensor::Scalar(DType::kFloat32, std::sqrt(8.0)))});
  const int probs = b.Node("Softmax", {scores}, [] { AttrMap a; a.set("axis", Attribute::Int(-1)); return a; }());
  const int ctx = b.Node("MatMul", {probs, v});
  b.g.outputs = {b.Node("Relu", {b.Node("Add", {ctx, r})})};
  auto cuda = Optimized(b.g, /*fuse=*/true, DeviceType::kCuda);  // what a CUDA session runs
  EXPECT_EQ(CountOps(*cuda, "FusedAttention"), 1);
  EXPECT_EQ(CountOps(*cuda, "FusedElementwise"), 1);
  EXPECT_EQ(CountOps(*cuda, "Softmax") + CountOps(*cuda, "Div") + CountOps(*cuda, "Relu"), 0);
  // The CUDA-optimized graph still runs on the CPU kernels (the fallback path) and agrees.
  std::mt19937 rng(13);
  std::vector<Tensor> feeds;
  for (int i = 0; i < 4; ++i) feeds.push_back(RandomTensor(DType::kFloat32, Shape{2, 4, 16, 8}, rng));
  ExpectClose(RunGraph(cuda, feeds)[0], RunGraph(Optimized(b.g, false), feeds)[0], 1e-5, "attention + residual");
}

}  // namespace
}  // namespace oneflow
