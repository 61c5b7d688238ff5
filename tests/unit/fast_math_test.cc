// Fast float32 math (base/fast_math.h) against libm in double, and its edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

// Exp down to the flush-to-zero bound (results stay normal floats to about -86.64).
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
  // Exactly zero below ~-87, so -inf attention masks give zero weights in Softmax.
  for (float x : {-86.7f, -87.0f, -100.0f, -1000.0f, -INFINITY}) EXPECT_EQ(fastmath::Exp(x), 0.0f) << x;
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
