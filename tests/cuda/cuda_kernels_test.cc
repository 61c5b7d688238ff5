// Every CUDA kernel against the CPU kernel on the same inputs (fresh random data, outputs poisoned
// before the GPU run), compared element by element (cuda_compare.h). Half-precision runs are
// compared with the CPU's f32 result on the same (rounded) inputs. Also: odd sizes, device views at
// misaligned offsets (MatMul/Gemm operands and bias, elementwise inputs and outputs), grid-stride
// loops past the launch grid cap, FusedGemm epilogues. All of these skip with "no CUDA device"
// where there is none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

#include "cuda_compare.h"
#include "cuda_test_util.h"
#include "graph/op_schema.h"
#include "graph/ops/unary_ops.h"
#include "kernels/cuda/matmul_cublaslt.h"

namespace oneflow {
namespace {

using cuda_test::DefaultTol;
using cuda_test::DeviceLayout;
using cuda_test::ElementsClose;
using cuda_test::ExactTol;
using cuda_test::ExpectGpuMatchesCpu;
using cuda_test::ExpectGpuMatchesCpuEach;
using cuda_test::OpCall;
using cuda_test::RandomTensor;
using cuda_test::RunKernel;
using cuda_test::Tol;

const DType kFloatTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

OpCall Unary(const std::string& op, const Tensor& x) {
  OpCall c;
  c.op = op;
  c.inputs = {x};
  c.outputs = {{x.dtype(), x.shape()}};
  // The attributes import would fill in (ONNX defaults); the CPU kernels expect them present.
  if (op == "LeakyRelu") c.attrs.set("alpha", Attribute::Float(0.01f));
  if (op == "HardSigmoid") {
    c.attrs.set("alpha", Attribute::Float(0.2f));
    c.attrs.set("beta", Attribute::Float(0.5f));
  }
  if (op == "Gelu") c.attrs.set("approximate", Attribute::String("none"));
  return c;
}

OpCall Binary(const std::string& op, const Tensor& a, const Tensor& b, const Shape& y) {
  OpCall c;
  c.op = op;
  c.opset = 13;
  c.inputs = {a, b};
  c.outputs = {{a.dtype(), y}};
  return c;
}

// Values of magnitude in [lo, hi] with random signs (divisors that stay away from zero).
Tensor AwayFromZero(DType dt, const Shape& shape, std::mt19937& rng, float lo, float hi) {
  Tensor t = RandomTensor(DType::kFloat32, shape, rng, lo, hi);
  std::bernoulli_distribution negative(0.5);
  for (int64_t i = 0; i < t.numel(); ++i)
    if (negative(rng)) t.data<float>()[i] = -t.data<float>()[i];
  return cuda_test::CastHost(t, dt);
}

std::string Label(const std::string& what, DType dt, const Shape& s) {
  return what + " " + DTypeName(dt) + " " + ShapeToString(s);
}

TEST(CudaKernels, UnaryMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Gelu", "Exp", "Neg", "Abs", "Erf", "Softplus", "HardSwish",
                         "LeakyRelu", "HardSigmoid"}) {
    for (Shape s : {Shape{3, 5, 7}, Shape{1001}, Shape{4096}}) {  // odd sizes exercise the vector tail
      for (DType dt : kFloatTypes) ExpectGpuMatchesCpu(Unary(op, RandomTensor(dt, s, rng)), Label(op, dt, s));
    }
  }
  OpCall gelu_tanh = Unary("Gelu", RandomTensor(DType::kFloat32, {2049}, rng, -4.0f, 4.0f));
  gelu_tanh.opset = 20;
  gelu_tanh.attrs.set("approximate", Attribute::String("tanh"));
  ExpectGpuMatchesCpu(gelu_tanh, "Gelu tanh");
  for (const char* op : {"Log", "Sqrt", "Reciprocal"})
    ExpectGpuMatchesCpu(Unary(op, RandomTensor(DType::kFloat32, {777}, rng, 0.1f, 4.0f)), op);
}

// Every unary row of graph/ops/unary_ops.h (the rows' one formula, compiled for the device) against
// the CPU kernel, with the row's default attributes, inside each op's domain.
TEST(CudaKernels, EveryUnaryRowMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(13);
  const std::map<std::string, std::pair<float, float>> ranges = {
      {"Log", {0.1f, 4.0f}},    {"Sqrt", {0.1f, 4.0f}},   {"Reciprocal", {0.1f, 4.0f}}, {"Acosh", {1.1f, 4.0f}},
      {"Asin", {-0.9f, 0.9f}},  {"Acos", {-0.9f, 0.9f}},  {"Atanh", {-0.9f, 0.9f}},     {"Tan", {-1.4f, 1.4f}}};
  int rows = 0;
  for (const UnaryOpInfo& row : kUnaryOps) {
    if (!row.standalone) continue;
    ++rows;
    auto it = ranges.find(row.name);
    const auto [lo, hi] = it == ranges.end() ? std::pair<float, float>{-4.0f, 4.0f} : it->second;
    for (DType dt : kFloatTypes) {
      OpCall c;
      c.op = row.name;
      c.domain = row.domain;
      c.opset = row.since;
      c.inputs = {RandomTensor(dt, {1001}, rng, lo, hi)};
      c.outputs = {{dt, {1001}}};
      ExpectGpuMatchesCpu(c, std::string(row.name) + " " + DTypeName(dt));
    }
  }
  EXPECT_GE(rows, 38);  // the standalone rows when this test was written
}

TEST(CudaKernels, BinaryBroadcastMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(12);
  struct Case { Shape a, b, y; };
  const Case cases[] = {{{4, 1000}, {4, 1000}, {4, 1000}}, {{3, 1, 5}, {4, 1}, {3, 4, 5}},
                        {{2, 3, 4}, {}, {2, 3, 4}},       {{1, 7}, {6, 1}, {6, 7}},
                        {{1025}, {1025}, {1025}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"}) {
    for (const Case& k : cases) {
      for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
        const bool pow = std::string(op) == "Pow";
        const OpCall c = Binary(op, RandomTensor(dt, k.a, rng, pow ? 0.5f : -2.0f, 2.0f),
                                RandomTensor(dt, k.b, rng, std::string(op) == "Div" ? 0.5f : -2.0f, 2.0f), k.y);
        ExpectGpuMatchesCpu(c, Label(op, dt, k.y));
      }
    }
  }
  // Integers are exact.
  Tensor a(DType::kInt64, {3, 4}), b(DType::kInt64, {4});
  for (int i = 0; i < 12; ++i) a.data<int64_t>()[i] = (int64_t{1} << 40) + i * 7;
  for (int i = 0; i < 4; ++i) b.data<int64_t>()[i] = -i * 1000003;
  ExpectGpuMatchesCpu(Binary("Add", a, b, {3, 4}), ExactTol(), "Add int64");
}

// Add/Sub/Mul/Div in f16 (f32 math, one rounding) and int32 (exact; Div truncates toward zero as in
// C and the CPU kernel), same-shape (vectorized) and broadcast.
TEST(CudaKernels, BinaryF16AndInt32MatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(20);
  struct Case { Shape a, b, y; };
  const Case cases[] = {{{4, 1000}, {4, 1000}, {4, 1000}}, {{3, 1, 5}, {4, 1}, {3, 4, 5}},
                        {{2, 3, 4}, {}, {2, 3, 4}},       {{1, 7}, {6, 1}, {6, 7}},
                        {{4097}, {4097}, {4097}},         {{33}, {1}, {33}},
                        {{1}, {1}, {1}}};
  std::uniform_int_distribution<int32_t> any(-100000, 100000), small(1, 1000);
  std::bernoulli_distribution negative(0.5);
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    const bool div = std::string(op) == "Div";
    for (const Case& k : cases) {
      // f16: divisors of magnitude >= 0.5 keep quotients well inside the f16 range.
      const Tensor fa = RandomTensor(DType::kFloat16, k.a, rng);
      const Tensor fb = div ? AwayFromZero(DType::kFloat16, k.b, rng, 0.5f, 2.0f) : RandomTensor(DType::kFloat16, k.b, rng);
      ExpectGpuMatchesCpu(Binary(op, fa, fb, k.y), Label(op, DType::kFloat16, k.y));
      // int32: products stay below 2^31 (|a| <= 1e5, |b| <= 1e3); divisors never zero.
      Tensor ia(DType::kInt32, k.a), ib(DType::kInt32, k.b);
      for (int64_t i = 0; i < ia.numel(); ++i) ia.data<int32_t>()[i] = any(rng);
      for (int64_t i = 0; i < ib.numel(); ++i) ib.data<int32_t>()[i] = small(rng) * (negative(rng) ? -1 : 1);
      ExpectGpuMatchesCpu(Binary(op, ia, ib, k.y), ExactTol(), Label(op, DType::kInt32, k.y));
    }
  }
  // Truncating division on hand-picked signs and magnitudes, against the C++ operator.
  const int32_t num[] = {-7, 7, -7, 7, 0, -1, 1, 2147483647, -2147483647, -2147483647 - 1, 99999, -6};
  const int32_t den[] = {2, -2, -2, 2, 5, 3, -3, 2, 3, 7, -100000, 3};
  const int64_t n = static_cast<int64_t>(std::size(num));
  Tensor a(DType::kInt32, {n}), b(DType::kInt32, {n});
  std::copy(std::begin(num), std::end(num), a.data<int32_t>());
  std::copy(std::begin(den), std::end(den), b.data<int32_t>());
  const std::vector<Tensor> got = RunKernel(DeviceType::kCuda, Binary("Div", a, b, {n}));
  ASSERT_EQ(got.size(), 1u);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(got[0].data<int32_t>()[i], num[i] / den[i]) << num[i] << " / " << den[i];
}

TEST(CudaKernels, CastMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(13);
  const DType types[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt32,
                         DType::kInt64};
  for (DType from : types) {
    for (DType to : types) {
      // Values in [-100, 100] are representable in every type (rounded to integers for int sources).
      Tensor x = RandomTensor(DType::kFloat32, {513}, rng, -100.0f, 100.0f);
      x = cuda_test::CastHost(x, from);
      OpCall c;
      c.op = "Cast";
      c.attrs.set("to", Attribute::Int(static_cast<int64_t>(to)));
      c.inputs = {x};
      c.outputs = {{to, x.shape()}};
      const Tensor gpu = RunKernel(DeviceType::kCuda, c)[0];
      const Tensor cpu = RunKernel(DeviceType::kCpu, c)[0];
      EXPECT_TRUE(ElementsClose(gpu, cpu, ExactTol())) << DTypeName(from) << " -> " << DTypeName(to);
    }
  }
}

OpCall ReduceCall(const char* op, DType dt, const Shape& x, const std::vector<int64_t>& axes, int keep, const Shape& y,
                  std::mt19937& rng) {
  OpCall c;
  c.op = op;
  c.opset = 13;
  if (!axes.empty()) c.attrs.set("axes", Attribute::Ints(axes));
  c.attrs.set("keepdims", Attribute::Int(keep));
  c.inputs = {RandomTensor(dt, x, rng)};
  c.outputs = {{dt, y}};
  return c;
}

struct ReduceCase { Shape x; std::vector<int64_t> axes; int keep; Shape y; };
const ReduceCase kReduceCases[] = {{{8, 300}, {1}, 1, {8, 1}},      {{4, 5, 6}, {0, 2}, 0, {5}},
                                   {{4, 5, 6}, {1}, 0, {4, 6}},      {{2, 3, 4, 5}, {2, 3}, 1, {2, 3, 1, 1}},
                                   {{7, 9}, {}, 0, {}},              {{3, 1, 4}, {1}, 1, {3, 1, 4}},
                                   {{3, 4097}, {1}, 0, {3}},         {{1023, 3}, {0}, 1, {1, 3}},
                                   {{1}, {0}, 0, {}}};

TEST(CudaKernels, ReductionsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(14);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"})
    for (const ReduceCase& k : kReduceCases)
      ExpectGpuMatchesCpu(ReduceCall(op, DType::kFloat32, k.x, k.axes, k.keep, k.y, rng), Label(op, DType::kFloat32, k.x));
}

// f16 / bf16 inputs and outputs, f32 accumulation on the GPU; the reference is the CPU's f32 result
// on the same rounded inputs, so the only expected difference is the output's rounding. Max/Min
// pick an input value: exact.
TEST(CudaKernels, HalfReductionsMatchF32Reference) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(21);
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
      const bool pick = std::string(op) == "ReduceMax" || std::string(op) == "ReduceMin";
      for (const ReduceCase& k : kReduceCases)
        ExpectGpuMatchesCpu(ReduceCall(op, dt, k.x, k.axes, k.keep, k.y, rng), pick ? ExactTol() : DefaultTol(dt),
                            Label(op, dt, k.x));
    }
  }
}

OpCall LayerNormCall(DType dt, const Shape& x, int64_t axis, std::mt19937& rng) {
  OpCall c;
  c.op = "LayerNormalization";
  c.opset = 17;
  c.attrs.set("axis", Attribute::Int(axis));
  c.attrs.set("epsilon", Attribute::Float(1e-5f));
  const size_t a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(x.size()) : axis);
  const Shape norm(x.begin() + static_cast<std::ptrdiff_t>(a), x.end());
  c.inputs = {RandomTensor(dt, x, rng), RandomTensor(dt, norm, rng), RandomTensor(dt, norm, rng)};
  Shape stat = x;
  for (size_t d = a; d < stat.size(); ++d) stat[d] = 1;
  // Mean and InvStdDev are f32 (stash_type 1) whatever X's dtype: the CUDA kernel requires it.
  c.outputs = {{dt, x}, {DType::kFloat32, stat}, {DType::kFloat32, stat}};
  return c;
}

TEST(CudaKernels, SoftmaxAndLayerNormMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(15);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t axis : {-1, 1, 0}) {
      for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
        OpCall c;
        c.op = op;
        c.opset = 13;
        c.attrs.set("axis", Attribute::Int(axis));
        c.inputs = {RandomTensor(dt, {6, 33, 257}, rng, -5.0f, 5.0f)};
        c.outputs = {{dt, {6, 33, 257}}};
        ExpectGpuMatchesCpu(c, std::string(op) + " axis " + std::to_string(axis) + " " + DTypeName(dt));
      }
    }
  }
  for (int64_t axis : {-1, 1})
    ExpectGpuMatchesCpu(LayerNormCall(DType::kFloat32, {5, 12, 96}, axis, rng), "LayerNorm axis " + std::to_string(axis));
}

// LayerNormalization on f16 / bf16 X, Scale and B: Y in X's dtype within its rounding of the f32
// reference; Mean and InvStdDev (f32, computed from the same rounded values) to f32 accuracy.
TEST(CudaKernels, HalfLayerNormMatchesF32Reference) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(22);
  struct Case { Shape x; int64_t axis; };
  const Case cases[] = {{{5, 12, 96}, -1}, {{5, 12, 96}, 1}, {{3, 33}, -1}, {{2, 1023}, 1}, {{7, 1}, -1}};
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    for (const Case& k : cases) {
      ExpectGpuMatchesCpuEach(LayerNormCall(dt, k.x, k.axis, rng), {DefaultTol(dt), DefaultTol(DType::kFloat32)},
                              Label("LayerNorm axis " + std::to_string(k.axis), dt, k.x));
    }
  }
}

TEST(CudaKernels, TransposeMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(16);
  struct Case { Shape x; std::vector<int64_t> perm; Shape y; };
  const Case cases[] = {{{3, 4, 5}, {2, 0, 1}, {5, 3, 4}}, {{33, 65}, {1, 0}, {65, 33}},
                        {{2, 3, 4, 5}, {}, {5, 4, 3, 2}}, {{2, 3, 4, 5, 6}, {0, 3, 1, 4, 2}, {2, 5, 3, 6, 4}}};
  for (const Case& k : cases) {
    for (DType dt : {DType::kFloat32, DType::kFloat16}) {
      OpCall c;
      c.op = "Transpose";
      if (!k.perm.empty()) c.attrs.set("perm", Attribute::Ints(k.perm));
      c.inputs = {RandomTensor(dt, k.x, rng)};
      c.outputs = {{dt, k.y}};
      ExpectGpuMatchesCpu(c, ExactTol(), Label("Transpose", dt, k.x));  // a pure copy
    }
  }
}

OpCall MatMulCall(DType dt, const Shape& a, const Shape& b, const Shape& y, std::mt19937& rng) {
  OpCall c;
  c.op = "MatMul";
  c.opset = 13;
  c.inputs = {RandomTensor(dt, a, rng, -1.0f, 1.0f), RandomTensor(dt, b, rng, -1.0f, 1.0f)};
  c.outputs = {{dt, y}};
  return c;
}

// TF32 GEMMs for the scope's lifetime (off again even when a check throws).
struct Tf32Scope {
  Tf32Scope() { cuda::SetAllowTf32(true); }
  ~Tf32Scope() { cuda::SetAllowTf32(false); }
  Tf32Scope(const Tf32Scope&) = delete;
  Tf32Scope& operator=(const Tf32Scope&) = delete;
};

struct MatMulCase { Shape a, b, y; };
// Strided batches, a broadcast B (stride 0), general broadcasting (one GEMM per batch), 1-D operands.
const MatMulCase kMatMulCases[] = {{{64, 96}, {96, 80}, {64, 80}},           {{3, 17, 33}, {33, 19}, {3, 17, 19}},
                                   {{2, 1, 8, 16}, {3, 16, 4}, {2, 3, 8, 4}}, {{40}, {40, 7}, {7}},
                                   {{5, 40}, {40}, {5}},                      {{4, 9, 31}, {4, 31, 12}, {4, 9, 12}},
                                   {{17, 31}, {2, 31, 9}, {2, 17, 9}}};

TEST(CudaKernels, MatMulMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(17);
  for (const MatMulCase& k : kMatMulCases)
    for (DType dt : kFloatTypes) ExpectGpuMatchesCpu(MatMulCall(dt, k.a, k.b, k.y, rng), Label("MatMul", dt, k.y));
  Tf32Scope tf32;
  ExpectGpuMatchesCpu(MatMulCall(DType::kFloat32, {256, 512}, {512, 128}, {256, 128}, rng), cuda_test::Tf32Tol(),
                      "tf32");
}

// M x K x N down to 1 x 1 x 1 and odd sizes: leading dimensions of odd byte counts (an f16 row of 7
// elements is 14 bytes), which limit the alignment cuBLASLt may assume just as pointers do.
TEST(CudaKernels, MatMulOddShapesMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(23);
  struct Mkn { int64_t m, k, n; };
  const Mkn dims[] = {{1, 1, 1}, {3, 5, 7}, {17, 31, 9}, {1, 33, 1}, {7, 1, 5}, {1, 4097, 3}};
  for (const Mkn& d : dims) {
    for (DType dt : kFloatTypes) {
      ExpectGpuMatchesCpu(MatMulCall(dt, {d.m, d.k}, {d.k, d.n}, {d.m, d.n}, rng), Label("MatMul", dt, {d.m, d.k, d.n}));
      ExpectGpuMatchesCpu(MatMulCall(dt, {3, d.m, d.k}, {3, d.k, d.n}, {3, d.m, d.n}, rng),
                          Label("batched MatMul", dt, {d.m, d.k, d.n}));
      ExpectGpuMatchesCpu(MatMulCall(dt, {2, 1, d.m, d.k}, {3, d.k, d.n}, {2, 3, d.m, d.n}, rng),
                          Label("broadcast MatMul", dt, {d.m, d.k, d.n}));
    }
  }
}

// MatMul on device views at odd element offsets: f16/bf16 operands 2-byte aligned, f32 4-byte,
// through every path of the kernel (one GEMM, strided batches, a broadcast B, one GEMM per batch).
TEST(CudaKernels, MatMulMisalignedViewsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(24);
  const DeviceLayout layouts[] = {{{1, 0}, {0}}, {{0, 1}, {1}}, {{1, 3}, {5}}, {{8, 8}, {8}}};
  for (const MatMulCase& k : kMatMulCases) {
    for (DType dt : kFloatTypes) {
      for (const DeviceLayout& l : layouts) {
        const std::string label = Label("MatMul", dt, k.y) + " offsets A " + std::to_string(l.input_offsets[0]) +
                                  " B " + std::to_string(l.input_offsets[1]) + " Y " + std::to_string(l.output_offsets[0]);
        ExpectGpuMatchesCpu(MatMulCall(dt, k.a, k.b, k.y, rng), DefaultTol(dt), label, l);
      }
    }
  }
  Tf32Scope tf32;
  ExpectGpuMatchesCpu(MatMulCall(DType::kFloat32, {3, 64, 96}, {96, 40}, {3, 64, 40}, rng), cuda_test::Tf32Tol(),
                      "tf32 misaligned", DeviceLayout{{1, 1}, {1}});
}

// cuBLASLt's GELU epilogue may evaluate tanh with the hardware approximation (relative error about
// 5e-4): up to ~2.5e-4 * |x| absolute, large relative to GELU(x) itself where x << 0.
Tol GeluEpilogueTol(DType dt) {
  Tol t = DefaultTol(dt);
  t.rtol = std::max(t.rtol, 1e-3);
  t.atol = std::max(t.atol, 2e-3);
  t.rel_l2 = std::max(t.rel_l2, 1e-3);
  return t;
}

Tol ActivationTol(const std::string& act, DType dt) { return act == "GeluTanh" ? GeluEpilogueTol(dt) : DefaultTol(dt); }

// The test's labels are activation names, but for "GeluTanh": Gelu with approximate="tanh", whose
// parameter (the position of "tanh" in none|tanh) is 1.
std::string ActName(const std::string& act) { return act == "GeluTanh" ? "Gelu" : act; }

std::vector<float> ActParams(const std::string& act) {
  if (act == "GeluTanh") return {1.0f};
  return act == "LeakyRelu" ? std::vector<float>{0.1f} : std::vector<float>{};
}

OpCall FusedMatMulCall(DType dt, const std::string& act, int64_t m, int64_t k, int64_t n, std::mt19937& rng) {
  OpCall c = MatMulCall(dt, {m, k}, {k, n}, {m, n}, rng);
  c.op = "FusedMatMul";
  c.domain = kOneflowDomain;
  c.opset = 1;
  c.attrs.set("activation", Attribute::String(ActName(act)));
  c.attrs.set("activation_params", Attribute::Floats(ActParams(act)));
  c.inputs.push_back(RandomTensor(dt, {n}, rng));
  return c;
}

TEST(CudaKernels, FusedMatMulAndGemmEpiloguesMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(18);
  for (const char* act : {"None", "Relu", "GeluTanh", "Gelu", "Sigmoid"}) {
    for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
      ExpectGpuMatchesCpu(FusedMatMulCall(dt, act, 48, 64, 40, rng), ActivationTol(act, dt),
                          std::string("FusedMatMul ") + act + " " + DTypeName(dt));
    }
  }
  struct GemmCase { int ta, tb; float alpha, beta; Shape c; };
  const GemmCase gemms[] = {{0, 0, 1.0f, 1.0f, {40}}, {1, 0, 2.0f, 0.5f, {48, 1}}, {0, 1, 1.0f, 1.0f, {48, 40}},
                            {1, 1, 0.5f, 0.0f, {40}},  {0, 0, 1.0f, 1.0f, {}}};
  for (const GemmCase& g : gemms) {
    OpCall c;
    c.op = "Gemm";
    c.opset = 13;
    c.attrs.set("transA", Attribute::Int(g.ta));
    c.attrs.set("transB", Attribute::Int(g.tb));
    c.attrs.set("alpha", Attribute::Float(g.alpha));
    c.attrs.set("beta", Attribute::Float(g.beta));
    c.inputs = {RandomTensor(DType::kFloat32, g.ta ? Shape{64, 48} : Shape{48, 64}, rng),
                RandomTensor(DType::kFloat32, g.tb ? Shape{40, 64} : Shape{64, 40}, rng),
                RandomTensor(DType::kFloat32, g.c, rng)};
    c.outputs = {{DType::kFloat32, {48, 40}}};
    ExpectGpuMatchesCpu(c, "Gemm transA=" + std::to_string(g.ta) + " transB=" + std::to_string(g.tb) +
                               " C=" + ShapeToString(g.c));
  }
}

// A bias the epilogue cannot read (2-byte f16 / 4-byte f32 aligned) is broadcast into Y first and
// accumulated; a 16-byte aligned one (offset 8 f16 elements) still goes through the epilogue.
TEST(CudaKernels, FusedMatMulMisalignedBiasMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(25);
  struct Case { DeviceLayout layout; int64_t m; };
  const Case cases[] = {{{{0, 0, 1}, {0}}, 17}, {{{0, 0, 1}, {0}}, 1}, {{{0, 0, 8}, {0}}, 17}, {{{1, 1, 3}, {1}}, 17}};
  for (const char* act : {"None", "Relu", "GeluTanh", "Sigmoid"}) {
    for (DType dt : kFloatTypes) {
      for (const Case& k : cases) {
        ExpectGpuMatchesCpu(FusedMatMulCall(dt, act, k.m, 33, 24, rng), ActivationTol(act, dt),
                            std::string("FusedMatMul ") + act + " " + DTypeName(dt) + " M=" + std::to_string(k.m) +
                                " bias offset " + std::to_string(k.layout.input_offsets[2]),
                            k.layout);
      }
    }
  }
}

OpCall GemmCall(const std::string& op, DType dt, int ta, int tb, float alpha, float beta, int64_t m, int64_t k,
                int64_t n, const Shape* c_shape, std::mt19937& rng) {
  OpCall c;
  c.op = op;
  c.opset = op == "Gemm" ? 13 : 1;
  if (op != "Gemm") c.domain = kOneflowDomain;
  c.attrs.set("transA", Attribute::Int(ta));
  c.attrs.set("transB", Attribute::Int(tb));
  c.attrs.set("alpha", Attribute::Float(alpha));
  c.attrs.set("beta", Attribute::Float(beta));
  c.inputs = {RandomTensor(dt, ta ? Shape{k, m} : Shape{m, k}, rng, -1.0f, 1.0f),
              RandomTensor(dt, tb ? Shape{n, k} : Shape{k, n}, rng, -1.0f, 1.0f)};
  if (c_shape) c.inputs.push_back(RandomTensor(dt, *c_shape, rng));
  c.outputs = {{dt, {m, n}}};
  return c;
}

// ai.oneflow FusedGemm (Gemm + activation, built by the fusion pass) against the CPU kernel: C as a
// row (the bias epilogue), as [1, N], as a full [M, N] or a column (accumulated with beta before the
// activation), absent; Relu and GeluTanh fused into cuBLASLt's epilogue, LeakyRelu as its own pass.
TEST(CudaKernels, FusedGemmMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(26);
  struct Case { int ta, tb; float alpha, beta; bool has_c; Shape c; int64_t m, k, n; };
  const Case cases[] = {
      {0, 0, 1.0f, 1.0f, true, {40}, 48, 64, 40},      {0, 1, 1.0f, 1.0f, true, {1, 40}, 48, 64, 40},
      {1, 0, 0.75f, 1.0f, true, {48, 40}, 48, 64, 40}, {1, 1, 1.0f, 0.5f, true, {48, 1}, 48, 64, 40},
      {0, 0, 1.0f, 1.0f, false, {}, 48, 64, 40},       {1, 0, 1.0f, 1.0f, true, {9}, 17, 31, 9},
      {0, 1, 2.0f, 1.0f, true, {1, 9}, 1, 31, 9},      {0, 0, 1.0f, 1.0f, true, {}, 3, 5, 7},
  };
  for (const char* act : {"None", "Relu", "GeluTanh", "LeakyRelu"}) {
    for (DType dt : {DType::kFloat32, DType::kFloat16}) {
      for (const Case& k : cases) {
        OpCall c = GemmCall("FusedGemm", dt, k.ta, k.tb, k.alpha, k.beta, k.m, k.k, k.n, k.has_c ? &k.c : nullptr, rng);
        c.attrs.set("activation", Attribute::String(ActName(act)));
        c.attrs.set("activation_params", Attribute::Floats(ActParams(act)));
        ExpectGpuMatchesCpu(c, ActivationTol(act, dt),
                            std::string("FusedGemm ") + act + " " + DTypeName(dt) + " transA=" + std::to_string(k.ta) +
                                " transB=" + std::to_string(k.tb) + " C=" + (k.has_c ? ShapeToString(k.c) : "none") +
                                " MxKxN=" + std::to_string(k.m) + "x" + std::to_string(k.k) + "x" + std::to_string(k.n));
      }
    }
  }
}

// Gemm with every operand at an odd offset, including a row C (the bias path) and a full C.
TEST(CudaKernels, GemmMisalignedViewsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(27);
  const Shape row{24}, full{16, 24};
  for (DType dt : kFloatTypes) {
    for (int ta : {0, 1}) {
      for (int tb : {0, 1}) {
        for (const Shape* cs : {&row, &full}) {
          for (const DeviceLayout& l : {DeviceLayout{{1, 1, 1}, {1}}, DeviceLayout{{2, 3, 0}, {0}}}) {
            const OpCall c = GemmCall("Gemm", dt, ta, tb, 1.0f, 1.0f, 16, 40, 24, cs, rng);
            ExpectGpuMatchesCpu(c, DefaultTol(dt),
                                Label("Gemm", dt, *cs) + " transA=" + std::to_string(ta) + " transB=" +
                                    std::to_string(tb) + " offsets " + std::to_string(l.input_offsets[0]) + "," +
                                    std::to_string(l.input_offsets[1]) + "," + std::to_string(l.input_offsets[2]) +
                                    " -> " + std::to_string(l.output_offsets[0]),
                                l);
          }
        }
      }
    }
  }
}

// Unary and binary kernels at sizes 1, 7, 33, 1023, 4097 on aligned tensors (16-byte vector path
// plus a scalar tail) and on views at odd offsets (the scalar path), inputs and output each placed
// independently; writes outside the output view fail (RunKernel's guard bytes).
TEST(CudaKernels, ElementwiseOddSizesAndMisalignedViewsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(28);
  const DeviceLayout layouts[] = {{{0, 0}, {0}}, {{1, 1}, {1}}, {{1, 0}, {0}}, {{0, 3}, {1}}, {{8, 8}, {8}}};
  for (int64_t n : {1, 7, 33, 1023, 4097}) {
    for (DType dt : kFloatTypes) {
      for (const DeviceLayout& l : layouts) {
        const std::string where = " offsets " + std::to_string(l.input_offsets[0]) + "," +
                                  std::to_string(l.input_offsets[1]) + " -> " + std::to_string(l.output_offsets[0]);
        ExpectGpuMatchesCpu(Unary("Sigmoid", RandomTensor(dt, {n}, rng)), DefaultTol(dt), Label("Sigmoid", dt, {n}) + where,
                            DeviceLayout{{l.input_offsets[0]}, l.output_offsets});
        ExpectGpuMatchesCpu(Binary("Add", RandomTensor(dt, {n}, rng), RandomTensor(dt, {n}, rng), {n}), DefaultTol(dt),
                            Label("Add", dt, {n}) + where, l);
        ExpectGpuMatchesCpu(Binary("Mul", RandomTensor(dt, {n}, rng), RandomTensor(dt, {1}, rng), {n}), DefaultTol(dt),
                            Label("Mul broadcast", dt, {n}) + where, l);
      }
    }
  }
}

// cuda_common.cuh's GridFor caps a launch at 65535 blocks of kThreads = 256 threads; the contiguous
// unary and binary kernels move 16 bytes (4 floats) per thread and step when every pointer is
// 16-byte aligned, one element otherwise. These sizes make every launch hit the cap and its threads
// loop more than once.
constexpr int64_t kGridCap = 65535;
constexpr int64_t kThreadsPerBlock = 256;

TEST(CudaKernels, GridStrideLoopsBeyondTheGridCap) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(29);
  const int64_t one_step = kGridCap * kThreadsPerBlock;  // items a capped launch covers per step
  // Vector path: 1.25 steps of 4-float vectors (84M floats, 336 MB per tensor).
  const int64_t n_vec = one_step * 4 * 5 / 4 + 3;
  ASSERT_GT(n_vec / 4, one_step);
  const Tensor big = RandomTensor(DType::kFloat32, {n_vec}, rng);
  ExpectGpuMatchesCpu(Unary("Neg", big), ExactTol(), "Neg, vector path, " + std::to_string(n_vec) + " elements");
  ExpectGpuMatchesCpu(Binary("Add", big, big, {n_vec}), DefaultTol(DType::kFloat32),
                      "Add same shape, vector path, " + std::to_string(n_vec) + " elements");
  // Scalar paths (a misaligned view; a broadcast operand): 2.5 steps of single elements (168 MB).
  const int64_t n_scalar = one_step * 5 / 2 + 7;
  ASSERT_GT(n_scalar, 2 * one_step);
  const Tensor mid = RandomTensor(DType::kFloat32, {n_scalar}, rng);
  ExpectGpuMatchesCpu(Unary("Neg", mid), ExactTol(), "Neg, misaligned, " + std::to_string(n_scalar) + " elements",
                      DeviceLayout{{1}, {1}});
  ExpectGpuMatchesCpu(Binary("Add", mid, RandomTensor(DType::kFloat32, {1}, rng), {n_scalar}),
                      DefaultTol(DType::kFloat32), "Add broadcast, " + std::to_string(n_scalar) + " elements");
}

}  // namespace
}  // namespace oneflow
