// The direct NHWC conv for few input channels (kernels/cpu/conv_direct.h) vs a naive
// double-precision loop over the same NHWC tensors: kernel heights, row strides and dilations, pads
// on any side (wider than the kernel too, so whole output rows see no input), bias, residual and
// activations, on 1 and 2 threads. Channel counts past the register tiles (48, 80 = 32 + 32 + 16)
// cover the block remainders, widths the tile remainders.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/cpu/conv_direct.h"
#include "nhwc_conv_reference.h"

namespace oneflow {
namespace {

using Case = NhwcConvCase;

void Check(const Case& k, bool bias_on, bool residual, const ActivationParams& act, int threads, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t oh = k.oh(), ow = k.ow();
  ASSERT_GT(oh, 0);
  ASSERT_GT(ow, 0);
  std::vector<float> x(static_cast<size_t>(k.n * k.h * k.w * k.c)), w(static_cast<size_t>(k.m * k.c * k.kh * k.kw)),
      bias(static_cast<size_t>(k.m)), z(static_cast<size_t>(k.n * oh * ow * k.m)), y(z.size(), 7.0f);
  for (auto* v : {&x, &w, &bias, &z})
    for (float& e : *v) e = dist(rng);
  DirectConvNhwc conv(k.m, k.c, k.kh, k.kw, w.data(), act);
  const DirectConvGeometry g{k.n, k.h, k.w, k.c, k.m, k.kh, k.kw, k.sh, k.sw, k.dh, k.dw, k.pt, k.pl, oh, ow};
  ThreadPool pool(threads);
  conv.Run(g, x.data(), bias_on ? bias.data() : nullptr, residual ? z.data() : nullptr, y.data(), pool);
  ExpectMatchesNhwcConv(k, x, w, bias_on ? bias.data() : nullptr, residual ? z.data() : nullptr, act, y);
}

TEST(DirectConvNhwc, MatchesNaiveLoop) {
  if (!DirectConvNhwc::Applies(3, 32, 3, 1, 1)) GTEST_SKIP() << "built without AVX-512: the direct conv is not used";
  std::mt19937 rng(11);
  const Case cases[] = {
      {1, 32, 32, 3, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  // the cnn bench's first conv
      {2, 23, 29, 3, 64, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1},  // row stride 2, odd map
      {1, 13, 17, 1, 16, 5, 3, 1, 1, 1, 1, 2, 0, 1, 2},  // one channel, 5x3, asymmetric pads
      {3, 11, 9, 4, 80, 3, 3, 1, 1, 2, 1, 2, 1, 2, 1},   // row dilation 2; 32 + 32 + 16 channels
      {1, 6, 7, 8, 48, 3, 3, 1, 1, 1, 1, 4, 2, 4, 2},    // pads wider than the kernel: rows with no input
      {1, 40, 5, 2, 16, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0},   // 1x3, no padding
      {2, 9, 47, 3, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   // 47 columns: tiles of 10 and 9 (and 8 on 1 vector)
  };
  ActivationParams relu, sigmoid, leaky;
  relu.kind = Activation::kRelu;
  sigmoid.kind = Activation::kSigmoid;
  leaky.kind = Activation::kLeakyRelu;
  leaky.params[0] = 0.2f;
  int i = 0;
  for (const Case& k : cases) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE("case " + std::to_string(i) + ", threads " + std::to_string(threads));
      Check(k, true, false, relu, threads, rng);
      Check(k, false, true, sigmoid, threads, rng);
      Check(k, true, true, leaky, threads, rng);
      Check(k, false, false, ActivationParams{}, threads, rng);
    }
    ++i;
  }
}

TEST(DirectConvNhwc, TakesOnlyFewInputChannelsAndThreeWideKernels) {
  if (!DirectConvNhwc::Applies(3, 32, 3, 1, 1)) GTEST_SKIP() << "built without AVX-512: the direct conv is not used";
  EXPECT_TRUE(DirectConvNhwc::Applies(1, 16, 3, 1, 1));
  EXPECT_TRUE(DirectConvNhwc::Applies(8, 64, 3, 1, 1));
  EXPECT_FALSE(DirectConvNhwc::Applies(16, 64, 3, 1, 1));  // oneDNN's vector of input channels is full
  EXPECT_FALSE(DirectConvNhwc::Applies(3, 24, 3, 1, 1));   // output channels not a multiple of 16
  EXPECT_FALSE(DirectConvNhwc::Applies(3, 64, 7, 2, 1));   // a 7x7 stride-2 stem: oneDNN is faster
  EXPECT_FALSE(DirectConvNhwc::Applies(3, 64, 3, 1, 2));   // column dilation
}

}  // namespace
}  // namespace oneflow
