// oneDNN's Winograd kernels behind the NHWC conv plans (kernels/cpu/conv_dnnl.h) vs a naive
// double-precision loop: both of oneDNN's kernels (F(2x2,3x3), picked for its smaller weights, and
// F(4x4,3x3) where F(2x2) does not apply: one-sided padding), whole images, channel slices (F(2x2))
// and row bands (F(4x4)) for one image on 2 threads, batches, symmetric, one-sided and no padding,
// odd maps, bias, residual and activations.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/conv_dnnl.h"

namespace oneflow {
namespace {

struct Case {
  int64_t n, h, w, c, m, pt, pl, pb, pr;
};

double Activate(const ActivationParams& act, double v) {
  switch (act.kind) {
    case Activation::kRelu: return v > 0 ? v : 0;
    case Activation::kSigmoid: return 1 / (1 + std::exp(-v));
    default: return v;
  }
}

// Runs the case through a fresh plan; returns false (with no check) if oneDNN is not built in.
bool Check(const Case& k, bool bias_on, bool residual, const ActivationParams& act, int threads, bool want_winograd,
           std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t oh = k.h + k.pt + k.pb - 2, ow = k.w + k.pl + k.pr - 2;
  std::vector<float> x(static_cast<size_t>(k.n * k.h * k.w * k.c)), w(static_cast<size_t>(k.m * k.c * 9)),
      bias(static_cast<size_t>(k.m)), z(static_cast<size_t>(k.n * oh * ow * k.m)), y(z.size(), 7.0f);
  for (auto* v : {&x, &bias, &z})
    for (float& e : *v) e = dist(rng);
  const float scale = std::sqrt(3.0f / static_cast<float>(9 * k.c));  // outputs of order 1, as in a trained net
  for (float& e : w) e = dist(rng) * scale;
  const DnnlConvParams p{k.n, k.c, k.h, k.w, k.m, 3, 3, 1, 1, 1, 1, k.pt, k.pl, k.pb, k.pr, oh, ow};
  const DnnlConvEpilogue ep{bias_on, residual, act};
  auto plan = CreateDnnlConv2d(p, w.data(), &ep);
  if (!plan) return false;
  EXPECT_EQ(DnnlConvUsesWinograd(*plan), want_winograd);
  ThreadPool pool(threads);
  RunDnnlConv2dNhwc(*plan, x.data(), bias_on ? bias.data() : nullptr, residual ? z.data() : nullptr, y.data(), pool);
  int bad = 0;
  for (int64_t b = 0; b < k.n; ++b)
    for (int64_t r = 0; r < oh; ++r)
      for (int64_t q = 0; q < ow; ++q)
        for (int64_t o = 0; o < k.m; ++o) {
          double acc = bias_on ? bias[o] : 0.0;
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 3; ++j) {
              const int64_t ih = r - k.pt + i, iw = q - k.pl + j;
              if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
              for (int64_t ci = 0; ci < k.c; ++ci)
                acc += static_cast<double>(x[((b * k.h + ih) * k.w + iw) * k.c + ci]) * w[((o * k.c + ci) * 3 + i) * 3 + j];
            }
          const size_t at = static_cast<size_t>(((b * oh + r) * ow + q) * k.m + o);
          if (residual) acc += z[at];
          const double want = Activate(act, acc);
          if (!(std::fabs(y[at] - want) <= 1e-4 * (1 + std::fabs(want))) && ++bad <= 3)
            ADD_FAILURE() << "image " << b << " pixel (" << r << ", " << q << ") channel " << o << ": got " << y[at]
                          << ", want " << want;
        }
  return true;
}

class WinogradConv : public ::testing::Test {
 protected:
  void TearDown() override { SetWinogradEnabled(true); }
};

TEST_F(WinogradConv, MatchesNaiveLoop) {
  std::mt19937 rng(5);
  const Case cases[] = {
      {1, 16, 16, 32, 64, 1, 1, 1, 1},   // the cnn bench's second conv
      {3, 13, 15, 64, 32, 1, 1, 1, 1},   // odd map, a batch of 3 (whole images per thread)
      {1, 14, 11, 64, 64, 1, 0, 0, 1},   // one-sided pads: F(4x4,3x3), row bands on 2 threads
      {2, 9, 10, 48, 64, 0, 0, 0, 0},    // no padding
      {1, 7, 7, 256, 512, 1, 1, 1, 1},   // ResNet-18's layer 4 shape: F(2x2,3x3), channel slices on 2 threads
  };
  ActivationParams relu, sigmoid;
  relu.kind = Activation::kRelu;
  sigmoid.kind = Activation::kSigmoid;
  int i = 0;
  for (const Case& k : cases) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE("case " + std::to_string(i) + ", threads " + std::to_string(threads));
      if (!Check(k, true, false, relu, threads, true, rng)) GTEST_SKIP() << "built without oneDNN";
      Check(k, true, true, relu, threads, true, rng);
      Check(k, false, true, sigmoid, threads, true, rng);
      Check(k, false, false, ActivationParams{}, threads, true, rng);
    }
    ++i;
  }
}

TEST_F(WinogradConv, OffSwitchAndIneligibleShapesUseTheDirectKernel) {
  std::mt19937 rng(6);
  ActivationParams relu;
  relu.kind = Activation::kRelu;
  if (!Check({1, 8, 8, 16, 16, 1, 1, 1, 1}, true, false, relu, 1, false, rng))  // channel product below the cut
    GTEST_SKIP() << "built without oneDNN";
  Check({1, 8, 8, 24, 64, 1, 1, 1, 1}, true, false, relu, 1, false, rng);  // 24 input channels: not blocks of 16
  SetWinogradEnabled(false);
  Check({1, 16, 16, 32, 64, 1, 1, 1, 1}, true, true, relu, 2, false, rng);
}

}  // namespace
}  // namespace oneflow
