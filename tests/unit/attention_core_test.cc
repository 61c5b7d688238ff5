// The shared attention core (kernels/cpu/attention_core.h) against a direct double-precision loop:
// strided BSNH/BNSH views with a cache capacity above the key count, grouped heads, a bias row with
// masked keys and a fully masked row, the causal frontier through key_end (several row blocks),
// softcap, sinks, and the observer stages; and RotateHead against the rotation written out.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/attention_core.h"

namespace oneflow {
namespace {

struct Case {
  int64_t B = 2, Hq = 4, Hkv = 2, Sq = 100, T = 90, capacity = 96, D = 8, Dv = 5;
  bool causal = true, bias = true, sinks = true;
  float softcap = 0;
};

void Check(const Case& c) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  // q as [B, Sq, Hq * D] (BSNH); k, v as [B, Hkv, capacity, .] (BNSH with unused rows past T).
  std::vector<float> q(static_cast<size_t>(c.B * c.Sq * c.Hq * c.D)), k(static_cast<size_t>(c.B * c.Hkv * c.capacity * c.D)),
      v(static_cast<size_t>(c.B * c.Hkv * c.capacity * c.Dv)), y(static_cast<size_t>(c.B * c.Sq * c.Hq * c.Dv), -7.0f);
  for (auto* buf : {&q, &k, &v})
    for (float& x : *buf) x = dist(rng);
  std::vector<float> sinks = {0.5f, -1.0f, 2.0f, 0.0f};
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int64_t offset = c.T - c.Sq;  // the causal frontier: query i sees keys j <= offset + i
  auto bias_of = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> float {
    if (!c.bias) return 0.0f;
    if (b == 1 && i == 3) return neg_inf;               // a row with every key masked
    if ((i + j + h) % 7 == 0) return neg_inf;           // scattered masked keys
    return 0.1f * static_cast<float>((i * 3 + j + b) % 5) - 0.2f;
  };

  AttentionProblem<float> p;
  p.SetDims(c.B, c.Hq, c.Hkv, c.Sq, c.T, c.D, c.Dv);
  p.q = HeadView<const float>::Bsnh(q.data(), c.Sq, c.Hq, c.D);
  p.k = {k.data(), c.Hkv * c.capacity * c.D, c.capacity * c.D, c.D};
  p.v = {v.data(), c.Hkv * c.capacity * c.Dv, c.capacity * c.Dv, c.Dv};
  p.y = HeadView<float>::Bsnh(y.data(), c.Sq, c.Hq, c.Dv);
  p.scale = 0.3f;
  p.softcap = c.softcap;
  if (c.sinks) p.sinks = sinks.data();
  if (c.bias)
    p.bias = [&](int64_t b, int64_t h, int64_t i, float* row) {
      for (int64_t j = 0; j < c.T; ++j) row[j] += bias_of(b, h, i, j);
    };
  if (c.causal) p.key_end = [&](int64_t, int64_t i) { return offset + i + 1; };
  ThreadPool pool(2);
  RunAttention(p, pool);

  const int64_t group = c.Hq / c.Hkv;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.Sq; ++i) {
        const int64_t g = h / group;
        std::vector<double> s(static_cast<size_t>(c.T));
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.D; ++d)
            dot += static_cast<double>(q[((b * c.Sq + i) * c.Hq + h) * c.D + d]) * k[((b * c.Hkv + g) * c.capacity + j) * c.D + d];
          dot *= 0.3;
          if (c.softcap > 0) dot = c.softcap * std::tanh(dot / c.softcap);
          const float bj = bias_of(b, h, i, j);
          const bool masked = std::isinf(bj) || (c.causal && j > offset + i);
          s[static_cast<size_t>(j)] = masked ? -INFINITY : dot + bj;
          mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        std::vector<double> want(static_cast<size_t>(c.Dv), 0.0);
        if (mx != -INFINITY) {
          const double sink = c.sinks ? sinks[static_cast<size_t>(h)] : -INFINITY;
          if (c.sinks) mx = std::max(mx, sink);
          double sum = c.sinks ? std::exp(sink - mx) : 0.0;
          for (double& x : s) sum += x = std::exp(x - mx);
          for (int64_t j = 0; j < c.T; ++j)
            for (int64_t d = 0; d < c.Dv; ++d)
              want[static_cast<size_t>(d)] += s[static_cast<size_t>(j)] / sum * v[((b * c.Hkv + g) * c.capacity + j) * c.Dv + d];
        }
        for (int64_t d = 0; d < c.Dv; ++d)
          ASSERT_NEAR(y[((b * c.Sq + i) * c.Hq + h) * c.Dv + d], want[static_cast<size_t>(d)], 2e-5)
              << "b " << b << " h " << h << " i " << i << " d " << d;
      }
}

TEST(AttentionCore, MatchesDirectLoop) { Check(Case{}); }

TEST(AttentionCore, NoMaskNoSinksSoftcap) {
  Case c;
  c.causal = c.bias = c.sinks = false;
  c.softcap = 1.5f;
  Check(c);
}

TEST(AttentionCore, LongKeysManyBlocks) {
  Case c;
  c.Sq = 300;
  c.T = c.capacity = 2500;  // row blocks shorter than the query length
  c.bias = false;
  Check(c);
}

TEST(AttentionCore, ObserverSeesProbabilitiesThatSumToOne) {
  std::vector<float> q(2 * 3 * 4, 0.5f), k(2 * 5 * 4), v(2 * 5 * 2, 1.0f), y(2 * 3 * 2);
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>(i % 7) * 0.1f;
  AttentionProblem<float> p;
  p.SetDims(1, 2, 2, 3, 5, 4, 2);
  p.q = HeadView<const float>::Bnsh(q.data(), 3, 2, 4);
  p.k = HeadView<const float>::Bnsh(k.data(), 5, 2, 4);
  p.v = HeadView<const float>::Bnsh(v.data(), 5, 2, 2);
  p.y = HeadView<float>::Bnsh(y.data(), 3, 2, 2);
  p.key_end = [](int64_t, int64_t i) { return i + 1; };  // ignored while observing
  int rows = 0;
  p.observe = [&](AttentionStage stage, int64_t, int64_t, int64_t, const float* row) {
    if (stage != AttentionStage::kProbs) return;
    double sum = 0;
    for (int j = 0; j < 5; ++j) sum += row[j];
    EXPECT_NEAR(sum, 1.0, 1e-6);
    ++rows;
  };
  ThreadPool pool(1);
  RunAttention(p, pool);
  EXPECT_EQ(rows, 6);
  for (float x : y) EXPECT_NEAR(x, 1.0f, 1e-6f);  // every value row is ones
}

TEST(AttentionCore, RotateHeadHalvesAndInterleaved) {
  const float x[6] = {1, 2, 3, 4, 5, 6}, cs[2] = {0.5f, -1.0f}, sn[2] = {0.25f, 0.75f};
  float y[6];
  RotateHead(x, y, 6, 4, false, cs, sn);  // pairs (x0, x2), (x1, x3); x4, x5 pass through
  const float want[6] = {0.5f * 1 - 0.25f * 3, -1.0f * 2 - 0.75f * 4, 0.25f * 1 + 0.5f * 3, 0.75f * 2 - 1.0f * 4, 5, 6};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], want[i]) << i;
  RotateHead(x, y, 6, 4, true, cs, sn);  // pairs (x0, x1), (x2, x3)
  const float want_i[6] = {0.5f * 1 - 0.25f * 2, 0.25f * 1 + 0.5f * 2, -1.0f * 3 - 0.75f * 4, 0.75f * 3 - 1.0f * 4, 5, 6};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], want_i[i]) << i;
}

}  // namespace
}  // namespace oneflow
