// End-to-end gradients of two small models through BuildGradients and a Session (f64): a CNN
// (Conv-BatchNorm-Relu-MaxPool-Conv-Relu-GlobalAveragePool-Flatten-Gemm-LogSoftmax, NLL loss) and
// a transformer encoder block (LayerNorm, MatMul, multi-head attention with Reshape/Transpose and
// Softmax, Gelu MLP, residual Adds). Every parameter's gradient (and the input's) is compared with
// central finite differences of the loss on sampled elements. A CNN whose first conv is frozen (its
// weights constants) runs in f32 through the NHWC layout pass and is compared with the f64 gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "../graph_builder.h"
#include "engine/session.h"
#include "graph/autodiff.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

Tensor Random(const Shape& s, std::mt19937& rng, double scale = 1.0) {
  std::uniform_real_distribution<double> d(-scale, scale);
  Tensor t(DType::kFloat64, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d(rng);
  return t;
}

using test_util::Ints;

Tensor ToF32(const Tensor& t) {
  if (t.dtype() != DType::kFloat64) return t;
  Tensor f(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) f.data<float>()[i] = static_cast<float>(t.data<double>()[i]);
  return f;
}

// A model under construction: parameters (and the input) are graph inputs, so they are fed and
// perturbed; everything else (shapes, targets, frozen weights) is a constant. With `f32` every
// float tensor is stored in f32.
struct ModelBuilder {
  Graph g;
  std::vector<std::pair<std::string, Tensor>> params;
  bool f32 = false;
  explicit ModelBuilder(int opset, bool float32 = false) : f32(float32) { g.opset_imports[""] = opset; }

  std::string Param(const std::string& name, Tensor t) {
    if (f32) t = ToF32(t);
    g.inputs.push_back(g.AddValue(name, TensorType::Of(t.dtype(), t.shape())));
    params.emplace_back(name, std::move(t));
    return name;
  }
  std::string Const(const std::string& name, Tensor t) {
    g.AddConstant(name, f32 ? ToF32(t) : t);
    return name;
  }
  std::string Op(const std::string& op, const std::vector<std::string>& in, AttrMap attrs = {}) {
    Node n;
    n.op_type = op;
    n.opset = g.opset_imports[""];
    const std::string out = g.UniqueName(op + "_out");
    n.name = out;
    for (const std::string& v : in) n.inputs.push_back(v.empty() ? kNoValue : g.FindValue(v));
    n.outputs.push_back(g.AddValue(out));
    n.attrs = std::move(attrs);
    g.nodes.push_back(std::move(n));
    return out;
  }
};

AttrMap A(std::initializer_list<std::pair<const char*, Attribute>> kv) {
  AttrMap a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Appends the backward graph of `loss` and creates a session for it; `fetches` gets the loss and
// each parameter's gradient, in parameter order.
std::unique_ptr<Session> GradientSession(ModelBuilder& m, const std::string& loss, int optimization_level,
                                         std::vector<std::string>* fetches) {
  m.g.outputs.push_back(m.g.FindValue(loss));
  PrepareGraph(m.g);
  std::vector<std::string> wrt;
  for (const auto& p : m.params) wrt.push_back(p.first);
  const GradientInfo info = BuildGradients(m.g, loss, wrt);
  EXPECT_TRUE(info.unreachable.empty()) << "a parameter does not reach the loss";
  SessionOptions opts;
  opts.intra_op_threads = 2;
  opts.optimization_level = optimization_level;
  *fetches = {loss};
  for (const std::string& w : wrt) fetches->push_back(info.gradients.at(w));
  return std::make_unique<Session>(m.g, opts);
}

// Checks each parameter's gradient against central differences on up to `samples` elements.
void CheckModelGradients(ModelBuilder& m, const std::string& loss, int optimization_level, int samples = 12) {
  std::vector<std::string> fetches;
  std::unique_ptr<Session> session = GradientSession(m, loss, optimization_level, &fetches);
  const Session& s = *session;
  std::vector<std::string> wrt;
  for (const auto& p : m.params) wrt.push_back(p.first);
  const auto base = s.Run(m.params, fetches);
  std::mt19937 rng(11);
  const double eps = 1e-6;
  for (size_t k = 0; k < wrt.size(); ++k) {
    const Tensor& grad = base[k + 1].second;
    ASSERT_EQ(grad.shape(), m.params[k].second.shape()) << wrt[k];
    const int64_t n = grad.numel();
    std::uniform_int_distribution<int64_t> pick(0, n - 1);
    int bad = 0;
    for (int j = 0; j < std::min<int64_t>(samples, n); ++j) {
      const int64_t i = n <= samples ? j : pick(rng);
      auto feeds = m.params;
      feeds[k].second = m.params[k].second.Clone();
      double* x = feeds[k].second.data<double>();
      const double x0 = x[i];
      x[i] = x0 + eps;
      const double up = s.Run(feeds, {loss})[0].second.GetAsDouble(0);
      x[i] = x0 - eps;
      const double down = s.Run(feeds, {loss})[0].second.GetAsDouble(0);
      const double numeric = (up - down) / (2 * eps), analytic = grad.data<double>()[i];
      if (!(std::fabs(numeric - analytic) <= 1e-6 * (1 + std::fabs(numeric))) && ++bad <= 3)
        ADD_FAILURE() << "d loss / d " << wrt[k] << "[" << i << "]: analytic " << analytic << " numeric " << numeric;
    }
    EXPECT_EQ(bad, 0) << wrt[k];
  }
}

// `frozen_conv1`: the first conv's weights are constants (not trained).
void BuildCnn(ModelBuilder& m, std::mt19937& rng, std::string* loss, bool frozen_conv1 = false) {
  const std::string x = m.Param("x", Random({4, 1, 8, 8}, rng));
  Tensor w1 = Random({4, 1, 3, 3}, rng, 0.5), b1 = Random({4}, rng, 0.1);
  std::string h = m.Op(
      "Conv",
      {x, frozen_conv1 ? m.Const("w1", w1) : m.Param("w1", w1), frozen_conv1 ? m.Const("b1", b1) : m.Param("b1", b1)},
      A({{"pads", Attribute::Ints({1, 1, 1, 1})}}));
  h = m.Op("BatchNormalization",
           {h, m.Param("bn_scale", Random({4}, rng)), m.Param("bn_bias", Random({4}, rng)),
            m.Const("bn_mean", Random({4}, rng)), m.Const("bn_var", Random({4}, rng, 0.5))},
           A({{"training_mode", Attribute::Int(1)}}));
  h = m.Op("Relu", {h});
  h = m.Op("MaxPool", {h}, A({{"kernel_shape", Attribute::Ints({2, 2})}, {"strides", Attribute::Ints({2, 2})}}));
  h = m.Op("Conv", {h, m.Param("w2", Random({6, 4, 3, 3}, rng, 0.5)), m.Param("b2", Random({6}, rng, 0.1))},
           A({{"pads", Attribute::Ints({1, 1, 1, 1})}}));
  h = m.Op("Relu", {h});
  h = m.Op("GlobalAveragePool", {h});
  h = m.Op("Flatten", {h});
  h = m.Op("Gemm", {h, m.Param("w3", Random({3, 6}, rng)), m.Param("b3", Random({3}, rng, 0.1))},
           A({{"transB", Attribute::Int(1)}}));
  h = m.Op("LogSoftmax", {h});
  // Negative log-likelihood of fixed targets as a one-hot product (mean over the batch).
  Tensor onehot(DType::kFloat64, {4, 3});
  for (int64_t i = 0; i < 4; ++i) onehot.data<double>()[i * 3 + (i % 3)] = -0.25;
  *loss = m.Op("ReduceSum", {m.Op("Mul", {h, m.Const("targets", onehot)})}, A({{"keepdims", Attribute::Int(0)}}));
}

TEST(NnGradEndToEnd, SmallCnnMatchesFiniteDifferences) {
  for (int level : {0, 2}) {
    SCOPED_TRACE("optimization level " + std::to_string(level));
    std::mt19937 rng(1);
    ModelBuilder m(17);
    std::string loss;
    BuildCnn(m, rng, &loss);
    CheckModelGradients(m, loss, level);
  }
}

// Frozen first conv: in f32 at level 2 the layout pass turns it into an NHWC FusedConv between
// transposes; the gradients must still match the f64 ones (checked against finite differences).
TEST(NnGradEndToEnd, FrozenConvFloat32UnderLayoutPassMatchesFloat64) {
  std::vector<std::vector<Tensor>> grads;
  for (bool f32 : {false, true}) {
    std::mt19937 rng(3);
    ModelBuilder m(17, f32);
    std::string loss;
    BuildCnn(m, rng, &loss, /*frozen_conv1=*/true);
    if (!f32) {
      ModelBuilder check = m;
      CheckModelGradients(check, loss, 0);
    }
    std::vector<std::string> fetches;
    std::unique_ptr<Session> s = GradientSession(m, loss, f32 ? 2 : 0, &fetches);
    if (f32) {
      bool nhwc = false;
      for (const Node& n : s->optimized().nodes) nhwc = nhwc || n.attrs.GetString("layout", "") == "NHWC";
      EXPECT_TRUE(nhwc) << "the layout pass did not convert the frozen conv; the test lost its point";
    }
    std::vector<Tensor> g;
    for (auto& [name, t] : s->Run(m.params, fetches)) g.push_back(t);
    grads.push_back(std::move(g));
  }
  for (size_t k = 0; k < grads[0].size(); ++k) {
    ASSERT_EQ(grads[1][k].shape(), grads[0][k].shape());
    int bad = 0;
    for (int64_t i = 0; i < grads[0][k].numel(); ++i) {
      const double want = grads[0][k].data<double>()[i], got = grads[1][k].data<float>()[i];
      if (!(std::fabs(got - want) <= 1e-4 * (1 + std::fabs(want))) && ++bad <= 3)
        ADD_FAILURE() << "fetch " << k << " element " << i << ": f32 " << got << " f64 " << want;
    }
    EXPECT_EQ(bad, 0) << "fetch " << k;
  }
}

void BuildEncoderBlock(ModelBuilder& m, std::mt19937& rng, std::string* loss) {
  const int64_t B = 2, S = 4, D = 8, H = 2, Dh = D / H, F = 16;
  const std::string x = m.Param("x", Random({B, S, D}, rng));
  auto linear = [&](const std::string& in, const std::string& name, int64_t din, int64_t dout) {
    return m.Op("Add", {m.Op("MatMul", {in, m.Param(name + "_w", Random({din, dout}, rng, 0.5))}),
                        m.Param(name + "_b", Random({dout}, rng, 0.1))});
  };
  auto heads = [&](const std::string& t) {  // [B, S, D] -> [B, H, S, Dh]
    return m.Op("Transpose", {m.Op("Reshape", {t, m.Const(t + "_shape", Ints({B, S, H, Dh}))})},
                A({{"perm", Attribute::Ints({0, 2, 1, 3})}}));
  };
  const std::string ln1 =
      m.Op("LayerNormalization", {x, m.Param("ln1_g", Random({D}, rng)), m.Param("ln1_b", Random({D}, rng))});
  const std::string q = heads(linear(ln1, "q", D, D)), k = heads(linear(ln1, "k", D, D)),
                    v = heads(linear(ln1, "v", D, D));
  Tensor scale = Tensor::Scalar(DType::kFloat64, 1.0 / std::sqrt(static_cast<double>(Dh)));
  const std::string scores =
      m.Op("Mul", {m.Op("MatMul", {q, m.Op("Transpose", {k}, A({{"perm", Attribute::Ints({0, 1, 3, 2})}}))}),
                   m.Const("attn_scale", scale)});
  const std::string attn = m.Op("Softmax", {scores}, A({{"axis", Attribute::Int(-1)}}));
  std::string ctx = m.Op("Transpose", {m.Op("MatMul", {attn, v})}, A({{"perm", Attribute::Ints({0, 2, 1, 3})}}));
  ctx = m.Op("Reshape", {ctx, m.Const("merge_shape", Ints({B, S, D}))});
  const std::string x2 = m.Op("Add", {x, linear(ctx, "o", D, D)});
  const std::string ln2 =
      m.Op("LayerNormalization", {x2, m.Param("ln2_g", Random({D}, rng)), m.Param("ln2_b", Random({D}, rng))});
  const std::string mlp = linear(m.Op("Gelu", {linear(ln2, "fc1", D, F)}), "fc2", F, D);
  const std::string out = m.Op("Add", {x2, mlp});
  *loss = m.Op("ReduceSum", {m.Op("Mul", {out, m.Const("upstream", Random({B, S, D}, rng))})},
               A({{"keepdims", Attribute::Int(0)}}));
}

TEST(NnGradEndToEnd, TransformerEncoderBlockMatchesFiniteDifferences) {
  for (int level : {0, 2}) {
    SCOPED_TRACE("optimization level " + std::to_string(level));
    std::mt19937 rng(2);
    ModelBuilder m(20);
    std::string loss;
    BuildEncoderBlock(m, rng, &loss);
    CheckModelGradients(m, loss, level);
  }
}

}  // namespace
}  // namespace oneflow
