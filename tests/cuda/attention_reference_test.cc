// ai.oneflow FusedAttention on the CPU (no CUDA needed): the kernel against the composition it
// replaces (Transpose, MatMul, Mul, a causal mask Add, Softmax, MatMul, each run by its own CPU
// kernel), and the FuseAttention pass (the fused graph run by a session against a double-precision
// loop over the original formula; no rewrite where the batch dims broadcast).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../cpu_kernel_call.h"
#include "../graph_builder.h"
#include "base/thread_pool.h"
#include "engine/session.h"
#include "graph/op_schema.h"
#include "passes/passes.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

using test_util::OpCall;

std::vector<Tensor> RunCpu(const OpCall& call) { return test_util::RunCpuKernel(call); }

Tensor RandomTensor(const Shape& shape, std::mt19937& rng) {
  Tensor t(DType::kFloat32, shape);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// ||got - want|| / ||want||; `want` is f32 or f64.
double RelL2(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.data<float>()[i];
    const double b = want.dtype() == DType::kFloat64 ? want.data<double>()[i] : want.data<float>()[i];
    num += (a - b) * (a - b);
    den += b * b;
  }
  return std::sqrt(num / den);
}

OpCall AttentionCall(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, int64_t dv, bool causal, float scale,
                     std::mt19937& rng) {
  OpCall c;
  c.op = "FusedAttention";
  c.domain = kOneflowDomain;
  c.opset = 1;
  c.attrs.set("causal", Attribute::Int(causal ? 1 : 0));
  c.attrs.set("scale", Attribute::Float(scale));
  c.inputs = {RandomTensor({b, h, sq, d}, rng), RandomTensor({b, h, sk, d}, rng), RandomTensor({b, h, sk, dv}, rng)};
  c.outputs = {{DType::kFloat32, {b, h, sq, dv}}};
  return c;
}

Tensor Cpu(const std::string& op, std::vector<Tensor> inputs, const Shape& out, AttrMap attrs = {}, int opset = 13) {
  OpCall c;
  c.op = op;
  c.opset = opset;
  c.attrs = std::move(attrs);
  c.inputs = std::move(inputs);
  c.outputs = {{DType::kFloat32, out}};
  return RunCpu(c)[0];
}

// softmax(scale * Q K^T + mask) V from the individual CPU kernels.
Tensor Composition(const OpCall& call, bool causal, float scale) {
  const Tensor &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2];
  const int64_t b = q.dim(0), h = q.dim(1), sq = q.dim(2), sk = k.dim(2), d = q.dim(3), dv = v.dim(3);
  AttrMap perm;
  perm.set("perm", Attribute::Ints({0, 1, 3, 2}));
  const Tensor kt = Cpu("Transpose", {k}, {b, h, d, sk}, perm);
  Tensor s = Cpu("MatMul", {q, kt}, {b, h, sq, sk});
  Tensor sc(DType::kFloat32, {});
  sc.data<float>()[0] = scale;
  s = Cpu("Mul", {s, sc}, {b, h, sq, sk});
  if (causal) {
    Tensor mask(DType::kFloat32, {sq, sk});
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j) mask.data<float>()[i * sk + j] = j <= i ? 0.0f : -INFINITY;
    s = Cpu("Add", {s, mask}, {b, h, sq, sk});
  }
  AttrMap axis;
  axis.set("axis", Attribute::Int(-1));
  const Tensor p = Cpu("Softmax", {s}, {b, h, sq, sk}, axis);
  return Cpu("MatMul", {p, v}, {b, h, sq, dv});
}

TEST(AttentionReference, CpuKernelMatchesComposition) {
  std::mt19937 rng(51);
  struct Case { int64_t b, h, sq, sk, d, dv; bool causal; float scale; };
  const Case cases[] = {{2, 3, 17, 17, 16, 16, false, 0.0f}, {1, 2, 33, 33, 64, 64, true, 0.0f},
                        {2, 1, 5, 40, 8, 12, false, 0.3f},   {1, 4, 40, 9, 32, 32, true, 0.0f}};
  for (const Case& k : cases) {
    const OpCall c = AttentionCall(k.b, k.h, k.sq, k.sk, k.d, k.dv, k.causal, k.scale, rng);
    const float scale = k.scale != 0.0f ? k.scale : 1.0f / std::sqrt(static_cast<float>(k.d));
    const Tensor fused = RunCpu(c)[0];
    EXPECT_LE(RelL2(fused, Composition(c, k.causal, scale)), 1e-5)
        << "Sq " << k.sq << " Sk " << k.sk << " D " << k.d << " causal " << k.causal;
  }
}

constexpr int64_t kB = 2, kH = 3, kS = 10, kD = 8;

// The transformer's spelling: K^T from a Transpose (perm 0,2,3,1 of [B, S, H, D]) or fed directly,
// scores divided (or multiplied) by a scalar, Softmax over the last axis.
Graph BuildAttention(bool k_from_transpose, bool divide, float c) {
  test_util::GraphBuilder b;
  const int q = b.Input("Q", DType::kFloat32, {kB, kH, kS, kD});
  const int k = b.Input("K", DType::kFloat32, k_from_transpose ? Shape{kB, kS, kH, kD} : Shape{kB, kH, kD, kS});
  const int v = b.Input("V", DType::kFloat32, {kB, kH, kS, kD});
  int kt = k;
  if (k_from_transpose) {
    AttrMap perm;
    perm.set("perm", Attribute::Ints({0, 2, 3, 1}));
    kt = b.Node("Transpose", {k}, perm);
  }
  Tensor ct(DType::kFloat32, Shape{});
  ct.data<float>()[0] = c;
  const int s = b.Node(divide ? "Div" : "Mul", {b.Node("MatMul", {q, kt}), b.Const("c", ct)});
  AttrMap axis;
  axis.set("axis", Attribute::Int(-1));
  b.g.outputs = {b.Node("MatMul", {b.Node("Softmax", {s}, axis), v})};
  return b.g;
}

TEST(AttentionReference, FusionPassFormsFusedAttention) {
  std::mt19937 rng(53);
  for (bool k_from_transpose : {true, false}) {
    for (bool divide : {true, false}) {
      Graph g = BuildAttention(k_from_transpose, divide, divide ? 2.5f : 0.4f);
      PrepareGraph(g);
      ASSERT_EQ(FuseAttention(g), 1);
      ResolveSchemas(g);
      InferShapes(g);
      int fused = 0, softmax = 0;
      for (const Node& n : g.nodes) {
        fused += n.op_type == "FusedAttention";
        softmax += n.op_type == "Softmax";
      }
      EXPECT_EQ(fused, 1);
      EXPECT_EQ(softmax, 0);
      const Tensor q = RandomTensor({kB, kH, kS, kD}, rng);
      const Tensor k = RandomTensor(k_from_transpose ? Shape{kB, kS, kH, kD} : Shape{kB, kH, kD, kS}, rng);
      const Tensor v = RandomTensor({kB, kH, kS, kD}, rng);
      Session session(g, SessionOptions{1, 2});
      const Tensor y = session.Run({{"Q", q}, {"K", k}, {"V", v}}, {})[0].second;
      // Double-precision loops over the original formula.
      Tensor want(DType::kFloat64, {kB, kH, kS, kD});
      const double scale = divide ? 1.0 / 2.5 : 0.4;
      for (int64_t b = 0; b < kB; ++b)
        for (int64_t h = 0; h < kH; ++h)
          for (int64_t i = 0; i < kS; ++i) {
            std::vector<double> p(kS);
            double mx = -INFINITY, sum = 0.0;
            for (int64_t j = 0; j < kS; ++j) {
              double dot = 0.0;
              for (int64_t c = 0; c < kD; ++c) {
                const int64_t ko = k_from_transpose ? ((b * kS + j) * kH + h) * kD + c : ((b * kH + h) * kD + c) * kS + j;
                dot += q.data<float>()[((b * kH + h) * kS + i) * kD + c] * static_cast<double>(k.data<float>()[ko]);
              }
              p[j] = dot * scale;
              mx = std::max(mx, p[j]);
            }
            for (double& x : p) sum += (x = std::exp(x - mx));
            for (int64_t c = 0; c < kD; ++c) {
              double acc = 0.0;
              for (int64_t j = 0; j < kS; ++j) acc += p[j] / sum * v.data<float>()[((b * kH + h) * kS + j) * kD + c];
              want.data<double>()[((b * kH + h) * kS + i) * kD + c] = acc;
            }
          }
      EXPECT_LE(RelL2(y, want), 1e-5) << "transpose " << k_from_transpose << " divide " << divide;
    }
  }
  // Broadcast batch dims are not a plain attention: no rewrite.
  Graph g = BuildAttention(false, true, 2.0f);
  g.values[static_cast<size_t>(g.FindValue("Q"))].type = TensorType::Of(DType::kFloat32, Shape{kB, 1, kS, kD});
  PrepareGraph(g);
  EXPECT_EQ(FuseAttention(g), 0);
}

}  // namespace
}  // namespace oneflow
