// QDQ fusion (passes/qdq_fusion.cc): the DequantizeLinear -> op -> QuantizeLinear groups of a
// QDQ model become integer ops, quantize_dynamic's MatMul spelling becomes DynamicQuantizeMatMul,
// and the rewritten graph computes what the float spelling computes (within one quantization
// step where one rounding replaces two; bit for bit for the dynamic MatMul, whose arithmetic is
// the same). What does not qualify is left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "../graph_builder.h"
#include "engine/session.h"

namespace oneflow {
namespace {

int CountOps(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

template <typename T>
Tensor Filled(DType dtype, Shape shape, T (*value)(int64_t)) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = value(i);
  return t;
}

Tensor ScalarF(float v) {
  Tensor t(DType::kFloat32, Shape{});
  t.data<float>()[0] = v;
  return t;
}

Tensor ScalarU8(uint8_t v) {
  Tensor t(DType::kUInt8, Shape{});
  t.data<uint8_t>()[0] = v;
  return t;
}

// uint8 x -> DQ; int8 per-channel weights -> DQ; int32 bias -> DQ; Conv (pads 1) -> Relu-free Q;
// then DQ -> MaxPool -> Q (one scale); DQ + a float Slice -> Add -> Q, which does not qualify.
struct QdqConv {
  test_util::GraphBuilder b;
  int out = kNoValue;
};

QdqConv BuildQdqConv() {
  QdqConv q;
  auto& b = q.b;
  const int64_t C = 3, M = 4;
  const int x = b.Input("X", DType::kUInt8, {1, C, 6, 6});
  Tensor w = Filled<int8_t>(DType::kInt8, {M, C, 3, 3}, [](int64_t i) { return static_cast<int8_t>((i * 37) % 255 - 127); });
  Tensor ws = Filled<float>(DType::kFloat32, {M}, [](int64_t i) { return 0.002f + 0.001f * static_cast<float>(i); });
  Tensor bias = Filled<int32_t>(DType::kInt32, {M}, [](int64_t i) { return static_cast<int32_t>(i * 300 - 500); });
  Tensor bs = Filled<float>(DType::kFloat32, {M}, [](int64_t i) { return 0.04f * (0.002f + 0.001f * static_cast<float>(i)); });
  const int xs = b.Const("xs", ScalarF(0.04f)), xz = b.Const("xz", ScalarU8(120));
  const int ys = b.Const("ys", ScalarF(0.05f)), yz = b.Const("yz", ScalarU8(100));
  AttrMap axis0;
  axis0.set("axis", Attribute::Int(0));
  const int dx = b.Node("DequantizeLinear", {x, xs, xz});
  const int dw = b.Node("DequantizeLinear", {b.Const("w", w), b.Const("ws", ws)}, axis0);
  const int db = b.Node("DequantizeLinear", {b.Const("b", bias), b.Const("bs", bs)}, axis0);
  AttrMap pads;
  pads.set("pads", Attribute::Ints({1, 1, 1, 1}));
  const int qc = b.Node("QuantizeLinear", {b.Node("Conv", {dx, dw, db}, pads), ys, yz});
  AttrMap pool;
  pool.set("kernel_shape", Attribute::Ints({2, 2}));
  pool.set("strides", Attribute::Ints({1, 1}));
  const int qp = b.Node("QuantizeLinear", {b.Node("MaxPool", {b.Node("DequantizeLinear", {qc, ys, yz})}, pool), ys, yz});
  // The residual: the conv output cropped to the pooled size.
  const int sliced = b.Node("Slice", {b.Node("DequantizeLinear", {qc, ys, yz}),
                                      b.Const(Filled<int64_t>(DType::kInt64, {2}, [](int64_t) -> int64_t { return 0; })),
                                      b.Const(Filled<int64_t>(DType::kInt64, {2}, [](int64_t) -> int64_t { return 5; })),
                                      b.Const(Filled<int64_t>(DType::kInt64, {2}, [](int64_t i) -> int64_t { return i + 2; }))});
  q.out = b.Node("QuantizeLinear", {b.Node("Add", {b.Node("DequantizeLinear", {qp, ys, yz}), sliced}), ys, yz});
  return q;
}

Tensor Image() {
  return Filled<uint8_t>(DType::kUInt8, {1, 3, 6, 6}, [](int64_t i) { return static_cast<uint8_t>((i * 53 + 11) % 256); });
}

TEST(QdqFusion, ConvAndMaxPoolBecomeIntegerOpsAndAgreeWithTheFloatSpelling) {
  QdqConv q = BuildQdqConv();
  Graph& g = q.b.Done(q.out);
  Session fused(g, SessionOptions{1, 2});
  const Graph& opt = fused.optimized();
  EXPECT_EQ(CountOps(opt, "QLinearConv"), 1);
  EXPECT_EQ(CountOps(opt, "Conv"), 0);
  EXPECT_EQ(CountOps(opt, "MaxPool"), 1);  // on the uint8 tensor: its DQ/Q pair is gone
  // The residual Add reads a Slice of a DQ (not a DQ itself), so it stays float: one group left.
  EXPECT_EQ(CountOps(opt, "QLinearAdd"), 0);
  Session unfused(g, SessionOptions{1, 1});
  EXPECT_EQ(CountOps(unfused.optimized(), "QLinearConv"), 0);
  const Tensor a = fused.Run({{"X", Image()}}, {})[0].second;
  const Tensor b = unfused.Run({{"X", Image()}}, {})[0].second;
  ASSERT_EQ(a.shape(), b.shape());
  int differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const int d = std::abs(static_cast<int>(a.data<uint8_t>()[i]) - static_cast<int>(b.data<uint8_t>()[i]));
    EXPECT_LE(d, 1) << i;
    differ += d != 0;
  }
  EXPECT_LE(differ, a.numel() / 10);  // one rounding instead of two moves only values near a tie
}

// quantize_dynamic's MatMul: DynamicQuantizeLinear, Mul(scales), MatMulInteger, Cast, Mul.
TEST(QdqFusion, DynamicallyQuantizedMatMulBecomesOneKernelWithTheSameBits) {
  test_util::GraphBuilder b;
  const int x = b.Input("X", DType::kFloat32, {5, 16});
  Tensor w = Filled<int8_t>(DType::kInt8, {16, 8}, [](int64_t i) { return static_cast<int8_t>((i * 29) % 255 - 127); });
  Tensor ws = Filled<float>(DType::kFloat32, {8}, [](int64_t i) { return 0.01f + 0.002f * static_cast<float>(i); });
  const int dql = b.Op("DynamicQuantizeLinear", {x}, "xq");
  Node& d = b.g.nodes.back();
  const int xs = b.g.AddValue("xs"), xz = b.g.AddValue("xz");
  d.outputs = {dql, xs, xz};
  const int scale = b.Node("Mul", {xs, b.Const("ws", ws)});
  AttrMap to_float;
  to_float.set("to", Attribute::Int(static_cast<int64_t>(DType::kFloat32)));
  const int acc = b.Node("MatMulInteger", {dql, b.Const("w", w), xz, b.Const("wz", Tensor(DType::kInt8, Shape{8}))});
  const int y = b.Node("Mul", {b.Node("Cast", {acc}, to_float), scale});
  Graph& g = b.Done(y);
  Session fused(g, SessionOptions{1, 2}), unfused(g, SessionOptions{1, 1});
  EXPECT_EQ(CountOps(fused.optimized(), "DynamicQuantizeMatMul"), 1);
  EXPECT_EQ(CountOps(fused.optimized(), "MatMulInteger") + CountOps(fused.optimized(), "DynamicQuantizeLinear"), 0);
  Tensor xt = Filled<float>(DType::kFloat32, {5, 16}, [](int64_t i) { return static_cast<float>(std::sin(0.7 * double(i)) * 3.0); });
  const Tensor a = fused.Run({{"X", xt}}, {})[0].second;
  const Tensor c = unfused.Run({{"X", xt}}, {})[0].second;
  ASSERT_EQ(a.shape(), c.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], c.data<float>()[i]) << i;
}

// A Q whose output is also a graph output, a blocked DQ, or a DQ read by two convs where the
// second conv's output feeds no Q: only what qualifies is rewritten.
TEST(QdqFusion, GroupsThatDoNotQualifyAreLeftAlone) {
  test_util::GraphBuilder b;
  const int x = b.Input("X", DType::kUInt8, {1, 3, 6, 6});
  Tensor w = Filled<int8_t>(DType::kInt8, {4, 3, 3, 3}, [](int64_t i) { return static_cast<int8_t>(i % 7 - 3); });
  const int dx = b.Node("DequantizeLinear", {x, b.Const("xs", ScalarF(0.1f)), b.Const("xz", ScalarU8(128))});
  const int dw = b.Node("DequantizeLinear", {b.Const("w", w), b.Const("ws", ScalarF(0.01f))});
  const int plain = b.Node("Conv", {dx, dw});  // no Q after it: stays a float Conv
  const int fused = b.Node("QuantizeLinear", {b.Node("Conv", {dx, dw}), b.Const("ys", ScalarF(0.2f)), b.Const("yz", ScalarU8(0))});
  b.g.outputs.push_back(plain);
  Graph& g = b.Done(fused);
  Session s(g, SessionOptions{1, 2});
  EXPECT_EQ(CountOps(s.optimized(), "QLinearConv"), 1);
  EXPECT_GE(CountOps(s.optimized(), "Conv") + CountOps(s.optimized(), "FusedConv"), 1);
  const auto out = s.Run({{"X", Image()}}, {});
  EXPECT_EQ(out.size(), 2u);
}

}  // namespace
}  // namespace oneflow
