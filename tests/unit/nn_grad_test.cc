// nn gradient kernels (ai.oneflow ConvGradData/Filter/Bias, ConvTransposeGrad*, pool grads, Softmax/
// LogSoftmax grads, Layer/Batch/InstanceNormalization grads) against central finite differences of
// the forward kernels in f64, multi-threaded; the f32 kernels against the f64 ones on larger shapes;
// BatchNormalization's training-mode forward against naive loops.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <random>

#include "../run_node.h"
#include "kernels/node_runner.h"
#include "engine/session.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

// One node through the executor's path (tests/run_node.h), on `threads` threads.
std::vector<Tensor> RunNode(const std::string& op, const std::string& domain, const std::vector<Tensor>& inputs,
                            const AttrMap& attrs, size_t num_outputs, int threads = 3) {
  ThreadPool pool(threads);
  return test_util::RunNode({op, domain, domain.empty() ? 17 : kOneflowDomainVersion, attrs, inputs, num_outputs}, pool);
}

Tensor Random(const Shape& s, std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor t(DType::kFloat64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d(rng);
  return t;
}

Tensor ShapeOf(const Tensor& t) {
  Tensor s(DType::kInt64, {static_cast<int64_t>(t.rank())});
  for (int64_t i = 0; i < t.rank(); ++i) s.data<int64_t>()[i] = t.dim(i);
  return s;
}

Tensor ToF32(const Tensor& t) {
  if (t.dtype() != DType::kFloat64) return t;
  Tensor f(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = static_cast<float>(t.data<double>()[i]);
  return f;
}

// The forward op and its upstream weights: loss(inputs) = sum_k sum(Y_k * R_k) over outputs k.
struct Forward {
  std::string op;
  AttrMap attrs;
  std::vector<Tensor> inputs;    // f64
  std::vector<Tensor> upstream;  // R_k per output used (one per output of interest)

  double Loss(const std::vector<Tensor>& in) const {
    std::vector<Tensor> ys = RunNode(op, "", in, attrs, upstream.size());
    double l = 0;
    for (size_t k = 0; k < upstream.size(); ++k) {
      EXPECT_EQ(ys[k].shape(), upstream[k].shape());
      for (int64_t i = 0; i < ys[k].numel(); ++i) l += ys[k].data<double>()[i] * upstream[k].data<double>()[i];
    }
    return l;
  }

  // Output shapes of the forward, for sizing the upstream gradients.
  std::vector<Shape> OutputShapes(size_t n) const {
    std::vector<Shape> s;
    for (const Tensor& y : RunNode(op, "", inputs, attrs, n)) s.push_back(y.shape());
    return s;
  }
};

// Checks `grad` (d loss / d input `which`) against central differences on up to `samples`
// elements (all when the input is small).
void CheckFd(const Forward& f, size_t which, const Tensor& grad, const std::string& what, int samples = 40,
             double h = 1e-5, double tol = 2e-6) {
  const Tensor& x = f.inputs[which];
  ASSERT_EQ(grad.dtype(), DType::kFloat64) << what;
  ASSERT_EQ(grad.shape(), x.shape()) << what;
  std::mt19937 rng(7 + static_cast<unsigned>(which));
  std::vector<int64_t> idx;
  if (x.numel() <= samples) {
    for (int64_t i = 0; i < x.numel(); ++i) idx.push_back(i);
  } else {
    std::uniform_int_distribution<int64_t> d(0, x.numel() - 1);
    for (int i = 0; i < samples; ++i) idx.push_back(d(rng));
  }
  int bad = 0;
  for (int64_t i : idx) {
    std::vector<Tensor> in = f.inputs;
    in[which] = Tensor(DType::kFloat64, x.shape());
    std::copy(x.data<double>(), x.data<double>() + x.numel(), in[which].data<double>());
    double* p = in[which].data<double>();
    const double x0 = p[i];
    p[i] = x0 + h;
    const double lp = f.Loss(in);
    p[i] = x0 - h;
    const double lm = f.Loss(in);
    const double fd = (lp - lm) / (2 * h), got = grad.data<double>()[i];
    if (!(std::fabs(fd - got) <= tol * (1.0 + std::fabs(fd))) && ++bad <= 3)
      ADD_FAILURE() << what << ": element " << i << " analytic " << got << " finite difference " << fd;
  }
  EXPECT_EQ(bad, 0) << what << " (" << idx.size() << " elements checked)";
}

// The f32 kernel on the same data, compared with the f64 kernel (validated by finite differences).
void CheckF32(const std::string& op, const std::vector<Tensor>& inputs64, const AttrMap& attrs, size_t outputs,
              double tol, const std::string& what) {
  std::vector<Tensor> in32;
  for (const Tensor& t : inputs64) in32.push_back(ToF32(t));
  std::vector<Tensor> want = RunNode(op, kOneflowDomain, inputs64, attrs, outputs, 1);
  std::vector<Tensor> got = RunNode(op, kOneflowDomain, in32, attrs, outputs, 4);
  for (size_t k = 0; k < outputs; ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape()) << what;
    double scale = 0;
    for (int64_t i = 0; i < want[k].numel(); ++i) scale = std::max(scale, std::fabs(want[k].data<double>()[i]));
    int bad = 0;
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      const double g = got[k].data<float>()[i], w = want[k].data<double>()[i];
      if (!(std::fabs(g - w) <= tol * (1.0 + scale)) && ++bad <= 3)
        ADD_FAILURE() << what << " output " << k << " element " << i << ": f32 " << g << " f64 " << w;
    }
    EXPECT_EQ(bad, 0) << what << " output " << k;
  }
}

AttrMap Attrs(std::initializer_list<std::pair<const char*, Attribute>> kv) {
  AttrMap a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

// ---- Conv ------------------------------------------------------------------------------------

struct ConvCase {
  Shape x, w;
  AttrMap attrs;
  bool bias = true;
};

std::vector<ConvCase> ConvCases() {
  using A = Attribute;
  return {
      {{2, 4, 9}, {6, 4, 3}, Attrs({{"strides", A::Ints({2})}, {"pads", A::Ints({1, 2})}})},
      {{2, 4, 7, 8},
       {6, 2, 3, 2},
       Attrs({{"group", A::Int(2)},
              {"strides", A::Ints({2, 1})},
              {"dilations", A::Ints({1, 2})},
              {"pads", A::Ints({1, 0, 2, 1})}})},
      {{1, 3, 6, 5}, {4, 3, 3, 3}, Attrs({{"auto_pad", A::String("SAME_UPPER")}, {"strides", A::Ints({2, 2})}})},
      {{2, 4, 6, 6}, {4, 1, 3, 3}, Attrs({{"group", A::Int(4)}, {"pads", A::Ints({1, 1, 1, 1})}})},  // depthwise
      {{1, 3, 7, 8},
       {3, 1, 3, 2},
       Attrs({{"group", A::Int(3)},
              {"strides", A::Ints({2, 3})},
              {"dilations", A::Ints({1, 2})},
              {"pads", A::Ints({1, 0, 0, 1})}})},  // strided, dilated depthwise
      {{1, 2, 4, 5, 4},
       {3, 2, 2, 3, 2},
       Attrs({{"strides", A::Ints({1, 2, 1})}, {"pads", A::Ints({0, 1, 1, 1, 0, 0})}})},
      {{3, 5, 5, 5}, {2, 5, 1, 1}, Attrs({})},  // pointwise
      // stride 1 with >= 32 input channels per group: the data gradient runs as a convolution
      {{1, 64, 5, 4},
       {4, 32, 3, 2},
       Attrs({{"group", A::Int(2)}, {"dilations", A::Ints({2, 1})}, {"pads", A::Ints({2, 0, 1, 3})}})},
  };
}

TEST(ConvGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(1);
  for (const ConvCase& c : ConvCases()) {
    const std::string what = "Conv X " + ShapeToString(c.x) + " W " + ShapeToString(c.w);
    Forward f{"Conv", c.attrs, {Random(c.x, rng), Random(c.w, rng), Random({c.w[0]}, rng)}, {}};
    f.upstream = {Random(f.OutputShapes(1)[0], rng)};
    const Tensor& r = f.upstream[0];
    Tensor dx = RunNode("ConvGradData", kOneflowDomain, {r, f.inputs[1], ShapeOf(f.inputs[0])}, c.attrs, 1)[0];
    Tensor dw = RunNode("ConvGradFilter", kOneflowDomain, {f.inputs[0], r, ShapeOf(f.inputs[1])}, c.attrs, 1)[0];
    Tensor db = RunNode("ConvGradBias", kOneflowDomain, {r}, {}, 1)[0];
    CheckFd(f, 0, dx, what + " dX");
    CheckFd(f, 1, dw, what + " dW");
    CheckFd(f, 2, db, what + " dB");
  }
}

struct ConvTCase {
  Shape x, w;
  AttrMap attrs;
};

TEST(ConvTransposeGrad, MatchesFiniteDifferences) {
  using A = Attribute;
  const ConvTCase cases[] = {
      {{2, 4, 5},
       {4, 3, 3},
       Attrs({{"strides", A::Ints({2})}, {"pads", A::Ints({1, 0})}, {"output_padding", A::Ints({1})}})},
      {{1, 4, 3, 4},
       {4, 2, 3, 2},
       Attrs({{"group", A::Int(2)},
              {"strides", A::Ints({2, 3})},
              {"dilations", A::Ints({2, 1})},
              {"pads", A::Ints({1, 0, 0, 1})}})},
      {{2, 3, 3, 3}, {3, 2, 3, 3}, Attrs({{"auto_pad", A::String("SAME_LOWER")}, {"strides", A::Ints({2, 2})}})},
      {{1, 2, 3, 3}, {2, 2, 2, 2}, Attrs({{"strides", A::Ints({2, 2})}, {"output_shape", A::Ints({7, 6})}})},
      {{1, 2, 2, 3, 2}, {2, 3, 2, 2, 2}, Attrs({{"strides", A::Ints({2, 1, 2})}})},
  };
  std::mt19937 rng(2);
  for (const ConvTCase& c : cases) {
    const std::string what = "ConvTranspose X " + ShapeToString(c.x) + " W " + ShapeToString(c.w);
    const int64_t m = c.w[1] * c.attrs.GetInt("group", 1);
    Forward f{"ConvTranspose", c.attrs, {Random(c.x, rng), Random(c.w, rng), Random({m}, rng)}, {}};
    f.upstream = {Random(f.OutputShapes(1)[0], rng)};
    const Tensor& r = f.upstream[0];
    Tensor dx = RunNode("ConvTransposeGradData", kOneflowDomain, {r, f.inputs[1], ShapeOf(f.inputs[0])}, c.attrs, 1)[0];
    Tensor dw =
        RunNode("ConvTransposeGradFilter", kOneflowDomain, {f.inputs[0], r, ShapeOf(f.inputs[1])}, c.attrs, 1)[0];
    Tensor db = RunNode("ConvGradBias", kOneflowDomain, {r}, {}, 1)[0];
    CheckFd(f, 0, dx, what + " dX");
    CheckFd(f, 1, dw, what + " dW");
    CheckFd(f, 2, db, what + " dB");
  }
}

TEST(ConvGrad, Float32MultiThreadedMatchesFloat64) {
  using A = Attribute;
  std::mt19937 rng(3);
  // Big enough that the batch is split into several column chunks (> 1M column elements).
  const ConvCase cases[] = {
      {{16, 16, 32, 32}, {32, 16, 3, 3}, Attrs({{"pads", A::Ints({1, 1, 1, 1})}})},
      {{64, 32, 16, 16}, {32, 32, 3, 3}, Attrs({{"pads", A::Ints({1, 1, 1, 1})}})},
      {{8, 8, 12, 10}, {12, 4, 3, 3}, Attrs({{"group", A::Int(2)}, {"strides", A::Ints({2, 2})}})},
      {{8, 64, 14, 14}, {64, 1, 3, 3}, Attrs({{"group", A::Int(64)}, {"pads", A::Ints({1, 1, 1, 1})}})},
  };
  for (const ConvCase& c : cases) {
    const std::string what = "Conv X " + ShapeToString(c.x) + " W " + ShapeToString(c.w);
    const bool same_size = &c != &cases[2];  // 'same' convs: ConvTranspose maps dY's shape back to X's
    Tensor x = Random(c.x, rng), w = Random(c.w, rng);
    const Shape ys = RunNode("Conv", "", {x, w}, c.attrs, 1)[0].shape();
    Tensor r = Random(ys, rng);
    CheckF32("ConvGradData", {r, w, ShapeOf(x)}, c.attrs, 1, 2e-5, what + " dX");
    CheckF32("ConvGradFilter", {x, r, ShapeOf(w)}, c.attrs, 1, 2e-5, what + " dW");
    if (same_size) CheckF32("ConvTransposeGradData", {x, w, ShapeOf(r)}, c.attrs, 1, 2e-5, what + " (transposed) dX");
  }
}

TEST(ConvGrad, BadShapesAreRefused) {
  std::mt19937 rng(4);
  Tensor w = Random({4, 3, 3, 3}, rng);
  Tensor dy = Random({1, 4, 5, 5}, rng);
  Tensor xs(DType::kInt64, {4});
  const int64_t wrong[] = {1, 3, 9, 9};  // Conv of 9x9 by 3x3 gives 7x7, not dY's 5x5
  std::copy(wrong, wrong + 4, xs.data<int64_t>());
  try {
    RunNode("ConvGradData", kOneflowDomain, {dy, w, xs}, {}, 1);
    FAIL() << "a dY of the wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("not the output shape"), std::string::npos) << e.what();
  }
}

// ---- Pools ------------------------------------------------------------------------------------

struct PoolCase {
  std::string op;
  Shape x;
  AttrMap attrs;
};

TEST(PoolGrad, MatchesFiniteDifferences) {
  using A = Attribute;
  const PoolCase cases[] = {
      {"MaxPool",
       {2, 3, 7, 6},
       Attrs({{"kernel_shape", A::Ints({3, 3})}, {"strides", A::Ints({2, 2})}, {"pads", A::Ints({1, 1, 1, 1})}})},
      {"MaxPool",
       {1, 2, 9},
       Attrs({{"kernel_shape", A::Ints({3})},
              {"strides", A::Ints({2})},
              {"dilations", A::Ints({2})},
              {"ceil_mode", A::Int(1)}})},
      {"MaxPool",
       {1, 2, 4, 5, 4},
       Attrs({{"kernel_shape", A::Ints({2, 2, 2})}, {"auto_pad", A::String("SAME_UPPER")}})},
      // Some windows miss the input entirely (dilated taps over the padding): output 0, no gradient.
      {"MaxPool",
       {1, 2, 2, 4},
       Attrs({{"kernel_shape", A::Ints({2, 2})}, {"dilations", A::Ints({3, 1})}, {"pads", A::Ints({2, 0, 2, 0})}})},
      {"AveragePool",
       {2, 2, 7, 7},
       Attrs({{"kernel_shape", A::Ints({3, 3})}, {"strides", A::Ints({2, 2})}, {"pads", A::Ints({1, 1, 1, 1})}})},
      {"AveragePool",
       {2, 2, 7, 7},
       Attrs({{"kernel_shape", A::Ints({3, 3})},
              {"strides", A::Ints({2, 2})},
              {"pads", A::Ints({1, 0, 1, 0})},
              {"count_include_pad", A::Int(1)},
              {"ceil_mode", A::Int(1)}})},
      {"AveragePool",
       {1, 3, 8},
       Attrs({{"kernel_shape", A::Ints({3})}, {"strides", A::Ints({3})}, {"ceil_mode", A::Int(1)}})},
      {"AveragePool",
       {1, 2, 3, 4, 5},
       Attrs({{"kernel_shape", A::Ints({2, 2, 3})},
              {"auto_pad", A::String("SAME_LOWER")},
              {"count_include_pad", A::Int(1)}})},
      {"GlobalAveragePool", {2, 3, 4, 5}, {}},
      {"GlobalMaxPool", {2, 3, 4, 5}, {}},
      {"GlobalMaxPool", {2, 3, 6}, {}},
  };
  std::mt19937 rng(5);
  for (const PoolCase& c : cases) {
    const std::string what = c.op + " X " + ShapeToString(c.x);
    Forward f{c.op, c.attrs, {Random(c.x, rng, -3, 3)}, {}};
    f.upstream = {Random(f.OutputShapes(1)[0], rng)};
    const Tensor& r = f.upstream[0];
    const bool is_max = c.op.find("Max") != std::string::npos;
    const bool global = c.op.rfind("Global", 0) == 0;
    const std::string grad_op = c.op + "Grad";
    Tensor dx = RunNode(grad_op, kOneflowDomain, {r, is_max ? f.inputs[0] : ShapeOf(f.inputs[0])}, c.attrs, 1)[0];
    CheckFd(f, 0, dx, what);
    if (is_max && !global) {
      // The same through the forward's Indices output instead of a recomputed argmax.
      Tensor indices = RunNode(c.op, "", f.inputs, c.attrs, 2)[1];
      Tensor dx2 = RunNode(grad_op, kOneflowDomain, {r, f.inputs[0], indices}, c.attrs, 1)[0];
      CheckFd(f, 0, dx2, what + " (Indices)");
    }
    CheckF32(grad_op, {r, is_max ? f.inputs[0] : ShapeOf(f.inputs[0])}, c.attrs, 1, 1e-5, what + " f32");
  }
}

// ---- Softmax ----------------------------------------------------------------------------------

TEST(SoftmaxGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(6);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t axis : {-1, 1, 0}) {
      const std::string what = std::string(op) + " axis " + std::to_string(axis);
      const AttrMap attrs = Attrs({{"axis", Attribute::Int(axis)}});
      Forward f{op, attrs, {Random({3, 7, 5}, rng, -3, 3)}, {}};
      f.upstream = {Random({3, 7, 5}, rng)};
      Tensor y = RunNode(op, "", f.inputs, attrs, 1)[0];
      Tensor dx = RunNode(std::string(op) + "Grad", kOneflowDomain, {f.upstream[0], y}, attrs, 1)[0];
      CheckFd(f, 0, dx, what);
      Tensor big = Random({64, 600, 3}, rng, -3, 3);
      Tensor ybig = RunNode(op, "", {big}, attrs, 1)[0];
      CheckF32(std::string(op) + "Grad", {Random({64, 600, 3}, rng), ybig}, attrs, 1, 1e-5, what + " f32");
    }
  }
}

// ---- Normalizations ---------------------------------------------------------------------------

TEST(LayerNormalizationGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(7);
  struct Case {
    Shape x, scale;
    int64_t axis;
    bool saved;
  };
  const Case cases[] = {{{4, 6, 10}, {10}, -1, false},
                        {{4, 6, 10}, {10}, -1, true},
                        {{3, 4, 5}, {4, 5}, 1, true},
                        {{3, 4, 5}, {5}, 1, false},
                        {{2, 3}, {1, 3}, -1, false}};
  for (const Case& c : cases) {
    const std::string what = "LayerNormalization X " + ShapeToString(c.x) + " Scale " + ShapeToString(c.scale) +
                             (c.saved ? " (saved Mean/InvStdDev)" : "");
    // stash_type 0 keeps the statistics in f64, so the kernel uses them as given.
    const AttrMap attrs = Attrs(
        {{"axis", Attribute::Int(c.axis)}, {"epsilon", Attribute::Float(1e-3f)}, {"stash_type", Attribute::Int(0)}});
    Forward f{"LayerNormalization", attrs, {Random(c.x, rng, -2, 2), Random(c.scale, rng), Random(c.scale, rng)}, {}};
    f.upstream = {Random(c.x, rng)};
    std::vector<Tensor> fwd = RunNode("LayerNormalization", "", f.inputs, attrs, 3);
    const Tensor none;
    std::vector<Tensor> g =
        RunNode("LayerNormalizationGrad", kOneflowDomain,
                {f.upstream[0], f.inputs[0], f.inputs[1], c.saved ? fwd[1] : none, c.saved ? fwd[2] : none}, attrs, 3);
    CheckFd(f, 0, g[0], what + " dX");
    CheckFd(f, 1, g[1], what + " dScale");
    CheckFd(f, 2, g[2], what + " dB");
  }
  const AttrMap attrs = Attrs({{"axis", Attribute::Int(-1)}});
  CheckF32("LayerNormalizationGrad", {Random({300, 256}, rng), Random({300, 256}, rng, -2, 2), Random({256}, rng)},
           attrs, 3, 1e-4, "LayerNormalizationGrad f32");
}

TEST(BatchNormalizationGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(8);
  for (int training = 0; training <= 1; ++training) {
    for (const Shape& xs : {Shape{4, 3, 5, 2}, Shape{6, 4}, Shape{2, 3, 3, 2, 2}}) {
      const std::string what =
          std::string("BatchNormalization ") + (training ? "training" : "inference") + " X " + ShapeToString(xs);
      const int64_t c = xs[1];
      const AttrMap attrs = Attrs({{"epsilon", Attribute::Float(1e-2f)}, {"training_mode", Attribute::Int(training)}});
      Forward f{
          "BatchNormalization",
          attrs,
          {Random(xs, rng, -2, 2), Random({c}, rng), Random({c}, rng), Random({c}, rng), Random({c}, rng, 0.5, 2)},
          {}};
      f.upstream = {Random(xs, rng)};
      const Tensor none;
      std::vector<Tensor> g = RunNode(
          "BatchNormalizationGrad", kOneflowDomain,
          {f.upstream[0], f.inputs[0], f.inputs[1], training ? none : f.inputs[3], training ? none : f.inputs[4]},
          attrs, 3);
      CheckFd(f, 0, g[0], what + " dX");
      CheckFd(f, 1, g[1], what + " dscale");
      CheckFd(f, 2, g[2], what + " dB");
    }
  }
  CheckF32("BatchNormalizationGrad",
           {Random({32, 16, 14, 14}, rng), Random({32, 16, 14, 14}, rng, -2, 2), Random({16}, rng)}, {}, 3, 1e-4,
           "BatchNormalizationGrad f32");
}

TEST(BatchNormalization, TrainingModeForwardMatchesNaive) {
  std::mt19937 rng(9);
  const Shape xs{3, 4, 5, 2};
  const double eps = 1e-3f, momentum = 0.8f;  // the attributes are float32
  const AttrMap attrs = Attrs({{"epsilon", Attribute::Float(static_cast<float>(eps))},
                               {"momentum", Attribute::Float(static_cast<float>(momentum))},
                               {"training_mode", Attribute::Int(1)}});
  std::vector<Tensor> in = {Random(xs, rng, -2, 2), Random({4}, rng), Random({4}, rng), Random({4}, rng),
                            Random({4}, rng, 0.5, 2)};
  std::vector<Tensor> out = RunNode("BatchNormalization", "", in, attrs, 3);
  const double* x = in[0].data<double>();
  const int64_t N = 3, C = 4, S = 10;
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) s += x[(n * C + c) * S + i];
    const double mean = s / (N * S);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) q += (x[(n * C + c) * S + i] - mean) * (x[(n * C + c) * S + i] - mean);
    const double var = q / (N * S);  // ONNX-15: the biased (population) variance
    EXPECT_NEAR(out[1].data<double>()[c], in[3].data<double>()[c] * momentum + mean * (1 - momentum), 1e-12);
    EXPECT_NEAR(out[2].data<double>()[c], in[4].data<double>()[c] * momentum + var * (1 - momentum), 1e-12);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t k = (n * C + c) * S + i;
        const double want = (x[k] - mean) / std::sqrt(var + eps) * in[1].data<double>()[c] + in[2].data<double>()[c];
        EXPECT_NEAR(out[0].data<double>()[k], want, 1e-10) << "Y element " << k;
      }
  }
}

TEST(InstanceNormalizationGrad, MatchesFiniteDifferences) {
  std::mt19937 rng(10);
  for (const Shape& xs : {Shape{2, 3, 4, 5}, Shape{3, 2, 7}}) {
    const std::string what = "InstanceNormalization X " + ShapeToString(xs);
    const AttrMap attrs = Attrs({{"epsilon", Attribute::Float(1e-2f)}});
    Forward f{"InstanceNormalization", attrs, {Random(xs, rng, -2, 2), Random({xs[1]}, rng), Random({xs[1]}, rng)}, {}};
    f.upstream = {Random(xs, rng)};
    std::vector<Tensor> g =
        RunNode("InstanceNormalizationGrad", kOneflowDomain, {f.upstream[0], f.inputs[0], f.inputs[1]}, attrs, 3);
    CheckFd(f, 0, g[0], what + " dX");
    CheckFd(f, 1, g[1], what + " dscale");
    CheckFd(f, 2, g[2], what + " dB");
  }
  CheckF32("InstanceNormalizationGrad",
           {Random({8, 32, 12, 12}, rng), Random({8, 32, 12, 12}, rng, -2, 2), Random({32}, rng)}, {}, 3, 1e-4,
           "InstanceNormalizationGrad f32");
}

TEST(NnGrad, BadInputsGetClearErrors) {
  std::mt19937 rng(11);
  auto expect_error = [](const std::function<void()>& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const AttrMap pool = Attrs({{"kernel_shape", Attribute::Ints({2, 2})}});
  Tensor x = Random({1, 2, 4, 4}, rng);
  expect_error(
      [&] {
        RunNode("MaxPoolGrad", kOneflowDomain, {Random({1, 2, 2, 2}, rng), x}, pool, 1);
      },
      "is not the pool's output shape");
  Tensor idx(DType::kInt64, {1, 2, 3, 3});
  for (int64_t i = 0; i < idx.numel(); ++i) idx.data<int64_t>()[i] = 1000;
  expect_error(
      [&] {
        RunNode("MaxPoolGrad", kOneflowDomain, {Random({1, 2, 3, 3}, rng), x, idx}, pool, 1);
      },
      "outside its (n, c) plane");
  const Tensor none;
  expect_error(
      [&] {
        RunNode("LayerNormalizationGrad", kOneflowDomain,
                {Random({3, 4}, rng), Random({3, 4}, rng), Random({4}, rng), Random({2}, rng), Random({2}, rng)},
                Attrs({{"axis", Attribute::Int(-1)}}), 3);
      },
      "one value per row");
  expect_error(
      [&] {
        RunNode("BatchNormalizationGrad", kOneflowDomain,
                {Random({2, 3}, rng), Random({2, 3}, rng), Random({3}, rng), Random({3}, rng), none}, {}, 3);
      },
      "both mean and var");
  expect_error(
      [&] {
        RunNode("SoftmaxGrad", kOneflowDomain, {Random({2, 3}, rng), Random({3, 2}, rng)}, {}, 1);
      },
      "differ");
}

// An empty batch: data gradients are empty, parameter gradients are zeros (nothing contributes).
TEST(NnGrad, EmptyBatch) {
  std::mt19937 rng(12);
  const AttrMap pads = Attrs({{"pads", Attribute::Ints({1, 1, 1, 1})}});
  Tensor x = Random({0, 3, 5, 5}, rng), w = Random({4, 3, 3, 3}, rng), dy = Random({0, 4, 5, 5}, rng);
  EXPECT_EQ(RunNode("ConvGradData", kOneflowDomain, {dy, w, ShapeOf(x)}, pads, 1)[0].numel(), 0);
  auto all_zero = [](const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i)
      if (t.data<double>()[i] != 0.0) return false;
    return true;
  };
  Tensor dw = RunNode("ConvGradFilter", kOneflowDomain, {x, dy, ShapeOf(w)}, pads, 1)[0];
  EXPECT_EQ(dw.shape(), w.shape());
  EXPECT_TRUE(all_zero(dw));
  EXPECT_TRUE(all_zero(RunNode("ConvGradBias", kOneflowDomain, {dy}, {}, 1)[0]));
  std::vector<Tensor> ln = RunNode("LayerNormalizationGrad", kOneflowDomain,
                                   {Random({0, 4}, rng), Random({0, 4}, rng), Random({4}, rng)}, {}, 3);
  EXPECT_EQ(ln[0].numel(), 0);
  EXPECT_TRUE(all_zero(ln[1]) && all_zero(ln[2]));
  std::vector<Tensor> bn = RunNode("BatchNormalizationGrad", kOneflowDomain,
                                   {Random({0, 3, 2}, rng), Random({0, 3, 2}, rng), Random({3}, rng)}, {}, 3);
  EXPECT_EQ(bn[0].numel(), 0);
  EXPECT_TRUE(all_zero(bn[1]) && all_zero(bn[2]));
}

}  // namespace
}  // namespace oneflow
