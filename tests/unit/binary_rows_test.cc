// Walks the binary op rows (graph/ops/binary_ops.h) and fails on any row missing a piece the engine
// builds from it (schema with a gradient, CPU kernel, CUDA kernel in a CUDA build, FusedElementwise
// instruction), then checks each row's formula through its CPU kernel against references written
// here: float64 arithmetic for f32 and f64, and numpy's integer rules (wrap-around, x / 0 = 0,
// INT_MIN / -1 = INT_MIN, exact powers) for every integer type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <random>
#include <vector>

#include "graph/fused_elementwise_program.h"
#include "graph/op_schema.h"
#include "graph/ops/binary_ops.h"
#include "kernels/kernel.h"
#include "../cpu_kernel_call.h"

namespace oneflow {
namespace {

TEST(BinaryRows, EveryRowHasEveryPiece) {
  const KernelRegistry& kernels = KernelRegistry::Global();
  for (const BinaryOpInfo& row : kBinaryOps) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(&BinaryInfo(row.id), &row);
    EXPECT_EQ(FindBinaryOp("", row.name), &row);
    EXPECT_EQ(BinaryOfEwOp(EwOpOfBinary(row.id)), row.id);
    EXPECT_STREQ(EwOpName(EwOpOfBinary(row.id)), row.name);
    EXPECT_TRUE(EwIsBinary(EwOpOfBinary(row.id)));
    EXPECT_FALSE(EwIsUnary(EwOpOfBinary(row.id)));
    const OpSchema* s = OpRegistry::Global().Find("", row.name, kMaxOnnxOpset);
    ASSERT_NE(s, nullptr) << "no schema";
    EXPECT_TRUE(static_cast<bool>(s->grad)) << "no gradient rule";
    EXPECT_EQ(s->precision, row.follows_low_precision ? PrecisionClass::kFollow : PrecisionClass::kKeep);
    EXPECT_TRUE(static_cast<bool>(s->sbp)) << "no SBP signatures";
    if (row.standalone) EXPECT_EQ(s->inputs.size(), 2u);
    EXPECT_NE(kernels.Find("", row.name, DeviceType::kCpu), nullptr) << "no CPU kernel";
#ifdef ONEFLOW_HAVE_CUDA
    EXPECT_NE(kernels.Find("", row.name, DeviceType::kCuda), nullptr) << "no CUDA kernel";
#endif
  }
  // Nothing else shares an instruction number with a binary row.
  EXPECT_EQ(static_cast<int>(EwOp::kCount) - kEwFirstBinary, static_cast<int>(BinaryOpId::kCount));
}

template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>) return DType::kFloat64;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUInt32;
  else return DType::kUInt64;
}

template <typename T>
Tensor Make(const std::vector<T>& v) {
  Tensor t = Tensor::Uninitialized(DTypeOf<T>(), {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = v[i];
  return t;
}

template <typename T>
std::vector<T> RunBinary(const char* op, const std::vector<T>& a, const std::vector<T>& b) {
  test_util::OpCall call;
  call.op = op;
  call.inputs = {Make(a), Make(b)};
  call.outputs = {{DTypeOf<T>(), {static_cast<int64_t>(a.size())}}};
  const Tensor y = test_util::RunCpuKernel(call)[0];
  return std::vector<T>(y.data<T>(), y.data<T>() + a.size());
}

// float64 references; Pow on positive bases only (a negative base to a fractional power is NaN
// either way, which the NaN checks below cover for Max/Min).
const std::map<std::string, std::function<double(double, double)>>& FloatReferences() {
  static const std::map<std::string, std::function<double(double, double)>> refs = {
      {"Add", [](double a, double b) { return a + b; }},  {"Sub", [](double a, double b) { return a - b; }},
      {"Mul", [](double a, double b) { return a * b; }},  {"Div", [](double a, double b) { return a / b; }},
      {"Pow", [](double a, double b) { return std::pow(a, b); }},
      {"Max", [](double a, double b) { return a > b ? a : b; }}, {"Min", [](double a, double b) { return a < b ? a : b; }},
  };
  return refs;
}

template <typename T>
void CheckFloatRows(double rtol) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> value(0.1, 4.0), sign(-1.0, 1.0);
  for (const BinaryOpInfo& row : kBinaryOps) {
    SCOPED_TRACE(row.name);
    const bool pow = row.id == BinaryOpId::kPow;
    std::vector<T> a(257), b(257);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<T>(pow ? value(rng) : value(rng) * (sign(rng) < 0 ? -1 : 1));
      b[i] = static_cast<T>(pow ? sign(rng) * 3 : value(rng) * (sign(rng) < 0 ? -1 : 1));
    }
    const std::vector<T> y = RunBinary<T>(row.name, a, b);
    const auto& ref = FloatReferences().at(row.name);
    for (size_t i = 0; i < a.size(); ++i) {
      const double want = ref(static_cast<double>(a[i]), static_cast<double>(b[i]));
      EXPECT_NEAR(static_cast<double>(y[i]), want, rtol * std::fabs(want) + 1e-30) << a[i] << ", " << b[i];
    }
  }
}

TEST(BinaryRows, FloatFormulasMatchFloat64) {
  CheckFloatRows<float>(2e-6);
  CheckFloatRows<double>(1e-14);
}

TEST(BinaryRows, MaxAndMinPropagateNaNFromEitherSide) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* op : {"Max", "Min"}) {
    const std::vector<float> y = RunBinary<float>(op, {nan, 1.0f, 2.0f}, {1.0f, nan, 3.0f});
    EXPECT_TRUE(std::isnan(y[0])) << op;
    EXPECT_TRUE(std::isnan(y[1])) << op;
    EXPECT_EQ(y[2], op[1] == 'a' ? 3.0f : 2.0f) << op;
  }
}

// numpy's integer results, computed here in wide arithmetic and wrapped to T.
template <typename T>
void CheckIntegerEdges() {
  using L = std::numeric_limits<T>;
  using U = std::make_unsigned_t<T>;
  auto wrap = [](long double v) {  // v mod 2^bits, as two's complement T
    const long double m = std::ldexp(1.0L, static_cast<int>(sizeof(T) * 8));
    long double r = std::fmod(v, m);
    if (r < 0) r += m;
    return static_cast<T>(static_cast<U>(static_cast<unsigned long long>(r)));
  };
  const std::vector<T> a = {L::max(), L::min(), T(7), T(-7 * L::is_signed + 9 * !L::is_signed), T(5), T(0)};
  const std::vector<T> b = {T(1), T(L::is_signed ? -1 : 3), T(0), T(2), T(3), T(4)};
  const auto add = RunBinary<T>("Add", a, b), sub = RunBinary<T>("Sub", a, b), mul = RunBinary<T>("Mul", a, b),
             div = RunBinary<T>("Div", a, b), pow = RunBinary<T>("Pow", a, b), mx = RunBinary<T>("Max", a, b), mn = RunBinary<T>("Min", a, b);
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(std::to_string(static_cast<long long>(a[i])) + ", " + std::to_string(static_cast<long long>(b[i])));
    const long double x = static_cast<long double>(a[i]), y = static_cast<long double>(b[i]);
    EXPECT_EQ(add[i], wrap(x + y));
    EXPECT_EQ(sub[i], wrap(x - y));
    // The product modulo 2^bits from 64-bit unsigned arithmetic (exact mod 2^64).
    EXPECT_EQ(mul[i], static_cast<T>(static_cast<U>(static_cast<uint64_t>(static_cast<int64_t>(a[i])) *
                                                    static_cast<uint64_t>(static_cast<int64_t>(b[i])))));
    // Truncating division; x / 0 = 0; MIN / -1 wraps to MIN.
    const T want_div = b[i] == T(0) ? T(0) : wrap(std::trunc(x / y));
    EXPECT_EQ(div[i], want_div);
    uint64_t p = 1;  // exact x^y mod 2^64 (y >= 0 here)
    for (long long k = 0; k < static_cast<long long>(b[i]); ++k) p *= static_cast<uint64_t>(static_cast<int64_t>(a[i]));
    if (b[i] >= T(0)) EXPECT_EQ(pow[i], static_cast<T>(static_cast<U>(p)));
    EXPECT_EQ(mx[i], a[i] > b[i] ? a[i] : b[i]);
    EXPECT_EQ(mn[i], a[i] < b[i] ? a[i] : b[i]);
  }
}

TEST(BinaryRows, IntegerEdgesForEveryIntegerType) {
  CheckIntegerEdges<int8_t>();
  CheckIntegerEdges<int16_t>();
  CheckIntegerEdges<int32_t>();
  CheckIntegerEdges<int64_t>();
  CheckIntegerEdges<uint8_t>();
  CheckIntegerEdges<uint16_t>();
  CheckIntegerEdges<uint32_t>();
  CheckIntegerEdges<uint64_t>();
}

}  // namespace
}  // namespace oneflow
