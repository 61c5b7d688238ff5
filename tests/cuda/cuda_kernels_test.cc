// Every CUDA kernel against the CPU kernel on the same inputs (fresh random data, outputs poisoned
// before the GPU run). Half-precision runs are compared with the CPU's f32 result on the same
// (rounded) inputs. All of these skip with "no CUDA device" where there is none.
#include <gtest/gtest.h>

#include "cuda_compare.h"
#include "cuda_test_util.h"
#include "graph/op_schema.h"
#include "kernels/cuda/matmul_cublaslt.h"

namespace oneflow {
namespace {

using cuda_test::ExpectGpuMatchesCpu;
using cuda_test::OpCall;
using cuda_test::RandomTensor;
using cuda_test::RelL2;
using cuda_test::RunKernel;

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

TEST(CudaKernels, UnaryMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Gelu", "Exp", "Neg", "Abs", "Erf", "Softplus", "HardSwish",
                         "LeakyRelu", "HardSigmoid"}) {
    for (Shape s : {Shape{3, 5, 7}, Shape{1001}, Shape{4096}}) {  // odd sizes exercise the vector tail
      ExpectGpuMatchesCpu(Unary(op, RandomTensor(DType::kFloat32, s, rng)), 1e-5, op);
      ExpectGpuMatchesCpu(Unary(op, RandomTensor(DType::kBFloat16, s, rng)), 1e-2, std::string(op) + " bf16");
      ExpectGpuMatchesCpu(Unary(op, RandomTensor(DType::kFloat16, s, rng)), 2e-3, std::string(op) + " f16");
    }
  }
  OpCall gelu_tanh = Unary("Gelu", RandomTensor(DType::kFloat32, {2049}, rng, -4.0f, 4.0f));
  gelu_tanh.opset = 20;
  gelu_tanh.attrs.set("approximate", Attribute::String("tanh"));
  ExpectGpuMatchesCpu(gelu_tanh, 1e-5, "Gelu tanh");
  for (const char* op : {"Log", "Sqrt", "Reciprocal"})
    ExpectGpuMatchesCpu(Unary(op, RandomTensor(DType::kFloat32, {777}, rng, 0.1f, 4.0f)), 1e-5, op);
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
        OpCall c;
        c.op = op;
        c.opset = 13;
        c.inputs = {RandomTensor(dt, k.a, rng, pow ? 0.5f : -2.0f, 2.0f),
                    RandomTensor(dt, k.b, rng, std::string(op) == "Div" ? 0.5f : -2.0f, 2.0f)};
        c.outputs = {{dt, k.y}};
        ExpectGpuMatchesCpu(c, dt == DType::kFloat32 ? 1e-6 : 1e-2, std::string(op) + " " + ShapeToString(k.y));
      }
    }
  }
  // Integers are exact.
  OpCall c;
  c.op = "Add";
  Tensor a(DType::kInt64, {3, 4}), b(DType::kInt64, {4});
  for (int i = 0; i < 12; ++i) a.data<int64_t>()[i] = (int64_t{1} << 40) + i * 7;
  for (int i = 0; i < 4; ++i) b.data<int64_t>()[i] = -i * 1000003;
  c.inputs = {a, b};
  c.outputs = {{DType::kInt64, {3, 4}}};
  EXPECT_EQ(RelL2(RunKernel(DeviceType::kCuda, c)[0], RunKernel(DeviceType::kCpu, c)[0]), 0.0);
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
      EXPECT_EQ(RelL2(gpu, cpu), 0.0) << DTypeName(from) << " -> " << DTypeName(to);
    }
  }
}

TEST(CudaKernels, ReductionsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(14);
  struct Case { Shape x; std::vector<int64_t> axes; int keep; Shape y; };
  const Case cases[] = {{{8, 300}, {1}, 1, {8, 1}},       {{4, 5, 6}, {0, 2}, 0, {5}},
                        {{4, 5, 6}, {1}, 0, {4, 6}},       {{2, 3, 4, 5}, {2, 3}, 1, {2, 3, 1, 1}},
                        {{7, 9}, {}, 0, {}},               {{3, 1, 4}, {1}, 1, {3, 1, 4}}};
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    for (const Case& k : cases) {
      OpCall c;
      c.op = op;
      c.opset = 13;
      if (!k.axes.empty()) c.attrs.set("axes", Attribute::Ints(k.axes));
      c.attrs.set("keepdims", Attribute::Int(k.keep));
      c.inputs = {RandomTensor(DType::kFloat32, k.x, rng)};
      c.outputs = {{DType::kFloat32, k.y}};
      ExpectGpuMatchesCpu(c, 1e-5, std::string(op) + " " + ShapeToString(k.x));
    }
  }
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
        ExpectGpuMatchesCpu(c, dt == DType::kFloat32 ? 1e-5 : 1e-2, std::string(op) + " axis " + std::to_string(axis));
      }
    }
  }
  for (int64_t axis : {-1, 1}) {
    OpCall c;
    c.op = "LayerNormalization";
    c.opset = 17;
    c.attrs.set("axis", Attribute::Int(axis));
    c.attrs.set("epsilon", Attribute::Float(1e-5f));
    const Shape x{5, 12, 96};
    const Shape norm(x.begin() + (axis < 0 ? 2 : 1), x.end());
    c.inputs = {RandomTensor(DType::kFloat32, x, rng), RandomTensor(DType::kFloat32, norm, rng),
                RandomTensor(DType::kFloat32, norm, rng)};
    Shape stat = x;
    for (size_t d = (axis < 0 ? 2 : 1); d < stat.size(); ++d) stat[d] = 1;
    c.outputs = {{DType::kFloat32, x}, {DType::kFloat32, stat}, {DType::kFloat32, stat}};
    ExpectGpuMatchesCpu(c, 1e-5, "LayerNorm axis " + std::to_string(axis));
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
      const Tensor gpu = RunKernel(DeviceType::kCuda, c)[0];
      OpCall ref = c;
      ref.inputs[0] = cuda_test::CastHost(c.inputs[0], DType::kFloat32);
      ref.outputs[0].first = DType::kFloat32;
      EXPECT_EQ(RelL2(gpu, RunKernel(DeviceType::kCpu, ref)[0]), 0.0) << ShapeToString(k.x);  // a pure copy
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

TEST(CudaKernels, MatMulMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(17);
  struct Case { Shape a, b, y; };
  const Case cases[] = {{{64, 96}, {96, 80}, {64, 80}},           {{3, 17, 33}, {33, 19}, {3, 17, 19}},
                        {{2, 1, 8, 16}, {3, 16, 4}, {2, 3, 8, 4}}, {{40}, {40, 7}, {7}},
                        {{5, 40}, {40}, {5}},                      {{4, 9, 31}, {4, 31, 12}, {4, 9, 12}}};
  for (const Case& k : cases) {
    ExpectGpuMatchesCpu(MatMulCall(DType::kFloat32, k.a, k.b, k.y, rng), 1e-5, "f32 " + ShapeToString(k.y));
    ExpectGpuMatchesCpu(MatMulCall(DType::kBFloat16, k.a, k.b, k.y, rng), 1e-2, "bf16 " + ShapeToString(k.y));
    ExpectGpuMatchesCpu(MatMulCall(DType::kFloat16, k.a, k.b, k.y, rng), 2e-3, "f16 " + ShapeToString(k.y));
  }
  cuda::SetAllowTf32(true);
  ExpectGpuMatchesCpu(MatMulCall(DType::kFloat32, {256, 512}, {512, 128}, {256, 128}, rng), 2e-3, "tf32");
  cuda::SetAllowTf32(false);
}

TEST(CudaKernels, FusedMatMulAndGemmEpiloguesMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(18);
  for (const char* act : {"None", "Relu", "GeluTanh", "Gelu", "Sigmoid"}) {
    for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
      OpCall c = MatMulCall(dt, {48, 64}, {64, 40}, {48, 40}, rng);
      c.op = "FusedMatMul";
      c.domain = kOneflowDomain;
      c.opset = 1;
      c.attrs.set("activation", Attribute::String(act));
      c.attrs.set("activation_params", Attribute::Floats({}));
      c.inputs.push_back(RandomTensor(dt, {40}, rng));
      ExpectGpuMatchesCpu(c, dt == DType::kFloat32 ? 1e-5 : 1e-2, std::string("FusedMatMul ") + act);
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
    ExpectGpuMatchesCpu(c, 1e-5, "Gemm transA=" + std::to_string(g.ta) + " transB=" + std::to_string(g.tb) +
                                  " C=" + ShapeToString(g.c));
  }
}

}  // namespace
}  // namespace oneflow
