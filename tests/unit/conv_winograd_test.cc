// oneDNN's Winograd kernels behind the NHWC conv plans (kernels/cpu/conv_dnnl.h) vs a naive
// double-precision loop: both of oneDNN's kernels (F(2x2,3x3), picked for its smaller weights, and
// F(4x4,3x3) where F(2x2) does not apply: one-sided padding), whole images, channel slices (F(2x2))
// and row bands (F(4x4)) for one image on 2 threads, batches, symmetric, one-sided and no padding,
// odd maps, bias, residual and activations.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_isa.h"
#include "kernels/cpu/conv_dnnl.h"
#include "nhwc_conv_reference.h"

namespace oneflow {
namespace {

// A 3x3 stride-1 case: images, height, width, channels in and out, pads top, left, bottom, right.
struct Case {
  int64_t n, h, w, c, m, pt, pl, pb, pr;
};

// Runs the case through a fresh plan (and checks which kernel it took, when want_winograd is
// given); returns false (with no check) if oneDNN is not built in.
bool Check(const Case& c3, bool bias_on, bool residual, const ActivationParams& act, int threads,
           std::optional<bool> want_winograd, std::mt19937& rng) {
  const NhwcConvCase k{c3.n, c3.h, c3.w, c3.c, c3.m, 3, 3, 1, 1, 1, 1, c3.pt, c3.pl, c3.pb, c3.pr};
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t oh = k.oh(), ow = k.ow();
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
  if (want_winograd) EXPECT_EQ(DnnlConvUsesWinograd(*plan), *want_winograd);
  ThreadPool pool(threads);
  RunDnnlConv2dNhwc(*plan, x.data(), bias_on ? bias.data() : nullptr, residual ? z.data() : nullptr, y.data(), pool);
  ExpectMatchesNhwcConv(k, x, w, bias_on ? bias.data() : nullptr, residual ? z.data() : nullptr, act, y);
  return true;
}

class WinogradConv : public ::testing::Test {
 protected:
  void TearDown() override { SetWinogradEnabled(true); }
};

// oneDNN has Winograd kernels for AVX-512 only: on a CPU without it (or under ONEFLOW_MAX_ISA=avx2,
// which caps oneDNN too) the same plans must take the direct kernel instead, and be as right.
bool OneDnnHasWinograd() { return ActiveCpuIsa() >= CpuIsa::kAvx512; }

TEST_F(WinogradConv, MatchesNaiveLoop) {
  std::mt19937 rng(5);
  const bool wino = OneDnnHasWinograd();
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
      if (!Check(k, true, false, relu, threads, wino, rng)) GTEST_SKIP() << "built without oneDNN";
      Check(k, true, true, relu, threads, wino, rng);
      Check(k, false, true, sigmoid, threads, wino, rng);
      Check(k, false, false, ActivationParams{}, threads, wino, rng);
    }
    ++i;
  }
}

// Pads wider than a 3x3 kernel's reach, and uneven ones: oneDNN's Winograd kernels may refuse
// them (the direct kernel takes over) or take the whole image but not the parts of one image
// split across threads (one thread does the image); either way the result is right.
TEST_F(WinogradConv, WidePadsAreRightOnEitherKernel) {
  std::mt19937 rng(7);
  ActivationParams relu;
  relu.kind = Activation::kRelu;
  const Case cases[] = {{1, 12, 10, 32, 64, 2, 2, 2, 2}, {2, 9, 13, 64, 64, 0, 2, 1, 0}, {1, 16, 8, 48, 32, 3, 0, 0, 3}};
  for (const Case& k : cases)
    for (int threads : {1, 2}) {
      SCOPED_TRACE("pads " + std::to_string(k.pt) + std::to_string(k.pl) + std::to_string(k.pb) +
                   std::to_string(k.pr) + ", threads " + std::to_string(threads));
      if (!Check(k, true, true, relu, threads, std::nullopt, rng)) GTEST_SKIP() << "built without oneDNN";
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
