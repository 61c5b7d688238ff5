// The transcendental activations as the engine runs them (each op's registered CPU kernel: the
// vectorized copy for this CPU, or for ONEFLOW_MAX_ISA's cap, which ctest sets for the narrower
// copies) against libm in double, over the whole float range: a strided sweep of all 2^32 bit
// patterns plus the edges (±0, subnormals, FLT_MIN/FLT_MAX, the overflow and underflow thresholds,
// ±inf, NaN). The bounds are the ulp table of docs/math.md; a change that loosens one must change
// both, with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../cpu_kernel_call.h"

namespace oneflow {
namespace {

constexpr double kFltMin = 1.1754943508222875e-38;          // smallest normal float
constexpr double kSubnormalStep = 1.401298464324817e-45;    // 2^-149, the spacing of subnormals

float FromBits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// Every 251st bit pattern (17 M floats: every binade of both signs, NaN payloads included) and
// the values where implementations go wrong.
const std::vector<float>& SweepInputs() {
  static const std::vector<float> inputs = [] {
    std::vector<float> v;
    for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 251) v.push_back(FromBits(static_cast<uint32_t>(b)));
    const float inf = std::numeric_limits<float>::infinity();
    for (float x : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                    std::numeric_limits<float>::min(), -std::numeric_limits<float>::min(),
                    std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                    88.7228317f, 88.7228394f, 89.0f, -87.3365479f, -103.972076f, -103.972084f, -104.0f,
                    1.0f, -1.0f, 0.5f, -0.5f, 3.92f, -3.92f, 9.0f, 20.0f, 20.5f, -20.5f, -1.41421354f})
      v.push_back(x);
    for (float x = -120.0f; x <= 120.0f; x += 0.0009765625f) v.push_back(x);  // dense where they curve
    return v;
  }();
  return inputs;
}

// What a sweep found: the worst error in ulp over normal results, and in units of 2^-149 over
// subnormal ones (whose ulp is that absolute step), with where.
struct Worst {
  double ulp = 0, subnormal_steps = 0;
  float ulp_at = 0, subnormal_at = 0;
};

double UlpOf(double r) {
  int e;
  std::frexp(std::fabs(r), &e);
  return std::ldexp(1.0, e - 24);
}

struct Case {
  std::string name;     // the row in docs/math.md
  test_util::OpCall call;
  std::function<double(double)> reference;
  double max_ulp;       // over normal results
  double max_steps;     // over subnormal results, in 2^-149
  float min_x = -std::numeric_limits<float>::infinity();  // where the ulp bound applies (see docs)
};

Worst Measure(Case& c) {
  const std::vector<float>& xs = SweepInputs();
  Tensor x = Tensor::Uninitialized(DType::kFloat32, {static_cast<int64_t>(xs.size())});
  std::memcpy(x.data<float>(), xs.data(), xs.size() * sizeof(float));
  c.call.inputs = {x};
  c.call.outputs = {{DType::kFloat32, x.shape()}};
  const Tensor y = test_util::RunCpuKernel(c.call)[0];
  const float* got = y.data<float>();
  Worst w;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double r = c.reference(static_cast<double>(xs[i]));
    const float g = got[i];
    if (std::isnan(r)) {
      EXPECT_TRUE(std::isnan(g)) << c.name << "(" << xs[i] << ") = " << g << ", want NaN";
      continue;
    }
    if (std::fabs(r) > std::numeric_limits<float>::max()) {  // overflow: exactly ±inf, as libm
      EXPECT_EQ(g, static_cast<float>(r)) << c.name << "(" << xs[i] << ")";
      continue;
    }
    if (std::isnan(g) || std::isinf(g)) {
      ADD_FAILURE() << c.name << "(" << xs[i] << ") = " << g << ", want " << r;
      continue;
    }
    if (!(xs[i] >= c.min_x)) continue;
    const double err = std::fabs(static_cast<double>(g) - r);
    if (std::fabs(r) < kFltMin) {
      if (err / kSubnormalStep > w.subnormal_steps) { w.subnormal_steps = err / kSubnormalStep; w.subnormal_at = xs[i]; }
    } else if (err / UlpOf(r) > w.ulp) {
      w.ulp = err / UlpOf(r);
      w.ulp_at = xs[i];
    }
  }
  return w;
}

test_util::OpCall Op(const std::string& op, int opset = 17, AttrMap attrs = {}) {
  test_util::OpCall call;
  call.op = op;
  call.opset = opset;
  call.attrs = std::move(attrs);
  return call;
}

double GeluTanh(double x) {
  return x / (1.0 + std::exp(-2.0 * 0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
double Softplus(double x) { return (x > 0 ? x : 0) + std::log1p(std::exp(-std::fabs(x))); }

std::vector<Case> Cases() {
  AttrMap gelu_tanh;
  gelu_tanh.set("approximate", Attribute::String("tanh"));
  return {
      {"Exp", Op("Exp"), [](double x) { return std::exp(x); }, 2, 1},
      {"Log", Op("Log"), [](double x) { return std::log(x); }, 1, 0},
      {"Tanh", Op("Tanh"), [](double x) { return std::tanh(x); }, 2, 1},
      {"Sigmoid", Op("Sigmoid"), [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, 3, 1},
      {"Erf", Op("Erf"), [](double x) { return std::erf(x); }, 3, 1},
      {"Gelu", Op("Gelu", 20), [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }, 9, 8},
      // The tanh form computes its cubic in float; e^(2z) turns that rounding into a relative error
      // of a few times |2z| ulp in the negative tail: one bound from -5 on, a looser one below
      // (docs/math.md).
      {"Gelu(tanh)", Op("Gelu", 20, gelu_tanh), GeluTanh, 48, 2, -5.0f},
      {"Gelu(tanh) all", Op("Gelu", 20, gelu_tanh), GeluTanh, 256, 96},
      {"Softplus", Op("Softplus"), Softplus, 3, 1},
      {"Mish", Op("Mish", 18), [](double x) { return x * std::tanh(Softplus(x)); }, 5, 2},
      {"Elu (expm1)", Op("Elu"), [](double x) { return x < 0 ? std::expm1(x) : x; }, 2, 1},
      {"HardSwish", Op("HardSwish"), [](double x) { return x * std::fmin(std::fmax(x / 6.0 + 0.5, 0.0), 1.0); }, 2.5, 1},
  };
}

TEST(MathAccuracy, EveryActivationWithinItsUlpBoundOverTheFloatRange) {
  for (Case& c : Cases()) {
    const Worst w = Measure(c);
    EXPECT_LE(w.ulp, c.max_ulp) << c.name << ": " << w.ulp << " ulp at x = " << w.ulp_at;
    EXPECT_LE(w.subnormal_steps, c.max_steps)
        << c.name << ": subnormal result off by " << w.subnormal_steps << " x 2^-149 at x = " << w.subnormal_at;
    std::printf("%-12s %6.2f ulp (at %.9g), subnormal results %g x 2^-149\n", c.name.c_str(), w.ulp, w.ulp_at,
                w.subnormal_steps);
  }
}

}  // namespace
}  // namespace oneflow
