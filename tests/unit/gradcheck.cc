// The gradient-check harness (tests/unit/gradcheck.h), shared by the unit tests and the op-case
// table (tests/ops).
#include "gradcheck.h"

#include <cmath>
#include <random>

#include "../graph_builder.h"
#include "engine/session.h"
#include "graph/autodiff.h"
#include "graph/op_schema.h"
#include "passes/passes.h"

namespace oneflow {
namespace testing {

std::set<std::string>& GradCheckedOps() {
  static std::set<std::string> ops;
  return ops;
}

Tensor Random(const Shape& shape, double lo, double hi, unsigned seed) {
  std::mt19937 rng(seed * 7919u + static_cast<unsigned>(NumElements(shape)) * 31u + static_cast<unsigned>(shape.size()));
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor t(DType::kFloat64, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d(rng);
  return t;
}

Tensor RandomAwayFrom(const Shape& shape, const std::vector<double>& kinks, double lo, double hi, double margin,
                      unsigned seed) {
  std::mt19937 rng(seed * 104729u + static_cast<unsigned>(NumElements(shape)) * 17u + 3u);
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor t(DType::kFloat64, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v;
    bool near;
    do {
      v = d(rng);
      near = false;
      for (double k : kinks) near = near || std::fabs(v - k) < margin;
    } while (near);
    t.data<double>()[i] = v;
  }
  return t;
}

Tensor Int64s(const Shape& shape, const std::vector<int64_t>& v) {
  Tensor t(DType::kInt64, shape);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

Tensor Int64s(const std::vector<int64_t>& v) { return Int64s(Shape{static_cast<int64_t>(v.size())}, v); }

Tensor Doubles(const Shape& shape, const std::vector<double>& v) {
  Tensor t(DType::kFloat64, shape);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), t.data<double>());
  return t;
}

namespace {

// The one-node graph of the case; differentiable inputs become graph inputs, the rest constants.
Graph BuildForward(const GradCheckCase& c, std::vector<std::string>* wrt) {
  Graph g;
  g.opset_imports[""] = c.opset;
  Node n;
  n.name = "node";
  n.op_type = c.op;
  n.domain = c.domain;
  n.opset = c.domain.empty() ? c.opset : kOneflowDomainVersion;
  if (!c.domain.empty()) g.opset_imports[c.domain] = n.opset;
  n.attrs = c.attrs;
  for (const GradCheckInput& in : c.inputs) {
    if (in.name.empty()) {
      n.inputs.push_back(kNoValue);
    } else if (g.FindValue(in.name) != kNoValue) {
      n.inputs.push_back(g.FindValue(in.name));  // the same value read twice
    } else if (in.differentiable) {
      TensorType t = TensorType::Of(in.value.dtype(), in.value.shape());
      if (c.symbolic_shapes)
        for (size_t d = 0; d < t.dims.size(); ++d) t.dims[d] = Dim::Symbol(in.name + "_d" + std::to_string(d));
      n.inputs.push_back(g.AddValue(in.name, t));
      g.inputs.push_back(n.inputs.back());
      wrt->push_back(in.name);
    } else {
      n.inputs.push_back(g.AddConstant(in.name, in.value));
    }
  }
  for (int k = 0; k < c.num_outputs; ++k) {
    n.outputs.push_back(g.AddValue("out" + std::to_string(k)));
    g.outputs.push_back(n.outputs.back());
  }
  g.nodes.push_back(n);
  ResolveSchemas(g);
  InferShapes(g);
  return g;
}

std::vector<std::pair<std::string, Tensor>> Feeds(const GradCheckCase& c) {
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const GradCheckInput& in : c.inputs) {
    if (in.name.empty() || !in.differentiable) continue;
    bool seen = false;
    for (const auto& f : feeds) seen = seen || f.first == in.name;
    if (!seen) feeds.emplace_back(in.name, in.value.Clone());
  }
  return feeds;
}

// Node `op`(inputs) -> value `out` at the graph's default-domain opset.
int AddNode(Graph& g, const std::string& op, std::vector<int> inputs, const std::string& out, AttrMap attrs = {}) {
  return test_util::AddOp(g, op, std::move(inputs), out, std::move(attrs), g.opset_imports[""]);
}

}  // namespace

void RunGradCheck(const GradCheckCase& c) {
  SCOPED_TRACE("gradient check of " + c.op);
  SessionOptions opts;
  opts.intra_op_threads = 1;
  opts.optimization_level = 0;
  std::vector<std::string> wrt;
  Graph g = BuildForward(c, &wrt);
  ASSERT_FALSE(wrt.empty()) << "the case has no differentiable input";

  // Output shapes from a forward run, then loss = sum_k sum(R_k * out_k) with fixed random R_k.
  std::vector<std::pair<std::string, Tensor>> outs = Session(g, opts).Run(Feeds(c), {});
  std::vector<int> terms;
  g.outputs.clear();
  for (int k = 0; k < c.num_outputs; ++k) {
    if (std::find(c.skip_outputs.begin(), c.skip_outputs.end(), k) != c.skip_outputs.end()) continue;
    const Tensor& o = outs[static_cast<size_t>(k)].second;
    ASSERT_EQ(o.dtype(), DType::kFloat64) << "output " << k << " (skip non-float outputs)";
    int r = g.AddConstant("R" + std::to_string(k), Random(o.shape(), -1.0, 1.0, 100u + static_cast<unsigned>(k)));
    int prod = AddNode(g, "Mul", {g.FindValue("out" + std::to_string(k)), r}, "prod" + std::to_string(k));
    terms.push_back(AddNode(g, "ReduceSum", {prod}, "term" + std::to_string(k),
                            [] { AttrMap a; a.set("keepdims", Attribute::Int(0)); return a; }()));
  }
  ASSERT_FALSE(terms.empty());
  g.outputs.push_back(AddNode(g, "Sum", terms, "loss"));
  ResolveSchemas(g);
  InferShapes(g);

  GradientInfo info = BuildGradients(g, "loss", wrt);
  Session s(g, opts);
  std::vector<std::string> fetches{"loss"};
  for (const std::string& w : wrt) fetches.push_back(info.gradients.at(w));
  auto base = s.Run(Feeds(c), fetches);

  for (size_t k = 0; k < wrt.size(); ++k) {
    const Tensor& grad = base[k + 1].second;
    std::vector<std::pair<std::string, Tensor>> feeds = Feeds(c);
    auto it = std::find_if(feeds.begin(), feeds.end(), [&](const auto& f) { return f.first == wrt[k]; });
    Tensor& x = it->second;
    ASSERT_EQ(grad.shape(), x.shape()) << "gradient of " << wrt[k];
    ASSERT_EQ(grad.dtype(), DType::kFloat64);
    int bad = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      double& xi = x.data<double>()[i];
      const double saved = xi;
      xi = saved + c.eps;
      const double up = s.Run(feeds, {"loss"})[0].second.GetAsDouble(0);
      xi = saved - c.eps;
      const double down = s.Run(feeds, {"loss"})[0].second.GetAsDouble(0);
      xi = saved;
      const double numeric = (up - down) / (2 * c.eps);
      const double analytic = grad.data<double>()[i];
      if (!(std::fabs(analytic - numeric) <= c.tol * (1 + std::fabs(numeric))) && ++bad <= 3)
        ADD_FAILURE() << c.op << ": d loss / d " << wrt[k] << "[" << i << "] analytic " << analytic << " numeric "
                      << numeric;
    }
    EXPECT_EQ(bad, 0) << c.op << ": " << bad << " of " << x.numel() << " elements of d/d" << wrt[k] << " differ";
  }
}

}  // namespace testing
}  // namespace oneflow
