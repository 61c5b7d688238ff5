// nn ops: SGEMM, MatMul, Conv and ConvTranspose on random shapes against naive double-precision
// loops (1 and 2 threads), and fusions (Conv+BN+Relu, MatMul+Add+Relu, Conv+Add+Relu) against
// the unfused graph and a reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../graph_builder.h"
#include "engine/session.h"
#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "kernels/kernel.h"
#include "kernels/cpu/conv_dnnl.h"
#include "kernels/cpu/gemm.h"

namespace oneflow {
namespace {

std::vector<float> Random(std::mt19937& rng, int64_t n) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

Tensor MakeTensor(const Shape& s, const std::vector<float>& v) {
  Tensor t(DType::kFloat32, s);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

Tensor RandomTensor(std::mt19937& rng, const Shape& s) { return MakeTensor(s, Random(rng, NumElements(s))); }

void ExpectNear(const Tensor& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  int bad = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.data<float>()[i], w = want[static_cast<size_t>(i)];
    if (!(std::fabs(g - w) <= tol * (1.0 + std::fabs(w))) && ++bad <= 3)
      ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w;
  }
  EXPECT_EQ(bad, 0) << what;
}

// ---- SGEMM -----------------------------------------------------------------------------------

TEST(Sgemm, RandomShapesMatchNaive) {
  std::mt19937 rng(42);
  struct Case { int64_t m, n, k; };
  const Case cases[] = {{1, 1, 1}, {3, 5, 7}, {14, 32, 16}, {15, 33, 17}, {29, 65, 1030}, {100, 47, 300},
                        {1, 300, 64}, {300, 1, 64}, {57, 2100, 5}, {0, 5, 5}, {4, 4, 0}};
  for (int config = 0; config < 4; ++config) {
    const int threads = 1 + config % 2;
    SetDnnlGemmEnabled(config < 2);  // raw operands: oneDNN slices, then our own microkernel
    ThreadPool pool(threads);
    for (const Case& c : cases) {
      for (int variant = 0; variant < 8; ++variant) {
        const bool ta = variant & 1, tb = variant & 2, packed = variant & 4;
        const float alpha = variant % 3 == 0 ? 1.0f : 0.75f;
        const float beta = variant % 3 == 2 ? 0.5f : 0.0f;
        std::vector<float> A = Random(rng, c.m * c.k), B = Random(rng, c.k * c.n), C = Random(rng, c.m * c.n);
        std::vector<float> bias = Random(rng, c.n), rbias = Random(rng, c.m);
        const int64_t lda = ta ? c.m : c.k, ldb = tb ? c.k : c.n;
        std::vector<double> want(static_cast<size_t>(c.m * c.n));
        for (int64_t i = 0; i < c.m; ++i)
          for (int64_t j = 0; j < c.n; ++j) {
            double s = 0;
            for (int64_t k = 0; k < c.k; ++k)
              s += static_cast<double>(ta ? A[k * lda + i] : A[i * lda + k]) * (tb ? B[j * ldb + k] : B[k * ldb + j]);
            double v = alpha * s + beta * C[i * c.n + j] + bias[j] + rbias[i];
            want[i * c.n + j] = variant & 1 ? std::max(v, 0.0) : v;
          }
        GemmEpilogue ep;
        ep.col_bias = bias.data();
        ep.row_bias = rbias.data();
        ep.act.kind = variant & 1 ? Activation::kRelu : Activation::kNone;
        PackedMatrix pa, pb;
        GemmOperand a = GemmOperand::Raw(A.data(), lda, ta), b = GemmOperand::Raw(B.data(), ldb, tb);
        if (packed) {
          pa = PackGemmA(c.m, c.k, A.data(), lda, ta);
          pb = PackGemmB(c.k, c.n, B.data(), ldb, tb);
          a = GemmOperand::Packed(pa);
          b = GemmOperand::Packed(pb);
        }
        std::vector<float> got = C;
        Sgemm(c.m, c.n, c.k, alpha, a, b, beta, got.data(), c.n, &ep, &pool);
        Tensor t = MakeTensor({c.m * c.n}, got);
        ExpectNear(t, want, 2e-5 * (1 + c.k), "sgemm " + std::to_string(c.m) + "x" + std::to_string(c.n) + "x" +
                                                   std::to_string(c.k) + " variant " + std::to_string(variant) +
                                                   " threads " + std::to_string(threads) + " config " +
                                                   std::to_string(config));
      }
    }
  }
  SetDnnlGemmEnabled(true);
}

// ---- One-node graphs ---------------------------------------------------------------------------

// A builder whose inputs are fed the given tensors when the graph runs.
struct GraphBuilder : test_util::GraphBuilder {
  std::vector<std::pair<std::string, Tensor>> feeds;
  int Input(const std::string& name, const Tensor& t) {
    const int v = test_util::GraphBuilder::Input(name, TensorType::Of(t.dtype(), t.shape()));
    feeds.emplace_back(name, t);
    return v;
  }
  Tensor Run(int output, int threads, int level) {
    Graph copy = g;
    copy.outputs = {output};
    PrepareGraph(copy);
    Session s(copy, SessionOptions{threads, level});
    return s.Run(feeds, {})[0].second;
  }
};

// Naive N-d convolution in double; x [N, C, in...], w [M, C/G, k...].
std::vector<double> NaiveConv(const Tensor& x, const Tensor& w, const Tensor* b, const Shape& out,
                              const std::vector<int64_t>& strides, const std::vector<int64_t>& dil,
                              const std::vector<int64_t>& pad_begin, int64_t group) {
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), S = x.rank() - 2;
  const int64_t Cg = C / group, Mg = M / group;
  std::vector<double> y(static_cast<size_t>(NumElements(out)));
  const Shape in(x.shape().begin() + 2, x.shape().end()), ks(w.shape().begin() + 2, w.shape().end());
  const Shape os(out.begin() + 2, out.end());
  const int64_t osz = NumElements(os), ksz = NumElements(ks), isz = NumElements(in);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < osz; ++o) {
        double s = b ? b->data<float>()[m] : 0.0;
        const int64_t g = m / Mg;
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t k = 0; k < ksz; ++k) {
            int64_t orem = o, krem = k, idx = 0;
            bool inside = true;
            std::vector<int64_t> pos(static_cast<size_t>(S));
            for (int64_t d = S - 1; d >= 0; --d) {
              const int64_t od = orem % os[d], kd = krem % ks[d];
              orem /= os[d];
              krem /= ks[d];
              pos[d] = od * strides[d] - pad_begin[d] + kd * dil[d];
              if (pos[d] < 0 || pos[d] >= in[d]) inside = false;
            }
            if (!inside) continue;
            for (int64_t d = 0; d < S; ++d) idx = idx * in[d] + pos[d];
            s += static_cast<double>(x.data<float>()[(n * C + g * Cg + c) * isz + idx]) *
                 w.data<float>()[(m * Cg + c) * ksz + k];
          }
        y[static_cast<size_t>((n * M + m) * osz + o)] = s;
      }
  return y;
}

TEST(Conv, RandomShapesMatchNaive) {
  std::mt19937 rng(7);
  struct Case {
    Shape x;
    int64_t m, group;
    Shape k;
    std::vector<int64_t> strides, dil, pads;
    const char* auto_pad;
  };
  const std::vector<Case> cases = {
      {{1, 3, 9, 11}, 5, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, "NOTSET"},
      {{2, 4, 10, 7}, 6, 2, {3, 2}, {2, 1}, {1, 2}, {0, 1, 2, 0}, "NOTSET"},
      {{1, 6, 13, 13}, 6, 6, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, "NOTSET"},   // depthwise, strided
      {{1, 4, 8, 9}, 8, 4, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, "NOTSET"},     // depthwise x2, dilated
      {{1, 8, 7, 7}, 16, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, "NOTSET"},    // pointwise
      {{1, 3, 11, 10}, 4, 1, {3, 3}, {2, 3}, {1, 1}, {}, "SAME_UPPER"},
      {{1, 3, 11, 10}, 4, 1, {4, 3}, {2, 2}, {1, 1}, {}, "SAME_LOWER"},
      {{1, 3, 11, 10}, 4, 1, {3, 5}, {2, 2}, {1, 1}, {}, "VALID"},
      {{2, 3, 17}, 4, 1, {3}, {2}, {2}, {1, 2}, "NOTSET"},                      // 1-D
      {{1, 4, 5, 6, 7}, 6, 2, {2, 3, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}, "NOTSET"},  // 3-D
      {{1, 70, 12, 12}, 36, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, "NOTSET"}, // K = 630
      {{2, 32, 9, 9}, 50, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1, 0, 0}, "NOTSET"},   // blocked src, M % 16 != 0
      {{1, 16, 8, 8}, 64, 1, {3, 3}, {1, 1}, {2, 1}, {2, 1, 1, 0}, "NOTSET"},   // dilated, asymmetric pads
      {{2, 6, 15, 1}, 5, 1, {5, 1}, {2, 1}, {2, 1}, {3, 0, 1, 0}, "NOTSET"},    // k x 1 on width 1 (run as 1 x k)
      {{1, 8, 11, 1}, 8, 4, {3, 1}, {1, 1}, {1, 1}, {1, 0, 1, 0}, "NOTSET"},    // the same, grouped
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    Shape wshape = {c.m, c.x[1] / c.group};
    wshape.insert(wshape.end(), c.k.begin(), c.k.end());
    Tensor x = RandomTensor(rng, c.x), w = RandomTensor(rng, wshape), b = RandomTensor(rng, {c.m});
    const size_t S = c.k.size();
    std::vector<int64_t> pb(S, 0);
    Shape out = {c.x[0], c.m};
    for (size_t d = 0; d < S; ++d) {
      const int64_t eff = (c.k[d] - 1) * c.dil[d] + 1, in = c.x[d + 2];
      std::string ap = c.auto_pad;
      if (ap == "NOTSET") {
        pb[d] = c.pads[d];
        out.push_back((in + c.pads[d] + c.pads[d + S] - eff) / c.strides[d] + 1);
      } else if (ap == "VALID") {
        out.push_back((in - eff) / c.strides[d] + 1);
      } else {
        const int64_t o = (in + c.strides[d] - 1) / c.strides[d];
        const int64_t total = std::max<int64_t>(0, (o - 1) * c.strides[d] + eff - in);
        pb[d] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
        out.push_back(o);
      }
    }
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
      std::vector<double> want = NaiveConv(x, w, with_bias ? &b : nullptr, out, c.strides, c.dil, pb, c.group);
      // const_w 0: W is an input; 1: constant W (oneDNN conv when built in); 2: constant W on
      // im2col + oneDNN sgemm; 3: im2col + our packed microkernel.
      for (int const_w = 0; const_w < 4; ++const_w) {
        SetDnnlConvEnabled(const_w < 2);
        SetDnnlGemmEnabled(const_w != 3);
        for (int threads : {1, 2}) {
          GraphBuilder gb;
          AttrMap a;
          a.set("group", Attribute::Int(c.group));
          a.set("strides", Attribute::Ints(c.strides));
          a.set("dilations", Attribute::Ints(c.dil));
          a.set("kernel_shape", Attribute::Ints(c.k));
          a.set("auto_pad", Attribute::String(c.auto_pad));
          if (!c.pads.empty()) a.set("pads", Attribute::Ints(c.pads));
          std::vector<int> ins = {gb.Input("X", x), const_w ? gb.Const("W", w) : gb.Input("W", w)};
          if (with_bias) ins.push_back(gb.Const("B", b));
          int y = gb.Node("Conv", ins, a);
          Tensor got = gb.Run(y, threads, 2);
          EXPECT_EQ(got.shape(), out) << "case " << ci;
          ExpectNear(got, want, 1e-4, "conv case " + std::to_string(ci) + " bias " + std::to_string(with_bias) +
                                          " const_w " + std::to_string(const_w) + " threads " + std::to_string(threads));
        }
      }
      SetDnnlConvEnabled(true);
      SetDnnlGemmEnabled(true);
    }
  }
}

// A symbolic batch dim: the kernel builds its oneDNN plan per input shape at run time.
TEST(Conv, SymbolicBatchRunsSeveralShapes) {
  std::mt19937 rng(21);
  Tensor w = RandomTensor(rng, {16, 8, 3, 3}), b = RandomTensor(rng, {16});
  Graph g;
  g.opset_imports[""] = 17;
  int x = g.AddValue("X", TensorType::Of(DType::kFloat32, {Dim::Symbol("N"), Dim::Known(8), Dim::Known(10), Dim::Known(10)}));
  g.inputs.push_back(x);
  Node n;
  n.op_type = "Conv";
  n.opset = 17;
  n.inputs = {x, g.AddConstant("W", w), g.AddConstant("B", b)};
  n.outputs = {g.AddValue("Y")};
  n.attrs.set("pads", Attribute::Ints({1, 1, 1, 1}));
  n.attrs.set("strides", Attribute::Ints({2, 2}));
  g.outputs = n.outputs;
  g.nodes.push_back(n);
  PrepareGraph(g);
  for (int threads : {1, 2}) {
    Session s(g, SessionOptions{threads, 2});
    for (int64_t batch : {1, 3, 1, 2}) {
      Tensor xt = RandomTensor(rng, {batch, 8, 10, 10});
      Tensor got = s.Run({{"X", xt}}, {})[0].second;
      ExpectNear(got, NaiveConv(xt, w, &b, {batch, 16, 5, 5}, {2, 2}, {1, 1}, {1, 1}, 1), 1e-4,
                 "batch " + std::to_string(batch));
    }
  }
}

// ConvTranspose as the adjoint of Conv: y[n, m, i*s - p + k*d] += x[n, c, i] * w[c, m, k].
TEST(ConvTranspose, RandomShapesMatchNaive) {
  std::mt19937 rng(11);
  struct Case {
    Shape x;
    int64_t mg, group;
    Shape k;
    std::vector<int64_t> strides, dil, pads, out_pad;
  };
  const std::vector<Case> cases = {
      {{1, 3, 5, 4}, 2, 1, {3, 3}, {2, 1}, {1, 1}, {1, 0, 0, 1}, {1, 0}},
      {{2, 4, 3, 5}, 3, 2, {2, 3}, {1, 2}, {2, 1}, {0, 0, 0, 0}, {0, 0}},
      {{1, 5, 7}, 2, 1, {4}, {3}, {1}, {2, 1}, {2}},
      {{1, 2, 3, 3, 4}, 2, 2, {2, 2, 3}, {2, 1, 2}, {1, 1, 1}, {0, 1, 0, 1, 0, 0}, {1, 0, 0}},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    const size_t S = c.k.size();
    Shape wshape = {c.x[1], c.mg};
    wshape.insert(wshape.end(), c.k.begin(), c.k.end());
    Tensor x = RandomTensor(rng, c.x), w = RandomTensor(rng, wshape), b = RandomTensor(rng, {c.mg * c.group});
    Shape out = {c.x[0], c.mg * c.group};
    for (size_t d = 0; d < S; ++d)
      out.push_back(c.strides[d] * (c.x[d + 2] - 1) + c.out_pad[d] + (c.k[d] - 1) * c.dil[d] + 1 - c.pads[d] -
                    c.pads[d + S]);
    const int64_t N = c.x[0], C = c.x[1], M = out[1], Cg = C / c.group;
    const Shape in(c.x.begin() + 2, c.x.end()), os(out.begin() + 2, out.end());
    const int64_t isz = NumElements(in), osz = NumElements(os), ksz = NumElements(c.k);
    std::vector<double> want(static_cast<size_t>(NumElements(out)));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t o = 0; o < osz; ++o) want[(n * M + m) * osz + o] = b.data<float>()[m];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c0 = 0; c0 < C; ++c0)
        for (int64_t i = 0; i < isz; ++i)
          for (int64_t ml = 0; ml < c.mg; ++ml)
            for (int64_t k = 0; k < ksz; ++k) {
              int64_t irem = i, krem = k, idx = 0;
              bool inside = true;
              std::vector<int64_t> pos(S);
              for (int64_t d = static_cast<int64_t>(S) - 1; d >= 0; --d) {
                const int64_t id = irem % in[d], kd = krem % c.k[d];
                irem /= in[d];
                krem /= c.k[d];
                pos[d] = id * c.strides[d] - c.pads[d] + kd * c.dil[d];
                if (pos[d] < 0 || pos[d] >= os[d]) inside = false;
              }
              if (!inside) continue;
              for (size_t d = 0; d < S; ++d) idx = idx * os[d] + pos[d];
              const int64_t m = (c0 / Cg) * c.mg + ml;
              want[(n * M + m) * osz + idx] += static_cast<double>(x.data<float>()[(n * C + c0) * isz + i]) *
                                               w.data<float>()[(c0 * c.mg + ml) * ksz + k];
            }
    for (int threads : {1, 2}) {
      GraphBuilder gb;
      AttrMap a;
      a.set("group", Attribute::Int(c.group));
      a.set("strides", Attribute::Ints(c.strides));
      a.set("dilations", Attribute::Ints(c.dil));
      a.set("pads", Attribute::Ints(c.pads));
      a.set("output_padding", Attribute::Ints(c.out_pad));
      int y = gb.Node("ConvTranspose", {gb.Input("X", x), gb.Const("W", w), gb.Const("B", b)}, a);
      Tensor got = gb.Run(y, threads, 2);
      EXPECT_EQ(got.shape(), out) << "case " << ci;
      ExpectNear(got, want, 1e-4, "convtranspose case " + std::to_string(ci) + " threads " + std::to_string(threads));
    }
  }
}

TEST(MatMul, BroadcastAndOneDimensionalOperands) {
  std::mt19937 rng(3);
  const std::pair<Shape, Shape> cases[] = {{{7}, {7}},          {{5}, {3, 5, 4}},       {{2, 3, 5, 6}, {6}},
                                           {{3, 1, 4, 9}, {2, 9, 5}}, {{2, 37, 65}, {65, 33}}, {{4, 33, 20}, {1, 20, 31}},
                                           {{130, 300}, {300, 70}}, {{2, 3, 0}, {0, 4}}};
  for (const auto& [as, bs] : cases) {
    Tensor a = RandomTensor(rng, as), b = RandomTensor(rng, bs);
    // numpy matmul via explicit broadcasting.
    Shape ad = as, bd = bs;
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
    const size_t r = std::max(ad.size(), bd.size()) - 2;
    Shape batch(r, 1);
    for (size_t i = 0; i < r; ++i) {
      int64_t x = i + ad.size() - 2 >= r ? ad[i + ad.size() - 2 - r] : 1;
      int64_t y = i + bd.size() - 2 >= r ? bd[i + bd.size() - 2 - r] : 1;
      batch[i] = std::max(x, y);
    }
    const int64_t nb = NumElements(batch);
    std::vector<double> want(static_cast<size_t>(nb * M * N));
    for (int64_t bi = 0; bi < nb; ++bi) {
      int64_t aoff = 0, boff = 0, rem = bi, astride = 1, bstride = 1;
      for (size_t d = r; d-- > 0;) {
        const int64_t idx = rem % batch[d];
        rem /= batch[d];
        const int64_t ai = static_cast<int64_t>(d + ad.size()) - 2 - static_cast<int64_t>(r);
        const int64_t bi2 = static_cast<int64_t>(d + bd.size()) - 2 - static_cast<int64_t>(r);
        if (ai >= 0) {
          aoff += (ad[ai] == 1 ? 0 : idx) * astride;
          astride *= ad[ai];
        }
        if (bi2 >= 0) {
          boff += (bd[bi2] == 1 ? 0 : idx) * bstride;
          bstride *= bd[bi2];
        }
      }
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = 0;
          for (int64_t k = 0; k < K; ++k)
            s += static_cast<double>(a.data<float>()[aoff * M * K + i * K + k]) * b.data<float>()[boff * K * N + k * N + j];
          want[(bi * M + i) * N + j] = s;
        }
    }
    for (int threads : {1, 2})
      for (int const_b = 0; const_b < 2; ++const_b) {
        GraphBuilder gb;
        int y = gb.Node("MatMul", {gb.Input("A", a), const_b ? gb.Const("B", b) : gb.Input("B", b)});
        Tensor got = gb.Run(y, threads, 2);
        ExpectNear(got, want, 1e-4, "matmul " + ShapeToString(as) + "x" + ShapeToString(bs));
      }
  }
}

// ---- Fusion ------------------------------------------------------------------------------------

// Runs at levels 0 and 2, compares them (when every op of the unfused graph exists in this
// build) and returns the optimized run's output and op list.
Tensor RunBothLevels(GraphBuilder& gb, int y, std::vector<std::string>& fused_ops, bool compare_unfused) {
  Graph copy = gb.g;
  copy.outputs = {y};
  PrepareGraph(copy);
  Session s2(copy, SessionOptions{2, 2});
  // The layout pass (passes/layout.cc) surrounds NHWC convs with Transposes: not fusions.
  for (const Node& n : s2.optimized().nodes)
    if (n.op_type != "Transpose") fused_ops.push_back(n.op_type);
  Tensor fused = s2.Run(gb.feeds, {})[0].second;
  if (compare_unfused) {
    Session s0(copy, SessionOptions{1, 0});
    Tensor plain = s0.Run(gb.feeds, {})[0].second;
    EXPECT_EQ(plain.shape(), fused.shape());
    for (int64_t i = 0; i < plain.numel(); ++i)
      EXPECT_NEAR(plain.data<float>()[i], fused.data<float>()[i], 1e-4 * (1 + std::fabs(plain.data<float>()[i])));
  }
  return fused;
}

TEST(Fusion, ConvBatchNormRelu) {
  std::mt19937 rng(5);
  Tensor x = RandomTensor(rng, {1, 3, 8, 8}), w = RandomTensor(rng, {4, 3, 3, 3}), b = RandomTensor(rng, {4});
  Tensor scale = RandomTensor(rng, {4}), bias = RandomTensor(rng, {4}), mean = RandomTensor(rng, {4});
  std::vector<float> var = Random(rng, 4);
  for (float& v : var) v = std::fabs(v) + 0.1f;
  GraphBuilder gb;
  AttrMap ca;
  ca.set("pads", Attribute::Ints({1, 1, 1, 1}));
  int c = gb.Node("Conv", {gb.Input("X", x), gb.Const("W", w), gb.Const("B", b)}, ca);
  AttrMap ba;
  ba.set("epsilon", Attribute::Float(1e-3f));
  int bn = gb.Node("BatchNormalization", {c, gb.Const("scale", scale), gb.Const("bias", bias), gb.Const("mean", mean),
                                          gb.Const("var", MakeTensor({4}, var))}, ba);
  int y = gb.Node("Relu", {bn});
  std::vector<std::string> ops;
  Tensor got = RunBothLevels(gb, y, ops, true);
  EXPECT_EQ(ops, std::vector<std::string>{"FusedConv"});
  std::vector<double> want = NaiveConv(x, w, &b, {1, 4, 8, 8}, {1, 1}, {1, 1}, {1, 1}, 1);
  for (int64_t m = 0; m < 4; ++m)
    for (int64_t i = 0; i < 64; ++i) {
      double& v = want[static_cast<size_t>(m * 64 + i)];
      v = (v - mean.data<float>()[m]) / std::sqrt(var[static_cast<size_t>(m)] + 1e-3) * scale.data<float>()[m] +
          bias.data<float>()[m];
      v = std::max(v, 0.0);
    }
  ExpectNear(got, want, 1e-4, "conv+bn+relu");
}

TEST(Fusion, MatMulAddRelu) {
  std::mt19937 rng(9);
  Tensor a = RandomTensor(rng, {2, 5, 24}), w = RandomTensor(rng, {24, 40}), bias = RandomTensor(rng, {40});
  GraphBuilder gb;
  int mm = gb.Node("MatMul", {gb.Input("A", a), gb.Const("W", w)});
  int add = gb.Node("Add", {mm, gb.Const("bias", bias)});
  int y = gb.Node("Relu", {add});
  std::vector<std::string> ops;
  // The unfused Add needs broadcasting, which may not be in this build yet.
  bool add_broadcasts = true;
  try {
    GraphBuilder probe;
    int s = probe.Node("Add", {probe.Input("P", a), probe.Const("Q", bias)});
    probe.Run(s, 1, 0);
  } catch (const Error&) {
    add_broadcasts = false;
  }
  Tensor got = RunBothLevels(gb, y, ops, add_broadcasts);
  EXPECT_EQ(ops, std::vector<std::string>{"FusedMatMul"});
  std::vector<double> want(2 * 5 * 40);
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t j = 0; j < 40; ++j) {
      double s = bias.data<float>()[j];
      for (int64_t k = 0; k < 24; ++k) s += static_cast<double>(a.data<float>()[r * 24 + k]) * w.data<float>()[k * 40 + j];
      want[static_cast<size_t>(r * 40 + j)] = std::max(s, 0.0);
    }
  ExpectNear(got, want, 1e-4, "matmul+add+relu");
}

TEST(Fusion, ConvResidualAddRelu) {
  std::mt19937 rng(13);
  Tensor x = RandomTensor(rng, {1, 8, 6, 6}), w = RandomTensor(rng, {8, 8, 3, 3});
  GraphBuilder gb;
  AttrMap ca;
  ca.set("pads", Attribute::Ints({1, 1, 1, 1}));
  int xin = gb.Input("X", x);
  int c = gb.Node("Conv", {xin, gb.Const("W", w)}, ca);
  int add = gb.Node("Add", {c, xin});
  int y = gb.Node("Relu", {add});
  std::vector<std::string> ops;
  Tensor got = RunBothLevels(gb, y, ops, true);
  EXPECT_EQ(ops, std::vector<std::string>{"FusedConv"});
  std::vector<double> want = NaiveConv(x, w, nullptr, {1, 8, 6, 6}, {1, 1}, {1, 1}, {1, 1}, 1);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(want[i] + x.data<float>()[i], 0.0);
  ExpectNear(got, want, 1e-4, "conv+add+relu");
}

// Every activation the pass folds into an epilogue, on Gemm, MatMul+bias and Conv: fused output ==
// unfused output (activations not registered in this build are skipped).
TEST(Fusion, EveryActivationMatchesUnfused) {
  struct Act {
    const char* op;
    int opset;
    AttrMap attrs;
    std::vector<float> clip;  // Clip min/max inputs
  };
  std::vector<Act> acts;
  acts.push_back({"Relu", 17, {}, {}});
  acts.push_back({"Sigmoid", 17, {}, {}});
  acts.push_back({"Tanh", 17, {}, {}});
  acts.push_back({"HardSwish", 17, {}, {}});
  AttrMap leaky;
  leaky.set("alpha", Attribute::Float(0.2f));
  acts.push_back({"LeakyRelu", 17, leaky, {}});
  acts.push_back({"Clip", 17, {}, {-0.3f, 0.4f}});
  acts.push_back({"Gelu", 20, {}, {}});
  AttrMap tanh_gelu;
  tanh_gelu.set("approximate", Attribute::String("tanh"));
  acts.push_back({"Gelu", 20, tanh_gelu, {}});
  std::mt19937 rng(23);
  int tested = 0;
  for (const Act& act : acts) {
    if (!OpRegistry::Global().Find("", act.op, act.opset)) continue;
    for (int base = 0; base < 3; ++base) {
      GraphBuilder gb;
      gb.g.opset_imports[""] = act.opset;
      int pre;
      if (base == 0) {
        AttrMap ga;
        ga.set("transB", Attribute::Int(1));
        pre = gb.Node("Gemm", {gb.Input("A", RandomTensor(rng, {5, 12})), gb.Const("B", RandomTensor(rng, {20, 12})),
                               gb.Const("C", RandomTensor(rng, {20}))}, ga);
      } else if (base == 1) {
        int mm = gb.Node("MatMul", {gb.Input("A", RandomTensor(rng, {3, 12})), gb.Const("B", RandomTensor(rng, {12, 20}))});
        pre = gb.Node("Add", {gb.Const("bias", RandomTensor(rng, {20})), mm});
      } else {
        AttrMap ca;
        ca.set("pads", Attribute::Ints({1, 1, 1, 1}));
        pre = gb.Node("Conv", {gb.Input("X", RandomTensor(rng, {1, 4, 6, 6})), gb.Const("W", RandomTensor(rng, {8, 4, 3, 3})),
                               gb.Const("Bc", RandomTensor(rng, {8}))}, ca);
      }
      std::vector<int> ins = {pre};
      if (!act.clip.empty()) {
        ins.push_back(gb.Const("lo", MakeTensor({}, {act.clip[0]})));
        ins.push_back(gb.Const("hi", MakeTensor({}, {act.clip[1]})));
      }
      for (Node& n : gb.g.nodes) n.opset = act.opset;
      int y = gb.Node(act.op, ins, act.attrs);
      gb.g.nodes.back().opset = act.opset;
      std::vector<std::string> ops;
      bool unfused_runs = true;
      try {
        gb.Run(y, 1, 0);
      } catch (const Error&) {
        unfused_runs = false;  // e.g. Add without broadcasting in a partial build
      }
      RunBothLevels(gb, y, ops, unfused_runs);
      EXPECT_EQ(ops.size(), 1u) << act.op << " on base " << base;
      ++tested;
    }
  }
  RecordProperty("fused_cases", tested);
  EXPECT_GT(tested, 0);
}

TEST(Fusion, IntermediateWithTwoConsumersIsNotFused) {
  std::mt19937 rng(17);
  Tensor x = RandomTensor(rng, {1, 2, 5, 5}), w = RandomTensor(rng, {2, 2, 3, 3});
  GraphBuilder gb;
  int c = gb.Node("Conv", {gb.Input("X", x), gb.Const("W", w)});
  int r = gb.Node("Relu", {c});
  int y = gb.Node("Add", {r, c});
  std::vector<std::string> ops;
  RunBothLevels(gb, y, ops, true);
  // The conv may run NHWC (a FusedConv with the layout attribute) but absorbs nothing; Relu and
  // Add, which both read it, become one FusedElementwise (passes/elementwise_fusion.cc).
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_TRUE(ops[0] == "Conv" || ops[0] == "FusedConv") << ops[0];
  EXPECT_EQ(ops[1], "FusedElementwise");
}

}  // namespace
}  // namespace oneflow
