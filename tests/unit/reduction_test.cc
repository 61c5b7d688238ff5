// Reduction and normalization kernels on large random inputs (multi-threaded paths) vs naive loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "../graph_builder.h"
#include "../run_node.h"
#include "kernels/node_runner.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

Tensor RandomFloats(const Shape& shape, uint32_t seed, float lo = -3.0f, float hi = 3.0f) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(gen);
  return t;
}

using test_util::Ints;

// One node through the executor's path (tests/run_node.h).
std::vector<Tensor> RunOp(const std::string& op, int opset, const std::vector<Tensor>& inputs, AttrMap attrs,
                          size_t num_outputs, ThreadPool& pool) {
  return test_util::RunNode({op, "", opset, std::move(attrs), inputs, num_outputs}, pool);
}

AttrMap Attrs(std::initializer_list<std::pair<const char*, Attribute>> kv) {
  AttrMap m;
  for (auto& p : kv) m.set(p.first, p.second);
  return m;
}

void ExpectClose(const Tensor& got, const std::vector<double>& want, double rtol, double atol) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetAsDouble(i);
    ASSERT_NEAR(g, want[i], atol + rtol * std::abs(want[i])) << "at " << i;
  }
}

// Naive reduction of a rank-3 tensor over a mask of axes, returning values in output order.
std::vector<double> NaiveReduce3(const Tensor& x, const std::vector<bool>& red, int kind /*0 sum 1 max 2 lse*/) {
  const int64_t d0 = x.dim(0), d1 = x.dim(1), d2 = x.dim(2);
  const int64_t o0 = red[0] ? 1 : d0, o1 = red[1] ? 1 : d1, o2 = red[2] ? 1 : d2;
  std::vector<double> acc(static_cast<size_t>(o0 * o1 * o2), kind == 0 ? 0.0 : -INFINITY);
  const float* p = x.data<float>();
  auto out_index = [&](int64_t i, int64_t j, int64_t k) {
    return ((red[0] ? 0 : i) * o1 + (red[1] ? 0 : j)) * o2 + (red[2] ? 0 : k);
  };
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j)
      for (int64_t k = 0; k < d2; ++k) {
        double v = p[(i * d1 + j) * d2 + k];
        double& a = acc[out_index(i, j, k)];
        a = kind == 0 ? a + v : std::max(a, v);
      }
  if (kind == 2) {
    std::vector<double> s(acc.size(), 0.0);
    for (int64_t i = 0; i < d0; ++i)
      for (int64_t j = 0; j < d1; ++j)
        for (int64_t k = 0; k < d2; ++k) {
          int64_t o = out_index(i, j, k);
          s[o] += std::exp(p[(i * d1 + j) * d2 + k] - acc[o]);
        }
    for (size_t o = 0; o < acc.size(); ++o) acc[o] += std::log(s[o]);
  }
  return acc;
}

TEST(Reduce, SumMaxLogSumExpOverAxisCombinations) {
  ThreadPool pool(2);
  const Tensor x = RandomFloats({9, 301, 131}, 1);
  const std::vector<std::vector<int64_t>> axes_list = {{2}, {1}, {0}, {0, 2}, {1, 2}, {0, 1}, {}};
  for (const auto& axes : axes_list) {
    std::vector<bool> red(3, axes.empty());
    for (int64_t a : axes) red[a] = true;
    struct Case { const char* op; int kind; double rtol; };
    for (const Case c : {Case{"ReduceSum", 0, 1e-4}, Case{"ReduceMax", 1, 0}, Case{"ReduceLogSumExp", 2, 1e-5}}) {
      auto out = RunOp(c.op, 18, {x, Ints(axes)}, Attrs({{"keepdims", Attribute::Int(0)}}), 1, pool);
      SCOPED_TRACE(std::string(c.op) + " axes " + std::to_string(axes.size()));
      ExpectClose(out[0], NaiveReduce3(x, red, c.kind), c.rtol, c.kind == 0 ? 2e-3 : 1e-5);
    }
  }
}

TEST(Reduce, FullReductionOfLongVectorSplitsAcrossThreads) {
  ThreadPool pool(2);
  const Tensor x = RandomFloats({1 << 20}, 2, 0.0f, 1.0f);
  double want = 0;
  for (int64_t i = 0; i < x.numel(); ++i) want += x.data<float>()[i];
  auto out = RunOp("ReduceMean", 18, {x}, AttrMap(), 1, pool);
  ASSERT_EQ(out[0].rank(), 1);
  ExpectClose(out[0], {want / x.numel()}, 1e-5, 0);
  auto sum = RunOp("ReduceSum", 13, {x, Ints({0})}, Attrs({{"keepdims", Attribute::Int(0)}}), 1, pool);
  ExpectClose(sum[0], {want}, 1e-5, 0);
}

TEST(Reduce, IntegerSumAndEmptySet) {
  ThreadPool pool(2);
  Tensor x(DType::kInt64, {40, 3000});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<int64_t>()[i] = (i * 7919) % 1000 - 500;
  auto out = RunOp("ReduceSum", 13, {x, Ints({0})}, AttrMap(), 1, pool);
  for (int64_t j = 0; j < 3000; ++j) {
    int64_t s = 0;
    for (int64_t i = 0; i < 40; ++i) s += x.data<int64_t>()[i * 3000 + j];
    ASSERT_EQ(out[0].data<int64_t>()[j], s);
  }
  Tensor empty(DType::kFloat32, {2, 0, 4});
  auto p = RunOp("ReduceProd", 18, {empty, Ints({1})}, AttrMap(), 1, pool);
  ExpectClose(p[0], std::vector<double>(8, 1.0), 0, 0);
  auto m = RunOp("ReduceMin", 18, {empty, Ints({1})}, AttrMap(), 1, pool);
  EXPECT_TRUE(std::isinf(m[0].data<float>()[0]) && m[0].data<float>()[0] > 0);
}

TEST(Softmax, LastAndMiddleAxisMatchNaive) {
  ThreadPool pool(2);
  for (int64_t axis : {2, 1}) {
    const Tensor x = RandomFloats({6, 257, 129}, 3, -20.0f, 20.0f);
    for (bool log : {false, true}) {
      auto out = RunOp(log ? "LogSoftmax" : "Softmax", 13, {x}, Attrs({{"axis", Attribute::Int(axis)}}), 1, pool);
      const int64_t outer = axis == 2 ? 6 * 257 : 6, n = x.dim(axis), inner = axis == 2 ? 1 : 129;
      std::vector<double> want(static_cast<size_t>(x.numel()));
      const float* p = x.data<float>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t c = 0; c < inner; ++c) {
          double m = -INFINITY, s = 0;
          for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<double>(p[(o * n + i) * inner + c]));
          for (int64_t i = 0; i < n; ++i) s += std::exp(p[(o * n + i) * inner + c] - m);
          for (int64_t i = 0; i < n; ++i) {
            const double v = p[(o * n + i) * inner + c] - m;
            want[(o * n + i) * inner + c] = log ? v - std::log(s) : std::exp(v) / s;
          }
        }
      SCOPED_TRACE(std::string(log ? "LogSoftmax" : "Softmax") + " axis " + std::to_string(axis));
      ExpectClose(out[0], want, 1e-5, 1e-7);
    }
  }
}

TEST(LayerNorm, RowsMatchNaiveIncludingStats) {
  ThreadPool pool(2);
  const Tensor x = RandomFloats({300, 768}, 4, -5.0f, 7.0f);
  const Tensor scale = RandomFloats({768}, 5), bias = RandomFloats({768}, 6);
  auto out = RunOp("LayerNormalization", 17, {x, scale, bias}, AttrMap(), 3, pool);
  std::vector<double> want(static_cast<size_t>(x.numel())), means(300), invs(300);
  for (int64_t r = 0; r < 300; ++r) {
    const float* row = x.data<float>() + r * 768;
    double m = 0, v = 0;
    for (int64_t i = 0; i < 768; ++i) m += row[i];
    m /= 768;
    for (int64_t i = 0; i < 768; ++i) v += (row[i] - m) * (row[i] - m);
    const double inv = 1.0 / std::sqrt(v / 768 + 1e-5);
    means[r] = m;
    invs[r] = inv;
    for (int64_t i = 0; i < 768; ++i)
      want[r * 768 + i] = (row[i] - m) * inv * scale.data<float>()[i] + bias.data<float>()[i];
  }
  ExpectClose(out[0], want, 1e-4, 1e-4);
  EXPECT_EQ(out[1].shape(), (Shape{300, 1}));
  ExpectClose(out[1], means, 1e-4, 1e-5);
  ExpectClose(out[2], invs, 1e-4, 0);
}

TEST(ArgTopKCumSum, MatchNaive) {
  ThreadPool pool(2);
  Tensor x = RandomFloats({40, 500, 33}, 7);
  for (int64_t i = 0; i < x.numel(); i += 3) x.data<float>()[i] = std::round(x.data<float>()[i]);  // ties
  const float* p = x.data<float>();
  auto am = RunOp("ArgMax", 13, {x}, Attrs({{"axis", Attribute::Int(1)}, {"select_last_index", Attribute::Int(1)}}), 1, pool);
  auto tk = RunOp("TopK", 13, {x, Ints({7})}, Attrs({{"axis", Attribute::Int(1)}}), 2, pool);
  auto cs = RunOp("CumSum", 14, {x, Ints({1})}, Attrs({{"reverse", Attribute::Int(1)}}), 1, pool);
  for (int64_t o = 0; o < 40; ++o)
    for (int64_t c = 0; c < 33; ++c) {
      std::vector<int64_t> order(500);
      std::iota(order.begin(), order.end(), 0);
      auto at = [&](int64_t i) { return p[(o * 500 + i) * 33 + c]; };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return at(a) > at(b); });
      int64_t last_max = 0;
      for (int64_t i = 0; i < 500; ++i) if (at(i) >= at(last_max)) last_max = i;
      ASSERT_EQ(am[0].data<int64_t>()[o * 33 + c], last_max);
      for (int64_t j = 0; j < 7; ++j) {
        ASSERT_EQ(tk[1].data<int64_t>()[(o * 7 + j) * 33 + c], order[j]);
        ASSERT_EQ(tk[0].data<float>()[(o * 7 + j) * 33 + c], at(order[j]));
      }
      double s = 0;
      for (int64_t i = 499; i >= 0; --i) {
        s += at(i);
        ASSERT_NEAR(cs[0].data<float>()[(o * 500 + i) * 33 + c], s, 1e-3);
      }
    }
}

}  // namespace
}  // namespace oneflow
