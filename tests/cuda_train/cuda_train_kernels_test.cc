// The CUDA training kernels (activation grads, ReduceSumToShape, Sum, Softmax/LogSoftmax grads,
// LayerNormalizationGrad, SoftmaxCrossEntropyLoss and its grad) against the CPU kernels on fresh
// random inputs, outputs poisoned before the GPU run. Half-precision runs are compared with the
// CPU's f32 result on the same rounded inputs. All skip with "no CUDA device" where there is none.
#include <gtest/gtest.h>

#include "../cuda/cuda_compare.h"
#include "../cuda/cuda_test_util.h"
#include "graph/grad_context.h"
#include "graph/op_schema.h"
#include "graph/ops/unary_ops.h"

namespace oneflow {
namespace {

using cuda_test::ExpectGpuMatchesCpu;
using cuda_test::OpCall;
using cuda_test::RandomTensor;
using cuda_test::RunKernel;

double Tol(DType dt) { return dt == DType::kFloat32 ? 1e-5 : dt == DType::kFloat16 ? 2e-3 : 1e-2; }

OpCall GradOp(const std::string& op, const Tensor& dy, const Tensor& saved) {
  OpCall c;
  c.op = op;
  c.domain = kOneflowDomain;
  c.opset = 1;
  c.inputs = {dy, saved};
  c.outputs = {{dy.dtype(), dy.shape()}};
  return c;
}

TEST(CudaTrainKernels, ActivationGradsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(31);
  struct Case {
    const char* op;
    AttrMap attrs;
  };
  const std::vector<Case> cases = {
      {"ReluGrad", {}},
      {"SigmoidGrad", {}},
      {"TanhGrad", {}},
      {"ErfGrad", {}},
      {"LeakyReluGrad", MakeAttrs({{"alpha", Attribute::Float(0.1f)}})},
      {"EluGrad", MakeAttrs({{"alpha", Attribute::Float(1.0f)}})},
      {"GeluGrad", MakeAttrs({{"approximate", Attribute::String("none")}})},
      {"GeluGrad", MakeAttrs({{"approximate", Attribute::String("tanh")}})},
      {"HardSigmoidGrad", MakeAttrs({{"alpha", Attribute::Float(0.2f)}, {"beta", Attribute::Float(0.5f)}})},
      {"HardSwishGrad", {}},
      {"SoftplusGrad", {}},
      {"SoftsignGrad", {}},
      {"MishGrad", {}},
      {"SeluGrad", MakeAttrs({{"alpha", Attribute::Float(1.67326f)}, {"gamma", Attribute::Float(1.0507f)}})},
      {"CeluGrad", MakeAttrs({{"alpha", Attribute::Float(1.0f)}})},
      {"ThresholdedReluGrad", MakeAttrs({{"alpha", Attribute::Float(1.0f)}})},
      {"ShrinkGrad", MakeAttrs({{"bias", Attribute::Float(0.0f)}, {"lambd", Attribute::Float(0.5f)}})},
      {"SwishGrad", MakeAttrs({{"alpha", Attribute::Float(1.0f)}})},
  };
  for (const Case& k : cases) {
    for (Shape s : {Shape{3, 5, 7}, Shape{4099}}) {
      for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
        // Saved values in (0, 1) for the ops that save Y of a sigmoid-like function.
        const bool unit = std::string(k.op) == "SigmoidGrad" || std::string(k.op) == "TanhGrad";
        OpCall c = GradOp(k.op, RandomTensor(dt, s, rng), RandomTensor(dt, s, rng, unit ? 0.0f : -4.0f, unit ? 1.0f : 4.0f));
        c.attrs = k.attrs;
        ExpectGpuMatchesCpu(c, Tol(dt), std::string(k.op) + " " + DTypeName(dt));
      }
    }
  }
}

// The derivative op of every unary row with Bwd (graph/ops/unary_ops.h), default attributes.
TEST(CudaTrainKernels, EveryRowDerivativeMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(33);
  int rows = 0;
  for (const UnaryOpInfo& row : kUnaryOps) {
    if (!row.standalone || row.grad == unary::GradFrom::kNone) continue;
    ++rows;
    // Saved Y of Sigmoid/Tanh lies in (-1, 1); saved X anywhere.
    const bool saved_y = row.grad == unary::GradFrom::kY;
    for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
      OpCall c = GradOp(std::string(OpName(row.grad_op)), RandomTensor(dt, {2049}, rng),
                        RandomTensor(dt, {2049}, rng, saved_y ? 0.0f : -4.0f, saved_y ? 1.0f : 4.0f));
      ExpectGpuMatchesCpu(c, Tol(dt), std::string(OpName(row.grad_op)) + " " + DTypeName(dt));
    }
  }
  EXPECT_GE(rows, 17);  // the rows with Bwd when this test was written
}

TEST(CudaTrainKernels, ReduceSumToShapeMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(32);
  struct Case { Shape x, y; };
  const Case cases[] = {{{4096, 256}, {256}},        {{8, 128, 1024}, {1024}}, {{8, 16, 32}, {16, 1}},
                        {{3, 4, 5}, {1, 4, 1}},      {{2, 3}, {2, 3}},         {{64, 100}, {1, 100}},
                        {{7, 9, 11}, {7, 1, 11}},    {{5, 300}, {5, 1}},       {{1, 1}, {}},
                        {{33, 1, 65}, {1, 65}}};
  for (const Case& k : cases) {
    for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
      OpCall c;
      c.op = "ReduceSumToShape";
      c.domain = kOneflowDomain;
      c.opset = 1;
      Tensor shape(DType::kInt64, {static_cast<int64_t>(k.y.size())});
      for (size_t i = 0; i < k.y.size(); ++i) shape.data<int64_t>()[i] = k.y[i];
      c.inputs = {RandomTensor(dt, k.x, rng), shape};
      c.outputs = {{dt, k.y}};
      // bf16 output rounding plus long f32 sums in another order.
      ExpectGpuMatchesCpu(c, dt == DType::kFloat32 ? 1e-5 : 1e-2, ShapeToString(k.x) + "->" + ShapeToString(k.y));
    }
  }
}

TEST(CudaTrainKernels, SumMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(33);
  for (int n : {1, 3, 10}) {
    OpCall c;
    c.op = "Sum";
    for (int i = 0; i < n; ++i) c.inputs.push_back(RandomTensor(DType::kFloat32, {5, 1031}, rng));
    c.outputs = {{DType::kFloat32, {5, 1031}}};
    ExpectGpuMatchesCpu(c, 1e-6, "Sum of " + std::to_string(n));
  }
  OpCall b;
  b.op = "Sum";
  b.inputs = {RandomTensor(DType::kBFloat16, {4, 1, 6}, rng), RandomTensor(DType::kBFloat16, {3, 1}, rng),
              RandomTensor(DType::kBFloat16, {6}, rng)};
  b.outputs = {{DType::kBFloat16, {4, 3, 6}}};
  ExpectGpuMatchesCpu(b, 1e-2, "Sum broadcast bf16");
}

TEST(CudaTrainKernels, SoftmaxGradsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(34);
  for (const char* op : {"SoftmaxGrad", "LogSoftmaxGrad"}) {
    for (int64_t axis : {-1, 1}) {
      for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
        const Shape s{4, 37, 5};
        OpCall c = GradOp(op, RandomTensor(dt, s, rng), RandomTensor(dt, s, rng, 0.0f, 1.0f));
        c.attrs.set("axis", Attribute::Int(axis));
        ExpectGpuMatchesCpu(c, Tol(dt) * 2, std::string(op) + " axis " + std::to_string(axis) + " " + DTypeName(dt));
      }
    }
  }
}

TEST(CudaTrainKernels, LayerNormGradMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(35);
  for (Shape s : {Shape{2, 64, 256}, Shape{300, 1000}, Shape{5, 7}}) {
    const int64_t n = s.back(), rows = NumElements(s) / n;
    for (bool saved : {false, true}) {
      OpCall c;
      c.op = "LayerNormalizationGrad";
      c.domain = kOneflowDomain;
      c.opset = 1;
      c.attrs.set("axis", Attribute::Int(-1));
      c.attrs.set("epsilon", Attribute::Float(1e-5f));
      const Tensor x = RandomTensor(DType::kFloat32, s, rng);
      c.inputs = {RandomTensor(DType::kFloat32, s, rng), x, RandomTensor(DType::kFloat32, {n}, rng)};
      if (saved) {
        // The statistics as the forward would save them, computed here in double.
        Tensor mean(DType::kFloat32, {rows}), inv(DType::kFloat32, {rows});
        for (int64_t r = 0; r < rows; ++r) {
          double m = 0, v = 0;
          for (int64_t i = 0; i < n; ++i) m += x.data<float>()[r * n + i];
          m /= n;
          for (int64_t i = 0; i < n; ++i) v += (x.data<float>()[r * n + i] - m) * (x.data<float>()[r * n + i] - m);
          mean.data<float>()[r] = static_cast<float>(m);
          inv.data<float>()[r] = static_cast<float>(1.0 / std::sqrt(v / n + 1e-5));
        }
        c.inputs.push_back(mean);
        c.inputs.push_back(inv);
      }
      c.outputs = {{DType::kFloat32, s}, {DType::kFloat32, {n}}, {DType::kFloat32, {n}}};
      ExpectGpuMatchesCpu(c, 1e-4, "LayerNormGrad " + ShapeToString(s) + (saved ? " saved" : ""));
    }
  }
}

OpCall Sce(const Tensor& x, const Tensor& labels, const std::string& reduction, bool grad, const Tensor& dloss,
           const Tensor* weights, const int64_t* ignore) {
  OpCall c;
  c.op = grad ? "SoftmaxCrossEntropyLossGrad" : "SoftmaxCrossEntropyLoss";
  c.domain = grad ? kOneflowDomain : "";
  c.opset = grad ? 1 : 17;
  c.attrs.set("reduction", Attribute::String(reduction));
  if (ignore) c.attrs.set("ignore_index", Attribute::Int(*ignore));
  Shape loss_shape;
  if (reduction == "none") {
    loss_shape = {x.dim(0)};
    loss_shape.insert(loss_shape.end(), x.shape().begin() + 2, x.shape().end());
  }
  if (grad) {
    c.inputs = {dloss, x, labels};
    if (weights) c.inputs.push_back(*weights);
    c.outputs = {{x.dtype(), x.shape()}};
  } else {
    c.inputs = {x, labels};
    if (weights) c.inputs.push_back(*weights);
    c.outputs = {{x.dtype(), loss_shape}, {x.dtype(), x.shape()}};
  }
  return c;
}

TEST(CudaTrainKernels, SoftmaxCrossEntropyMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(36);
  for (Shape xs : {Shape{64, 10}, Shape{8, 1000}, Shape{4, 7, 3, 5}}) {
    const int64_t C = xs[1];
    Shape ls{xs[0]};
    ls.insert(ls.end(), xs.begin() + 2, xs.end());
    Tensor labels(DType::kInt64, ls);
    std::uniform_int_distribution<int64_t> pick(0, C - 1);
    for (int64_t i = 0; i < labels.numel(); ++i) labels.data<int64_t>()[i] = pick(rng);
    const int64_t ignore = labels.data<int64_t>()[0];  // some positions are ignored
    const Tensor weights = RandomTensor(DType::kFloat32, {C}, rng, 0.5f, 2.0f);
    for (const char* red : {"mean", "sum", "none"}) {
      for (int variant = 0; variant < 3; ++variant) {
        const Tensor* w = variant == 1 ? &weights : nullptr;
        const int64_t* ig = variant == 2 ? &ignore : nullptr;
        for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
          const Tensor x = RandomTensor(dt, xs, rng, -3.0f, 3.0f);
          const std::string label = std::string("SCE ") + ShapeToString(xs) + " " + red + " v" +
                                    std::to_string(variant) + " " + DTypeName(dt);
          // The loss is one sum over many positions: bf16 output rounding dominates.
          ExpectGpuMatchesCpu(Sce(x, labels, red, false, Tensor(), w, ig), dt == DType::kFloat32 ? 1e-5 : 1e-2, label);
          Shape ds = std::string(red) == "none" ? ls : Shape{};
          const Tensor dloss = RandomTensor(dt, ds, rng, 0.5f, 1.5f);
          ExpectGpuMatchesCpu(Sce(x, labels, red, true, dloss, w, ig), dt == DType::kFloat32 ? 1e-5 : 1e-2, label + " grad");
        }
      }
    }
  }
}

TEST(CudaTrainKernels, SoftmaxCrossEntropyRejectsBadLabels) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(37);
  Tensor labels(DType::kInt64, {4});
  for (int64_t i = 0; i < 4; ++i) labels.data<int64_t>()[i] = i == 2 ? 10 : i;  // 10 is outside [0, 10)
  try {
    RunKernel(DeviceType::kCuda, Sce(RandomTensor(DType::kFloat32, {4, 10}, rng), labels, "mean", false, Tensor(),
                                     nullptr, nullptr));
    FAIL() << "a label out of range was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("outside [0, 10)"), std::string::npos) << e.what();
  }
}

TEST(CudaTrainKernels, Registered) {
  // Host-side: every kernel the MLP and encoder backward graphs need has a CUDA registration.
  for (const char* op : {"ReduceSumToShape", "ReluGrad", "GeluGrad", "SoftmaxGrad", "LogSoftmaxGrad",
                         "LayerNormalizationGrad", "SoftmaxCrossEntropyLossGrad"})
    EXPECT_NE(KernelRegistry::Global().Find(kOneflowDomain, op, DeviceType::kCuda), nullptr) << op;
  for (const char* op : {"SoftmaxCrossEntropyLoss", "Sum"})
    EXPECT_NE(KernelRegistry::Global().Find("", op, DeviceType::kCuda), nullptr) << op;
}

}  // namespace
}  // namespace oneflow
