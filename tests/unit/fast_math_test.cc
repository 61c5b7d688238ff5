// Fast float32 math (base/fast_math.h) against libm in double, and its edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "base/fast_math.h"

namespace oneflow {
namespace {

// Relative error ~1e-6, absolute 1e-7 for tiny results.
void ExpectClose(float got, double want, double x, const char* what) {
  double err = std::fabs(static_cast<double>(got) - want);
  ASSERT_LE(err, 2e-6 * std::fabs(want) + 1e-7 * std::min(1.0, std::fabs(want)) + 1e-37) << what << " at x=" << x;
}

TEST(FastMath, AccurateOverDenseGrid) {
  for (double x = -90.0; x <= 90.0; x += 0.000731) {
    float f = static_cast<float>(x);
    double xd = f;
    if (xd > -86.0 && xd < 88.72) ExpectClose(fastmath::Exp(f), std::exp(xd), xd, "exp");
    ExpectClose(fastmath::Tanh(f), std::tanh(xd), xd, "tanh");
    if (xd > -86.0) ExpectClose(fastmath::Sigmoid(f), 1.0 / (1.0 + std::exp(-xd)), xd, "sigmoid");
    ExpectClose(fastmath::Erf(f), std::erf(xd), xd, "erf");
    double gelu = 0.5 * xd * std::erfc(-xd / std::sqrt(2.0));
    if (std::fabs(gelu) > 1e-7) ExpectClose(fastmath::Gelu(f), gelu, xd, "gelu");
    else ASSERT_LE(std::fabs(fastmath::Gelu(f) - gelu), 1e-7) << xd;
  }
  EXPECT_TRUE(std::isnan(fastmath::Exp(NAN)));
  EXPECT_TRUE(std::isnan(fastmath::Tanh(NAN)));
  EXPECT_TRUE(std::isnan(fastmath::Erf(NAN)));
  EXPECT_EQ(fastmath::Tanh(INFINITY), 1.0f);
  EXPECT_EQ(fastmath::Sigmoid(-INFINITY), 0.0f);
}

// Exp over the range where its results are normal floats (tests/unit/math_accuracy_test.cc covers
// the rest, through the kernels).
TEST(FastMath, ExpMatchesStdExpOverWholeRange) {
  double worst = 0;
  for (double x = -86.6; x < 88.72; x += 0.001) {
    const float xf = static_cast<float>(x);
    const double want = std::exp(static_cast<double>(xf));
    worst = std::max(worst, std::abs(fastmath::Exp(xf) - want) / want);
  }
  EXPECT_LT(worst, 2e-7);  // ~1.5 ulp
  EXPECT_EQ(fastmath::Exp(0.0f), 1.0f);
  EXPECT_EQ(fastmath::Exp(100.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fastmath::Exp(NAN)));
  // Subnormal results down to e^-103.97 = 2^-150, then exactly zero: -inf attention masks give zero
  // weights in Softmax.
  EXPECT_NEAR(fastmath::Exp(-100.0f), std::exp(-100.0), 1.5e-45);
  for (float x : {-104.0f, -1000.0f, -INFINITY}) EXPECT_EQ(fastmath::Exp(x), 0.0f) << x;
}

// expm1 and log1p are no ONNX op (the kernel-level sweep of math_accuracy_test.cc reaches them
// through Elu and Softplus only on part of their range): each over a strided sweep of every float.
TEST(FastMath, Expm1AndLog1pWithinTwoUlp) {
  double worst_expm1 = 0, worst_log1p = 0;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4093) {
    const uint32_t u = static_cast<uint32_t>(b);
    float x;
    std::memcpy(&x, &u, 4);
    const double e = std::expm1(static_cast<double>(x)), l = std::log1p(static_cast<double>(x));
    auto ulp_err = [](float got, double want) {
      if (std::isnan(want)) return std::isnan(got) ? 0.0 : 1e30;
      if (std::fabs(want) > 3.4028234663852886e38) return got == static_cast<float>(want) ? 0.0 : 1e30;
      int ex;
      std::frexp(std::fabs(want), &ex);
      return std::fabs(got - want) / std::ldexp(1.0, std::max(ex - 24, -149));
    };
    worst_expm1 = std::max(worst_expm1, ulp_err(fastmath::Expm1(x), e));
    worst_log1p = std::max(worst_log1p, ulp_err(fastmath::Log1p(x), l));
  }
  EXPECT_LE(worst_expm1, 2.0);
  EXPECT_LE(worst_log1p, 2.0);
  EXPECT_EQ(fastmath::Log1p(-1.0f), -INFINITY);
  EXPECT_EQ(fastmath::Expm1(-INFINITY), -1.0f);
  EXPECT_EQ(fastmath::Expm1(INFINITY), INFINITY);
}

TEST(FastMath, DoubleOverloadsAreLibm) {
  for (double x : {-3.5, -0.25, 0.0, 0.7, 2.0, 30.0}) {
    EXPECT_EQ(fastmath::Exp(x), std::exp(x));
    EXPECT_EQ(fastmath::Tanh(x), std::tanh(x));
    EXPECT_EQ(fastmath::Erf(x), std::erf(x));
    EXPECT_EQ(fastmath::Sigmoid(x), 1.0 / (1.0 + std::exp(-x)));
    EXPECT_EQ(fastmath::Gelu(x), 0.5 * x * std::erfc(-x * 0.70710678118654752440));
  }
}

}  // namespace
}  // namespace oneflow
