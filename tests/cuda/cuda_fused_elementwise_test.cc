// ai.oneflow FusedElementwise on CUDA against the CPU kernel (itself tested against unfused graphs
// in tests/unit/fused_elementwise_test.cc): every instruction alone, every broadcast the op allows,
// sizes that leave partial vectors and span many blocks, programs the pass builds, f32/f16/bf16; and
// a CUDA session whose chain fuses against a CPU session. Skips with "no CUDA device" where there is none.
#include <gtest/gtest.h>

#include <memory>

#include "../graph_builder.h"
#include "cuda_compare.h"
#include "engine/session.h"
#include "graph/fused_elementwise_program.h"
#include "graph/op_schema.h"
#include "passes/passes.h"

namespace oneflow {
namespace {

using cuda_test::DefaultTol;
using cuda_test::DeviceLayout;
using cuda_test::ExpectGpuMatchesCpu;
using cuda_test::OpCall;
using cuda_test::RandomTensor;

// The kernel computes in f32 and rounds once to the output dtype, as the CPU reference (f32 on the
// same rounded inputs) does before the comparison's own rounding allowance.
cuda_test::Tol Tolerance(DType dt) { return DefaultTol(dt); }

OpCall ProgramCall(const EwProgram& p, DType dt, const Shape& out, const std::vector<Shape>& inputs, std::mt19937& rng) {
  OpCall c;
  c.op = "FusedElementwise";
  c.domain = kOneflowDomain;
  c.opset = kOneflowDomainVersion;
  p.ToAttrs(c.attrs);
  for (const Shape& s : inputs) c.inputs.push_back(RandomTensor(dt, s, rng));
  c.outputs = {{dt, out}};
  return c;
}

// Host-side (no device needed): what the static types show a CUDA kernel cannot do is refused when
// the kernel is created, so placement puts the node on the CPU instead of failing a run.
std::unique_ptr<OpKernel> CreateCudaKernel(const Graph& g, const Node& n) {
  const KernelDef* def = KernelRegistry::Global().Find(kOneflowDomain, n.op_type, DeviceType::kCuda);
  OF_REQUIRE(def != nullptr, "no CUDA kernel for ", n.op_type);
  return def->factory(KernelInitContext(g, n));
}

void ExpectRefused(const Graph& g, const Node& n, const std::string& why) {
  try {
    CreateCudaKernel(g, n);
    ADD_FAILURE() << n.op_type << " should be refused: " << why;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(CudaRegistry, FusedElementwiseRefusesF64AtCreation) {
  test_util::GraphBuilder b;
  b.g.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
  for (DType dt : {DType::kFloat64, DType::kFloat32}) {
    const int x = b.Input(std::string("x") + DTypeName(dt), TensorType::Of(dt, Shape{4}));
    b.Node("FusedElementwise", {x});
    Node& n = b.g.nodes.back();
    n.domain = kOneflowDomain;
    EwProgram p;
    p.code = {{EwOp::kLoad, 0, 0, 0}, {EwOp::kExp, 0, 0, 0}};
    p.num_registers = 1;
    p.ToAttrs(n.attrs);
    if (dt == DType::kFloat64) ExpectRefused(b.g, n, "float64 is not supported on CUDA");
    else EXPECT_NE(CreateCudaKernel(b.g, n), nullptr);
  }
}

TEST(CudaRegistry, FusedAttentionRefusesLargeHeadsAtCreation) {
  test_util::GraphBuilder b;
  const TensorType t = TensorType::Of(DType::kFloat32, Shape{1, 2, 16, 256});
  const int q = b.Input("q", t), k = b.Input("k", t), v = b.Input("v", t);
  b.Node("FusedAttention", {q, k, v});
  b.g.nodes.back().domain = kOneflowDomain;
  ExpectRefused(b.g, b.g.nodes.back(), "head sizes above 128");
}

TEST(CudaFusedElementwise, EveryInstructionMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(61);
  const Shape out{3, 5, 41};  // 615 elements: partial vectors at the end
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int op = static_cast<int>(EwOp::kRelu); op < static_cast<int>(EwOp::kCount); ++op) {
      const EwOp e = static_cast<EwOp>(op);
      EwProgram p;
      for (float c : {-0.4f, 0.7f}) p.constants.push_back(c);  // LeakyRelu alpha; HardSigmoid alpha, beta; Clip bounds
      p.num_registers = 2;
      p.code = {{EwOp::kLoad, 0, 0, 0}};
      if (EwIsBinary(e)) {
        p.code.push_back({EwOp::kLoad, 1, 1, 0});
        p.code.push_back({e, 0, 0, 1});
      } else {
        p.code.push_back({e, 1, 0, 0});
      }
      const std::vector<Shape> ins = EwIsBinary(e) ? std::vector<Shape>{out, out} : std::vector<Shape>{out};
      ExpectGpuMatchesCpu(ProgramCall(p, dt, out, ins, rng), Tolerance(dt),
                          std::string(EwOpName(e)) + " " + DTypeName(dt));
    }
  }
}

// y = (x - row) * bias + middle * scalar + trailing, over every operand kind at once.
TEST(CudaFusedElementwise, BroadcastOperandsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(62);
  EwProgram p;
  p.constants.push_back(1.5f);
  p.num_registers = 3;
  p.code = {{EwOp::kLoad, 0, 0, 0}, {EwOp::kLoad, 1, 1, 0}, {EwOp::kSub, 0, 0, 1}, {EwOp::kLoad, 1, 2, 0},
            {EwOp::kMul, 0, 0, 1},  {EwOp::kLoad, 1, 3, 0}, {EwOp::kConst, 2, 0, 0}, {EwOp::kMul, 1, 1, 2},
            {EwOp::kAdd, 0, 0, 1},  {EwOp::kLoad, 1, 4, 0}, {EwOp::kAdd, 0, 0, 1}, {EwOp::kLoad, 1, 5, 0},
            {EwOp::kMax, 0, 0, 1}};
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const Shape& out : {Shape{4, 7, 67}, Shape{2, 3, 8}, Shape{1, 1, 1}, Shape{5, 129, 1001}}) {
      const int64_t a = out[0], b = out[1], c = out[2];
      const std::vector<Shape> ins = {out, {a, b, 1}, {c}, {b, 1}, {b, c}, {1}};
      ExpectGpuMatchesCpu(ProgramCall(p, dt, out, ins, rng), Tolerance(dt),
                          "broadcast " + ShapeToString(out) + " " + DTypeName(dt));
    }
  }
}

// Programs as the pass builds them, from a graph: Gelu(x + bias) * sigmoid(y) - Sqrt(|x|) / 3.
TEST(CudaFusedElementwise, PassBuiltProgramMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  test_util::GraphBuilder b;
  const Shape shape{8, 1000};
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, shape));
  const int y = b.Input("y", TensorType::Of(DType::kFloat32, shape));
  const int bias = b.Input("bias", TensorType::Of(DType::kFloat32, Shape{1000}));
  const int gelu = b.Node("Gelu", {b.Node("Add", {x, bias})});
  b.g.nodes.back().opset = 20;
  const int left = b.Node("Mul", {gelu, b.Node("Sigmoid", {y})});
  const int right = b.Node("Div", {b.Node("Sqrt", {b.Node("Abs", {x})}), b.Const("three", Tensor::Scalar(DType::kFloat32, 3.0))});
  b.g.outputs = {b.Node("Sub", {left, right})};
  PrepareGraph(b.g);
  ASSERT_EQ(FuseElementwise(b.g), 1);
  const Node& n = b.g.nodes.back();
  ASSERT_EQ(n.op_type, "FusedElementwise");
  std::mt19937 rng(63);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    OpCall c;
    c.op = n.op_type;
    c.domain = n.domain;
    c.opset = n.opset;
    c.attrs = n.attrs;
    for (int v : n.inputs) c.inputs.push_back(RandomTensor(dt, b.g.values[static_cast<size_t>(v)].type.ToShape(), rng));
    c.outputs = {{dt, shape}};
    ExpectGpuMatchesCpu(c, Tolerance(dt), std::string("pass-built ") + DTypeName(dt));
  }
}

// The launch is capped at 65535 blocks of kBlock = 128 threads, each thread taking 16 bytes of
// elements (4 f32, 8 bf16) per step (fused_elementwise.cu): these sizes exceed one step of a capped
// grid (by half for f32, 201 MB per tensor; by a tenth for bf16, 148 MB), so the grid-stride loop
// runs more than once; neither is a multiple of the vector width.
TEST(CudaFusedElementwise, LargeTensorMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(64);
  EwProgram p;
  p.num_registers = 2;
  p.code = {{EwOp::kLoad, 0, 0, 0}, {EwOp::kTanh, 1, 0, 0}, {EwOp::kMul, 0, 0, 1}, {EwOp::kLoad, 1, 1, 0},
            {EwOp::kAdd, 0, 0, 1}};
  const int64_t one_step = int64_t{65535} * 128;  // vector groups a capped launch covers per step
  for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
    const int64_t vec = 16 / static_cast<int64_t>(DTypeSize(dt));
    const int64_t n = dt == DType::kFloat32 ? one_step * vec * 3 / 2 + 7 : one_step * vec * 11 / 10 + 3;
    ASSERT_GT(n / vec, one_step);
    const Shape out{n};
    ExpectGpuMatchesCpu(ProgramCall(p, dt, out, {out, out}, rng), Tolerance(dt),
                        std::string("large ") + DTypeName(dt) + " " + std::to_string(n) + " elements");
  }
}

// Inputs and output at odd element offsets (no 16-byte vector access is possible), next to aligned
// ones, and odd sizes; writes outside the output view fail (RunKernel's guard bytes).
TEST(CudaFusedElementwise, MisalignedViewsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(66);
  EwProgram p;
  p.constants.push_back(0.5f);
  p.num_registers = 2;
  p.code = {{EwOp::kLoad, 0, 0, 0}, {EwOp::kSigmoid, 1, 0, 0}, {EwOp::kMul, 0, 0, 1}, {EwOp::kLoad, 1, 1, 0},
            {EwOp::kAdd, 0, 0, 1},  {EwOp::kConst, 1, 0, 0},   {EwOp::kMul, 0, 0, 1}};
  const DeviceLayout layouts[] = {{{1, 1}, {1}}, {{0, 1}, {0}}, {{1, 0}, {0}}, {{0, 0}, {3}}, {{8, 8}, {8}}};
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t n : {1, 7, 33, 1023, 4097}) {
      for (const DeviceLayout& l : layouts) {
        ExpectGpuMatchesCpu(ProgramCall(p, dt, {n}, {{n}, {n}}, rng), Tolerance(dt),
                            std::string("misaligned ") + DTypeName(dt) + " n=" + std::to_string(n) + " offsets " +
                                std::to_string(l.input_offsets[0]) + "," + std::to_string(l.input_offsets[1]) +
                                " -> " + std::to_string(l.output_offsets[0]),
                            l);
      }
      // A broadcast operand ([1]) read next to a misaligned full one.
      ExpectGpuMatchesCpu(ProgramCall(p, dt, {n}, {{n}, {1}}, rng), Tolerance(dt),
                          std::string("misaligned with a broadcast ") + DTypeName(dt) + " n=" + std::to_string(n),
                          DeviceLayout{{1, 1}, {1}});
    }
  }
}

// A session on the device fuses the chain (the CUDA pass order) and agrees with a CPU session.
TEST(CudaFusedElementwise, SessionMatchesCpuSession) {
  OF_REQUIRE_CUDA_DEVICE();
  test_util::GraphBuilder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, std::vector<Dim>{Dim::Symbol("N"), Dim::Known(256)}));
  std::mt19937 rng(65);
  const int h = b.Node("Add", {x, b.Const("bias", RandomTensor(DType::kFloat32, Shape{256}, rng))});
  b.g.outputs = {b.Node("Mul", {h, b.Node("Sigmoid", {h})})};
  PrepareGraph(b.g);
  SessionOptions cuda_opts;
  cuda_opts.device = DeviceType::kCuda;
  Session gpu(b.g, cuda_opts), cpu(b.g, SessionOptions{});
  int fused = 0;
  for (const Node& n : gpu.optimized().nodes) fused += n.op_type == "FusedElementwise";
  EXPECT_EQ(fused, 1);
  for (int64_t rows : {1, 33, 512}) {
    const Tensor xt = RandomTensor(DType::kFloat32, Shape{rows, 256}, rng);
    const Tensor got = gpu.Run({{"x", xt}}, {})[0].second;
    const Tensor want = cpu.Run({{"x", xt}}, {})[0].second;
    EXPECT_TRUE(cuda_test::ElementsClose(got, want, DefaultTol(DType::kFloat32))) << rows << " rows";
  }
}

}  // namespace
}  // namespace oneflow
