// Walks the unary op rows (graph/ops/unary_ops.h) and fails on any row missing a piece the engine
// builds from it: the schema with the row's attributes and defaults, SBP signatures, a gradient,
// the <Op>Grad op and its kernels, the CPU kernel (and the CUDA one in a CUDA build), the
// FusedElementwise instruction. Each row's forward formula is checked against an independent
// float64 reference written here, on the CPU kernel, in f32 and f64.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "graph/fused_elementwise_program.h"
#include "graph/op_schema.h"
#include "graph/ops/unary_ops.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"
#include "../cpu_kernel_call.h"

namespace oneflow {
namespace {

const AttrSpec* FindAttr(const OpSchema& s, const std::string& name) {
  for (const AttrSpec& a : s.attrs)
    if (a.name == name) return &a;
  return nullptr;
}

TEST(UnaryRows, EveryRowHasEveryPiece) {
  const OpRegistry& ops = OpRegistry::Global();
  const KernelRegistry& kernels = KernelRegistry::Global();
  for (const UnaryOpInfo& row : kUnaryOps) {
    SCOPED_TRACE(row.name);
    // The id, the table index and the fused instruction agree.
    EXPECT_EQ(&UnaryInfo(row.id), &row);
    EXPECT_EQ(RowOfEwOp(EwOpOfRow(row.id)), row.id);
    EXPECT_STREQ(EwOpName(EwOpOfRow(row.id)), row.token);  // unique where names are not
    EXPECT_TRUE(EwIsUnary(EwOpOfRow(row.id)));
    EXPECT_EQ(FindUnaryOp(row.domain, row.name), &row);
    EXPECT_LE(row.params.count, unary::kMaxParams);
    if (!row.standalone) continue;

    const OpSchema* s = ops.Find(row.domain, row.name, row.since);
    ASSERT_NE(s, nullptr) << "no schema at opset " << row.since;
    EXPECT_EQ(s->since_version, row.since);
    ASSERT_EQ(s->inputs.size(), 1u);
    ASSERT_EQ(s->outputs.size(), 1u);
    EXPECT_EQ(s->attrs.size(), static_cast<size_t>(row.params.count));
    for (int i = 0; i < row.params.count; ++i) {
      const unary::Param& p = row.params.items[i];
      const AttrSpec* a = FindAttr(*s, p.name);
      ASSERT_NE(a, nullptr) << "attribute " << p.name;
      ASSERT_TRUE(a->has_default) << p.name;
      if (p.choices) EXPECT_EQ(std::string(p.choices).rfind(a->default_value.s + "|", 0), 0u) << p.name;
      else EXPECT_EQ(a->default_value.f, p.value) << p.name;
    }
    EXPECT_TRUE(static_cast<bool>(s->sbp)) << "no SBP signatures";
    EXPECT_TRUE(static_cast<bool>(s->grad)) << "no gradient rule";
    EXPECT_NE(kernels.Find(row.domain, row.name, DeviceType::kCpu), nullptr) << "no CPU kernel";
#ifdef ONEFLOW_HAVE_CUDA
    EXPECT_NE(kernels.Find(row.domain, row.name, DeviceType::kCuda), nullptr) << "no CUDA kernel";
#endif
    if (row.grad != unary::GradFrom::kNone) {
      const std::string grad = std::string(OpName(row.grad_op));
      const OpSchema* g = ops.Find(kOneflowDomain, grad, 1);
      ASSERT_NE(g, nullptr) << grad;
      EXPECT_EQ(g->inputs.size(), 2u) << grad;
      EXPECT_EQ(g->attrs.size(), static_cast<size_t>(row.params.count)) << grad;
      EXPECT_TRUE(static_cast<bool>(g->sbp)) << grad;
      EXPECT_NE(kernels.Find(kOneflowDomain, grad, DeviceType::kCpu), nullptr) << grad;
#ifdef ONEFLOW_HAVE_CUDA
      EXPECT_NE(kernels.Find(kOneflowDomain, grad, DeviceType::kCuda), nullptr) << grad;
#endif
    }
  }
}

// An independent float64 reference per row (p: the row's parameters), and where to sample it.
struct Reference {
  std::function<double(double, const float*)> f;
  double lo = -4.0, hi = 4.0;
};

const std::map<std::string, Reference>& References() {
  static const std::map<std::string, Reference> refs = {
      {"Relu", {[](double x, const float*) { return std::max(x, 0.0); }}},
      {"LeakyRelu", {[](double x, const float* p) { return x >= 0 ? x : p[0] * x; }}},
      {"Sigmoid", {[](double x, const float*) { return 1.0 / (1.0 + std::exp(-x)); }}},
      {"Tanh", {[](double x, const float*) { return std::tanh(x); }}},
      {"Gelu", {[](double x, const float* p) {
         return p[0] == 0.0f ? 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)))
                             : 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
       }}},
      {"HardSigmoid", {[](double x, const float* p) { return std::clamp(double(p[0]) * x + p[1], 0.0, 1.0); }}},
      {"HardSwish", {[](double x, const float*) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }}},
      {"Exp", {[](double x, const float*) { return std::exp(x); }}},
      {"Log", {[](double x, const float*) { return std::log(x); }, 0.05, 8.0}},
      {"Neg", {[](double x, const float*) { return -x; }}},
      {"Abs", {[](double x, const float*) { return std::fabs(x); }}},
      {"Sqrt", {[](double x, const float*) { return std::sqrt(x); }, 0.0, 9.0}},
      {"Reciprocal", {[](double x, const float*) { return 1.0 / x; }, 0.25, 4.0}},
      {"Erf", {[](double x, const float*) { return std::erf(x); }}},
      {"Softplus", {[](double x, const float*) { return std::log1p(std::exp(x)); }}},
      {"Floor", {[](double x, const float*) { return std::floor(x); }}},
      {"Ceil", {[](double x, const float*) { return std::ceil(x); }}},
      {"Round", {[](double x, const float*) { return x - std::remainder(x, 1.0); }}},  // half to even
      {"Sign", {[](double x, const float*) { return double((x > 0) - (x < 0)); }}},
      {"Sin", {[](double x, const float*) { return std::sin(x); }}},
      {"Cos", {[](double x, const float*) { return std::cos(x); }}},
      {"Tan", {[](double x, const float*) { return std::tan(x); }, -1.4, 1.4}},
      {"Asin", {[](double x, const float*) { return std::asin(x); }, -0.99, 0.99}},
      {"Acos", {[](double x, const float*) { return std::acos(x); }, -0.99, 0.99}},
      {"Atan", {[](double x, const float*) { return std::atan(x); }}},
      {"Sinh", {[](double x, const float*) { return std::sinh(x); }}},
      {"Cosh", {[](double x, const float*) { return std::cosh(x); }}},
      {"Asinh", {[](double x, const float*) { return std::asinh(x); }}},
      {"Acosh", {[](double x, const float*) { return std::acosh(x); }, 1.0, 8.0}},
      {"Atanh", {[](double x, const float*) { return std::atanh(x); }, -0.99, 0.99}},
      {"Elu", {[](double x, const float* p) { return x >= 0 ? x : p[0] * (std::exp(x) - 1.0); }}},
      {"Selu", {[](double x, const float* p) { return p[1] * (x > 0 ? x : p[0] * (std::exp(x) - 1.0)); }}},
      {"Celu", {[](double x, const float* p) { return std::max(0.0, x) + std::min(0.0, p[0] * (std::exp(x / p[0]) - 1.0)); }}},
      {"Softsign", {[](double x, const float*) { return x / (1.0 + std::fabs(x)); }}},
      {"Mish", {[](double x, const float*) { return x * std::tanh(std::log1p(std::exp(x))); }}},
      {"ThresholdedRelu", {[](double x, const float* p) { return x > p[0] ? x : 0.0; }}},
      {"Swish", {[](double x, const float* p) { return x / (1.0 + std::exp(-p[0] * x)); }}},
      {"MsQuickGelu", {[](double x, const float* p) { return x / (1.0 + std::exp(-p[0] * x)); }}},
      {"MsGelu", {[](double x, const float*) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }}},
  };
  return refs;
}

TEST(UnaryRows, CpuKernelsMatchFloat64References) {
  std::mt19937 rng(7);
  for (const UnaryOpInfo& row : kUnaryOps) {
    if (!row.standalone) continue;
    SCOPED_TRACE(row.name);
    auto it = References().find(row.token);
    ASSERT_NE(it, References().end()) << "add a float64 reference for " << row.name << " to this test";
    const Reference& ref = it->second;
    float p[unary::kMaxParams];
    ReadUnaryParams(row, AttrMap{}, p, row.name);
    for (DType dt : {DType::kFloat32, DType::kFloat64}) {
      const int64_t n = 257;
      Tensor x(dt, {n});
      std::uniform_real_distribution<double> u(ref.lo, ref.hi);
      for (int64_t i = 0; i < n; ++i) {
        const double v = u(rng);
        if (dt == DType::kFloat32) x.data<float>()[i] = static_cast<float>(v);
        else x.data<double>()[i] = v;
      }
      test_util::OpCall call;
      call.op = row.name;
      call.domain = row.domain;
      call.opset = row.since;
      call.inputs = {x};
      call.outputs = {{dt, x.shape()}};
      const Tensor y = test_util::RunCpuKernel(call)[0];
      const double tol = dt == DType::kFloat32 ? 1e-5 : 1e-12;
      for (int64_t i = 0; i < n; ++i) {
        const double xv = x.GetAsDouble(i);
        const double want = ref.f(dt == DType::kFloat32 ? static_cast<double>(static_cast<float>(xv)) : xv, p);
        ASSERT_NEAR(y.GetAsDouble(i), want, tol * (1.0 + std::fabs(want))) << DTypeName(dt) << " x=" << xv;
      }
    }
  }
}

}  // namespace
}  // namespace oneflow
