// nn gradient kernels (ai.oneflow ConvGradData/Filter/Bias, ConvTransposeGrad*, pool grads, Softmax/
// LogSoftmax grads, Layer/Batch/InstanceNormalization grads) against central finite differences of
// the forward kernels in f64, multi-threaded; the f32 kernels against the f64 ones on larger shapes;
// BatchNormalization's training-mode forward against naive loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "engine/node_runner.h"
#include "engine/session.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

// Runs one node (op in `domain`) through schema resolution, inference and its kernel. A default
// (undefined-dtype) tensor among the inputs is an omitted optional input. Outputs are allocated
// filled with NaN so a kernel that leaves an element unwritten fails the comparison.
std::vector<Tensor> RunNode(const std::string& op, const std::string& domain, const std::vector<Tensor>& inputs,
                            const AttrMap& attrs, size_t num_outputs, int threads = 3) {
  Graph g;
  Node n;
  n.op_type = op;
  n.domain = domain;
  n.name = "n";
  n.opset = domain.empty() ? 17 : kOneflowDomainVersion;
  n.attrs = attrs;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() == DType::kUndefined) {
      n.inputs.push_back(kNoValue);
      ptrs.push_back(nullptr);
      continue;
    }
    const int v = g.AddValue("in" + std::to_string(i), TensorType::Of(inputs[i].dtype(), inputs[i].shape()));
    g.inputs.push_back(v);
    n.inputs.push_back(v);
    ptrs.push_back(&inputs[i]);
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    const int v = g.AddValue("out" + std::to_string(i));
    g.outputs.push_back(v);
    n.outputs.push_back(v);
  }
  g.nodes.push_back(n);
  g.opset_imports[""] = 17;
  g.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
  PrepareGraph(g);
  NodeRunner runner(g, g.nodes[0]);
  ThreadPool pool(threads);
  std::vector<Tensor> outs;
  runner.Run(ptrs, outs, pool, [](size_t, DType dt, const Shape& s) {
    Tensor t = Tensor::Uninitialized(dt, s);
    if (dt == DType::kFloat32) std::fill(t.data<float>(), t.data<float>() + t.numel(), std::nanf(""));
    if (dt == DType::kFloat64) std::fill(t.data<double>(), t.data<double>() + t.numel(), std::nan(""));
    return t;
  });
  return outs;
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
  std::vector<Tensor> inputs;  // f64
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
      {{2, 4, 7, 8}, {6, 2, 3, 2},
       Attrs({{"group", A::Int(2)}, {"strides", A::Ints({2, 1})}, {"dilations", A::Ints({1, 2})},
              {"pads", A::Ints({1, 0, 2, 1})}})},
      {{1, 3, 6, 5}, {4, 3, 3, 3}, Attrs({{"auto_pad", A::String("SAME_UPPER")}, {"strides", A::Ints({2, 2})}})},
      {{2, 4, 6, 6}, {4, 1, 3, 3}, Attrs({{"group", A::Int(4)}, {"pads", A::Ints({1, 1, 1, 1})}})},  // depthwise
      {{1, 2, 4, 5, 4}, {3, 2, 2, 3, 2}, Attrs({{"strides", A::Ints({1, 2, 1})}, {"pads", A::Ints({0, 1, 1, 1, 0, 0})}})},
      {{3, 5, 5, 5}, {2, 5, 1, 1}, Attrs({})},  // pointwise
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
      {{2, 4, 5}, {4, 3, 3}, Attrs({{"strides", A::Ints({2})}, {"pads", A::Ints({1, 0})}, {"output_padding", A::Ints({1})}})},
      {{1, 4, 3, 4}, {4, 2, 3, 2},
       Attrs({{"group", A::Int(2)}, {"strides", A::Ints({2, 3})}, {"dilations", A::Ints({2, 1})},
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
  // Big enough that the batch is split into several column chunks (> 4M column elements).
  const ConvCase cases[] = {
      {{16, 16, 32, 32}, {32, 16, 3, 3}, Attrs({{"pads", A::Ints({1, 1, 1, 1})}})},
      {{64, 32, 16, 16}, {32, 32, 3, 3}, Attrs({{"pads", A::Ints({1, 1, 1, 1})}})},
      {{8, 8, 12, 10}, {12, 4, 3, 3}, Attrs({{"group", A::Int(2)}, {"strides", A::Ints({2, 2})}})},
  };
  for (const ConvCase& c : cases) {
    const std::string what = "Conv X " + ShapeToString(c.x) + " W " + ShapeToString(c.w);
    const bool same_size = &c != &cases[2];  // stride-1 'same' convs: ConvTranspose maps dY's shape back to X's
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

}  // namespace
}  // namespace oneflow
