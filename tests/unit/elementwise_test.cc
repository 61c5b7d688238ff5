// Elementwise kernels: broadcast fast paths and the parallel path against naive reference loops,
// integer edge cases, and ApplyActivation (fast float math is in fast_math_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "base/error.h"
#include "graph/infer_util.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

// Runs the registered CPU kernel of `op` directly on `inputs` (nullptr = omitted optional input).
Tensor RunOp(const std::string& op, const std::vector<const Tensor*>& inputs, DType out_dtype, const Shape& out_shape,
             ThreadPool& pool, AttrMap attrs = {}) {
  Graph g;
  Node node;
  node.op_type = op;
  node.opset = 20;
  node.attrs = std::move(attrs);
  const KernelDef* def = KernelRegistry::Global().Find("", op, DeviceType::kCpu);
  EXPECT_NE(def, nullptr) << op;
  std::unique_ptr<OpKernel> kernel = def->factory(KernelInitContext(g, node));
  KernelContext ctx(node, pool);
  for (const Tensor* t : inputs) ctx.inputs().push_back(t);
  Tensor out = Tensor::Uninitialized(out_dtype, out_shape);
  ctx.outputs().push_back(&out);
  kernel->Compute(ctx);
  return out;
}

Tensor RandomFloat(const Shape& shape, std::mt19937& rng, float lo = -3.0f, float hi = 3.0f) {
  Tensor t(DType::kFloat32, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Offset into `in` (broadcast to `out`) of the output element with flat index `flat`.
int64_t BroadcastOffset(const Shape& in, const Shape& out, int64_t flat) {
  int64_t off = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t idx = flat % out[d];
    flat /= out[d];
    size_t k = d + in.size();
    if (k < out.size()) continue;  // leading dims absent from `in`
    int64_t dim = in[k - out.size()];
    if (dim != 1) off += idx * stride;
    stride *= dim;
  }
  return off;
}

struct BinaryCase {
  Shape a, b;
};

class BroadcastTest : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BroadcastTest, MatchesNaiveLoopSingleAndMultiThreaded) {
  const BinaryCase& c = GetParam();
  std::mt19937 rng(42);
  Tensor a = RandomFloat(c.a, rng), b = RandomFloat(c.b, rng, 0.5f, 2.0f);
  Shape out_shape = BroadcastShapes(c.a, c.b);
  ThreadPool one(1), two(2);
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    Tensor r1 = RunOp(op, {&a, &b}, DType::kFloat32, out_shape, one);
    Tensor r2 = RunOp(op, {&a, &b}, DType::kFloat32, out_shape, two);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    int64_t bad = 0;
    for (int64_t i = 0; i < r1.numel(); ++i) {
      float x = pa[BroadcastOffset(c.a, out_shape, i)], y = pb[BroadcastOffset(c.b, out_shape, i)];
      float want = op[0] == 'A' ? x + y : op[0] == 'S' ? x - y : op[0] == 'M' ? x * y : x / y;
      bad += r1.data<float>()[i] != want || r2.data<float>()[i] != want;
    }
    EXPECT_EQ(bad, 0) << op << " " << ShapeToString(c.a) << " vs " << ShapeToString(c.b);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BroadcastTest,
    ::testing::Values(BinaryCase{{301, 517}, {301, 517}},          // same shape: flat loop
                      BinaryCase{{}, {257, 311}},                  // scalar on the left
                      BinaryCase{{257, 311}, {1}},                 // scalar on the right
                      BinaryCase{{64, 33, 129}, {129}},            // row broadcast [B,S,D] + [D]
                      BinaryCase{{1000, 96}, {96}},                // [N,C] + [C]
                      BinaryCase{{64, 33, 1}, {64, 33, 129}},      // column broadcast on the left
                      BinaryCase{{8, 16, 30, 30}, {16, 1, 1}},     // per-channel bias
                      BinaryCase{{7, 1, 5, 90}, {1, 60, 5, 1}},    // both sides broadcast
                      BinaryCase{{300, 1}, {1, 400}},              // outer product
                      BinaryCase{{2, 3, 1, 4, 1}, {3, 5, 1, 7}},   // mixed
                      BinaryCase{{0, 5}, {5}}));                   // empty

TEST(Elementwise, VariadicMaxAndMeanBroadcast) {
  std::mt19937 rng(7);
  Tensor a = RandomFloat({40, 1, 70}, rng), b = RandomFloat({50, 1}, rng), c = RandomFloat({70}, rng);
  Shape out{40, 50, 70};
  ThreadPool two(2);
  Tensor mx = RunOp("Max", {&a, &b, &c}, DType::kFloat32, out, two);
  Tensor mean = RunOp("Mean", {&a, &b, &c}, DType::kFloat32, out, two);
  for (int64_t i = 0; i < mx.numel(); ++i) {
    float x = a.data<float>()[BroadcastOffset(a.shape(), out, i)];
    float y = b.data<float>()[BroadcastOffset(b.shape(), out, i)];
    float z = c.data<float>()[BroadcastOffset(c.shape(), out, i)];
    ASSERT_EQ(mx.data<float>()[i], std::max({x, y, z})) << i;
    ASSERT_NEAR(mean.data<float>()[i], (x + y + z) / 3.0f, 1e-6f) << i;
  }
}

TEST(Elementwise, WhereBroadcast) {
  std::mt19937 rng(3);
  Tensor cond(DType::kBool, {60, 1, 80});
  for (int64_t i = 0; i < cond.numel(); ++i) cond.data<bool>()[i] = rng() & 1;
  Tensor x = RandomFloat({90, 80}, rng), y = RandomFloat({1}, rng);
  Shape out{60, 90, 80};
  ThreadPool two(2);
  Tensor r = RunOp("Where", {&cond, &x, &y}, DType::kFloat32, out, two);
  for (int64_t i = 0; i < r.numel(); ++i) {
    bool c = cond.data<bool>()[BroadcastOffset(cond.shape(), out, i)];
    float want = c ? x.data<float>()[BroadcastOffset(x.shape(), out, i)] : y.data<float>()[0];
    ASSERT_EQ(r.data<float>()[i], want) << i;
  }
}

TEST(Elementwise, IntegerDivisionByZeroIsZero) {
  // numpy's answer (7 // 0 == 0, np.remainder(7, 0) == 0); tests/python/test_integer_edges.py has
  // every integer type and edge.
  ThreadPool one(1);
  Tensor a(DType::kInt32, {3}), b(DType::kInt32, {3});
  for (int i = 0; i < 3; ++i) {
    a.data<int32_t>()[i] = 7 * (i + 1);
    b.data<int32_t>()[i] = i == 1 ? 0 : 2;
  }
  for (const char* op : {"Div", "Mod"}) {
    AttrMap attrs;
    attrs.set("fmod", Attribute::Int(0));
    Tensor r = RunOp(op, {&a, &b}, DType::kInt32, {3}, one, attrs);
    EXPECT_EQ(r.data<int32_t>()[1], 0) << op;
  }
  // INT_MIN / -1 wraps instead of trapping.
  a.data<int32_t>()[0] = INT32_MIN;
  b.data<int32_t>()[0] = -1;
  b.data<int32_t>()[1] = 3;
  Tensor q = RunOp("Div", {&a, &b}, DType::kInt32, {3}, one);
  EXPECT_EQ(q.data<int32_t>()[0], INT32_MIN);
  EXPECT_EQ(q.data<int32_t>()[1], 14 / 3);
}

TEST(Elementwise, UnaryParallelMatchesSerial) {
  std::mt19937 rng(11);
  Tensor x = RandomFloat({1 << 18}, rng, -10.0f, 10.0f);
  ThreadPool one(1), two(2);
  for (const char* op : {"Exp", "Tanh", "Sigmoid", "Erf", "Relu", "Abs"}) {
    Tensor r1 = RunOp(op, {&x}, DType::kFloat32, x.shape(), one);
    Tensor r2 = RunOp(op, {&x}, DType::kFloat32, x.shape(), two);
    EXPECT_EQ(std::memcmp(r1.raw(), r2.raw(), r1.nbytes()), 0) << op;
  }
}

TEST(ApplyActivation, MatchesReference) {
  std::vector<float> xs;
  for (float x = -8.0f; x <= 8.0f; x += 0.0173f) xs.push_back(x);
  struct Case {
    ActivationParams p;
    double (*ref)(double, const ActivationParams&);
  };
  std::vector<Case> cases = {
      {{Activation::kRelu}, [](double x, const ActivationParams&) { return std::max(x, 0.0); }},
      {{Activation::kLeakyRelu, {0.1f}}, [](double x, const ActivationParams& p) { return x < 0 ? p.params[0] * x : x; }},
      {{Activation::kSigmoid}, [](double x, const ActivationParams&) { return 1.0 / (1.0 + std::exp(-x)); }},
      {{Activation::kTanh}, [](double x, const ActivationParams&) { return std::tanh(x); }},
      {{Activation::kGelu}, [](double x, const ActivationParams&) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }},
      {{Activation::kGelu, {1.0f}}, [](double x, const ActivationParams&) {  // approximate="tanh"
         return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
       }},
      {{Activation::kHardSigmoid, {0.2f, 0.5f}},
       [](double x, const ActivationParams& p) { return std::clamp(p.params[0] * x + p.params[1], 0.0, 1.0); }},
      {{Activation::kHardSwish}, [](double x, const ActivationParams&) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
      {{Activation::kClip, {-1.5f, 2.5f}},
       [](double x, const ActivationParams& p) { return std::clamp(x, double(p.params[0]), double(p.params[1])); }},
  };
  for (const Case& c : cases) {
    std::vector<float> y = xs;
    ApplyActivation(c.p, y.data(), static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      double want = c.ref(xs[i], c.p);
      ASSERT_NEAR(y[i], want, 2e-6 * std::fabs(want) + 2e-7) << "kind " << static_cast<int>(c.p.kind) << " x=" << xs[i];
    }
  }
  std::vector<float> unchanged = xs;
  ApplyActivation(ActivationParams{}, unchanged.data(), static_cast<int64_t>(unchanged.size()));
  EXPECT_EQ(unchanged, xs);
}

TEST(Elementwise, PowScalarExponentsMatchStdPow) {
  std::mt19937 rng(5);
  Tensor x = RandomFloat({70000}, rng, 0.0f, 4.0f);
  x.data<float>()[0] = -0.0f;
  x.data<float>()[1] = -std::numeric_limits<float>::infinity();
  ThreadPool two(2);
  for (float e : {2.0f, 3.0f, 1.0f, 0.5f, -1.0f, 1.7f}) {
    Tensor ex = Tensor::Scalar(DType::kFloat32, e);
    Tensor r = RunOp("Pow", {&x, &ex}, DType::kFloat32, x.shape(), two);
    for (int64_t i = 0; i < x.numel(); ++i) {
      float want = std::pow(x.data<float>()[i], e);
      float got = r.data<float>()[i];
      if (std::isinf(want)) {
        ASSERT_EQ(got, want) << e;
      } else {
        ASSERT_NEAR(got, want, 1e-6f * std::fabs(want)) << "x=" << x.data<float>()[i] << " e=" << e;
      }
      if (want == 0.0f) {
        ASSERT_EQ(std::signbit(got), std::signbit(want)) << e;
      }
    }
  }
}

TEST(Elementwise, CastConversions) {
  ThreadPool one(1);
  Tensor x(DType::kFloat32, {6});
  float xv[] = {-1.75f, -0.0f, 0.5f, 2.5f, 300.9f, 65519.0f};
  std::memcpy(x.raw(), xv, sizeof(xv));
  AttrMap to_i32, to_bool, to_f16;
  to_i32.set("to", Attribute::Int(static_cast<int64_t>(DType::kInt32)));
  to_bool.set("to", Attribute::Int(static_cast<int64_t>(DType::kBool)));
  to_f16.set("to", Attribute::Int(static_cast<int64_t>(DType::kFloat16)));
  Tensor i = RunOp("Cast", {&x}, DType::kInt32, {6}, one, to_i32);
  Tensor b = RunOp("Cast", {&x}, DType::kBool, {6}, one, to_bool);
  Tensor h = RunOp("Cast", {&x}, DType::kFloat16, {6}, one, to_f16);
  int32_t want_i[] = {-1, 0, 0, 2, 300, 65519};
  bool want_b[] = {true, false, true, true, true, true};
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(i.data<int32_t>()[k], want_i[k]) << k;  // truncation toward zero
    EXPECT_EQ(b.data<bool>()[k], want_b[k]) << k;
    EXPECT_EQ(static_cast<float>(h.data<Float16>()[k]), static_cast<float>(Float16(xv[k]))) << k;
  }
  EXPECT_EQ(static_cast<float>(h.data<Float16>()[5]), 65504.0f);  // rounds to the largest finite half
}

TEST(Elementwise, CastNonFiniteToIntegerIsDefined) {
  // NaN, infinities and out-of-range values have no integer value; we saturate (NaN -> 0, beyond
  // either end -> that end) rather than hit undefined behaviour.
  ThreadPool one(1);
  Tensor x(DType::kFloat32, {5});
  float xv[] = {NAN, INFINITY, -INFINITY, 1e30f, -3.5f};
  std::memcpy(x.raw(), xv, sizeof(xv));
  AttrMap to_i64, to_i32;
  to_i64.set("to", Attribute::Int(static_cast<int64_t>(DType::kInt64)));
  to_i32.set("to", Attribute::Int(static_cast<int64_t>(DType::kInt32)));
  Tensor l = RunOp("Cast", {&x}, DType::kInt64, {5}, one, to_i64);
  Tensor i = RunOp("Cast", {&x}, DType::kInt32, {5}, one, to_i32);
  const int64_t want_l[] = {0, INT64_MAX, INT64_MIN, INT64_MAX};
  const int32_t want_i[] = {0, INT32_MAX, INT32_MIN, INT32_MAX};
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(l.data<int64_t>()[k], want_l[k]) << k;
    EXPECT_EQ(i.data<int32_t>()[k], want_i[k]) << k;
  }
  EXPECT_EQ(l.data<int64_t>()[4], -3);
  EXPECT_EQ(i.data<int32_t>()[4], -3);
}

// The fused ops' activation attributes name a unary row and list its parameters; absent ones take
// the row's defaults, and a name that is no row is a model error.
TEST(ApplyActivation, FromFusedAttributes) {
  ActivationParams p = ActivationFromAttrs("LeakyRelu", {0.3f});
  EXPECT_EQ(p.kind, Activation::kLeakyRelu);
  EXPECT_EQ(p.params[0], 0.3f);
  p = ActivationFromAttrs("HardSigmoid", {});
  EXPECT_EQ(p.kind, Activation::kHardSigmoid);
  EXPECT_EQ(p.params[0], 0.2f);
  EXPECT_EQ(p.params[1], 0.5f);
  EXPECT_EQ(ActivationFromAttrs("None", {}).kind, Activation::kNone);
  EXPECT_EQ(ActivationFromAttrs("", {}).kind, Activation::kNone);
  EXPECT_STREQ(ActivationName(Activation::kHardSwish), "HardSwish");
  try {
    ActivationFromAttrs("Softmax", {});
    ADD_FAILURE() << "Softmax is no unary row";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("Softmax"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ActivationFromAttrs("LeakyRelu", {0.1f, 0.2f, 0.3f}), Error);
}

// A row's parameters from node attributes: defaults, floats, and a string parameter by position.
TEST(UnaryRows, ReadParams) {
  float p[unary::kMaxParams];
  const UnaryOpInfo* gelu = FindUnaryOp("", "Gelu");
  ASSERT_NE(gelu, nullptr);
  AttrMap tanh_gelu;
  tanh_gelu.set("approximate", Attribute::String("tanh"));
  ReadUnaryParams(*gelu, tanh_gelu, p, "test");
  EXPECT_EQ(p[0], 1.0f);
  ReadUnaryParams(*gelu, AttrMap{}, p, "test");
  EXPECT_EQ(p[0], 0.0f);
  AttrMap bad;
  bad.set("approximate", Attribute::String("erf"));
  EXPECT_THROW(ReadUnaryParams(*gelu, bad, p, "test"), Error);
  const UnaryOpInfo* selu = FindUnaryOp("", "Selu");
  ASSERT_NE(selu, nullptr);
  AttrMap gamma;
  gamma.set("gamma", Attribute::Float(2.0f));
  ReadUnaryParams(*selu, gamma, p, "test");
  EXPECT_FLOAT_EQ(p[0], 1.67326319217681884765625f);
  EXPECT_EQ(p[1], 2.0f);
  EXPECT_EQ(FindUnaryOp("", "QuickGelu"), nullptr);  // a com.microsoft op
  EXPECT_NE(FindUnaryOp("com.microsoft", "QuickGelu"), nullptr);
  EXPECT_EQ(FindUnaryOp("", "Softmax"), nullptr);
}

TEST(Elementwise, BitShiftEdgeCases) {
  ThreadPool one(1);
  Tensor x(DType::kInt8, {4}), s(DType::kInt8, {4});
  int8_t xv[] = {-8, 64, -1, 5}, sv[] = {1, 1, 8, -1};
  std::memcpy(x.raw(), xv, 4);
  std::memcpy(s.raw(), sv, 4);
  AttrMap left, right;
  left.set("direction", Attribute::String("LEFT"));
  right.set("direction", Attribute::String("RIGHT"));
  Tensor l = RunOp("BitShift", {&x, &s}, DType::kInt8, {4}, one, left);
  Tensor r = RunOp("BitShift", {&x, &s}, DType::kInt8, {4}, one, right);
  EXPECT_EQ(l.data<int8_t>()[0], -16);
  EXPECT_EQ(l.data<int8_t>()[1], -128);  // wraps
  EXPECT_EQ(l.data<int8_t>()[2], 0);     // shift >= width
  EXPECT_EQ(l.data<int8_t>()[3], 0);     // negative shift
  EXPECT_EQ(r.data<int8_t>()[0], -4);    // arithmetic
  EXPECT_EQ(r.data<int8_t>()[2], -1);    // sign fill
  EXPECT_EQ(r.data<int8_t>()[3], 0);
}

}  // namespace
}  // namespace oneflow
