// A whole training step on the GPU, kernel by kernel, against the CPU training session: a 2-layer
// MLP with softmax cross-entropy, its forward (MatMul, Add, Relu, SoftmaxCrossEntropyLoss), the
// backward the autodiff rules produce (SoftmaxCrossEntropyLossGrad, Gemm with transposes,
// ReduceSumToShape for the biases, ReluGrad) and the fused SGD-momentum update (linear in the
// gradient, so rounding noise is not amplified the way Adam's first steps amplify the sign of
// near-zero gradients; Adam itself is checked against ApplyUpdate directly), for 5 steps; losses and
// parameters are compared with TrainingSession on the CPU from the same start. This is the
// sequence of CUDA kernels the session will launch once it runs on a device. Skips with
// "no CUDA device" where there is none.
#include <gtest/gtest.h>

#include "../cuda/cuda_test_util.h"
#include "model_graph.h"
#include "engine/session.h"
#include "graph/grad_context.h"
#include "graph/op_schema.h"
#include "train/optimizer_cuda.h"
#include "train/training_session.h"

namespace oneflow::train {
namespace {

constexpr int64_t kN = 64, kIn = 16, kHidden = 32, kClasses = 5;

// One registered CUDA kernel on device tensors; outputs allocated on `stream`.
std::vector<Tensor> Launch(const std::string& op, const std::string& domain, int opset, const AttrMap& attrs,
                           const std::vector<Tensor>& inputs, const std::vector<std::pair<DType, Shape>>& outs,
                           cudaStream_t stream) {
  Graph g;
  Node node;
  node.op_type = op;
  node.domain = domain;
  node.opset = opset;
  node.attrs = attrs;
  const KernelDef* def = KernelRegistry::Global().Find(domain, op, DeviceType::kCuda);
  OF_REQUIRE(def != nullptr, "no CUDA kernel for ", op);
  std::unique_ptr<OpKernel> kernel = def->factory(KernelInitContext(g, node));
  KernelContext ctx(node, cuda_test::Pool());
  std::vector<Tensor> out;
  for (const auto& [dt, shape] : outs) out.push_back(cuda::EmptyDeviceTensor(dt, shape, 0, stream));
  for (const Tensor& t : inputs) ctx.inputs().push_back(&t);
  for (Tensor& t : out) ctx.outputs().push_back(&t);
  kernel->Compute(ctx);
  return out;
}

Tensor ShapeTensor(const Shape& s) {  // shape inputs stay on the host (the kernels read the output's shape)
  Tensor t(DType::kInt64, {static_cast<int64_t>(s.size())});
  for (size_t i = 0; i < s.size(); ++i) t.data<int64_t>()[i] = s[i];
  return t;
}

Graph MakeMlp(std::mt19937& rng) {
  Graph g;
  g.opset_imports[""] = 17;
  const int x = g.AddValue("x", TensorType::Of(DType::kFloat32, {kN, kIn}));
  g.inputs.push_back(x);
  auto param = [&](const std::string& name, const Shape& s, float scale) {
    return train_test::AddParam(g, name, cuda_test::RandomTensor(DType::kFloat32, s, rng, -scale, scale));
  };
  auto op = [&](const std::string& type, std::vector<int> in, const std::string& out) {
    return train_test::AddOp(g, type, std::move(in), out);
  };
  const int w1 = param("w1", {kIn, kHidden}, 0.4f), b1 = param("b1", {kHidden}, 0.1f);
  const int w2 = param("w2", {kHidden, kClasses}, 0.3f), b2 = param("b2", {kClasses}, 0.1f);
  const int h = op("Relu", {op("Add", {op("MatMul", {x, w1}, "mm1"), b1}, "pre1")}, "h");
  g.outputs.push_back(op("Add", {op("MatMul", {h, w2}, "mm2"), b2}, "logits"));
  PrepareGraph(g);
  return g;
}

TEST(CudaTrainStep, MlpSgdMomentumMatchesCpuSession) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(61);
  const Graph model = MakeMlp(rng);
  TrainingOptions o;
  o.session.intra_op_threads = 2;
  o.appended_loss = AppendedLoss::kSoftmaxCrossEntropy;
  o.logits_output = "logits";
  o.labels_input = "labels";
  o.optimizer.kind = OptimizerKind::kSgd;
  o.optimizer.lr = 0.1f;
  o.optimizer.momentum = 0.9f;
  TrainingSession cpu(model, o);

  cuda::Stream stream(0);
  cuda::StreamScope scope(stream.get());
  cudaStream_t st = stream.get();
  const char* names[4] = {"w1", "b1", "w2", "b2"};
  std::vector<ParamSlot> slots(4);
  for (int i = 0; i < 4; ++i) {
    slots[i].value = cuda::ToDevice(cpu.GetParameter(names[i]), 0, st);
    Tensor zero(DType::kFloat32, slots[i].value.shape());
    slots[i].state.push_back(cuda::ToDevice(zero, 0, st));  // the momentum buffer
  }
  CudaMultiTensorOptimizer opt(o.optimizer);
  AttrMap sce;
  sce.set("reduction", Attribute::String("mean"));
  auto gemm = [](int ta, int tb) {
    AttrMap a;
    a.set("transA", Attribute::Int(ta));
    a.set("transB", Attribute::Int(tb));
    a.set("alpha", Attribute::Float(1.0f));
    a.set("beta", Attribute::Float(1.0f));
    return a;
  };
  const AttrMap none;
  for (int step = 0; step < 5; ++step) {
    const Tensor x = cuda_test::RandomTensor(DType::kFloat32, {kN, kIn}, rng);
    Tensor labels(DType::kInt64, {kN});
    for (int64_t i = 0; i < kN; ++i) labels.data<int64_t>()[i] = static_cast<int64_t>(rng() % kClasses);
    // CPU reference.
    cpu.Run({{"x", x}, {"labels", labels}}, {}, RunMode::kTrain);
    cpu.Backward();
    ASSERT_EQ(cpu.Step(), StepOutcome::kApplied);
    // GPU: forward.
    const Tensor dx = cuda::ToDevice(x, 0, st), dlab = cuda::ToDevice(labels, 0, st);
    const Tensor& w1 = slots[0].value;
    const Tensor& b1 = slots[1].value;
    const Tensor& w2 = slots[2].value;
    const Tensor& b2 = slots[3].value;
    const Tensor mm1 = Launch("MatMul", "", 17, none, {dx, w1}, {{DType::kFloat32, {kN, kHidden}}}, st)[0];
    const Tensor pre1 = Launch("Add", "", 17, none, {mm1, b1}, {{DType::kFloat32, {kN, kHidden}}}, st)[0];
    const Tensor h = Launch("Relu", "", 17, none, {pre1}, {{DType::kFloat32, {kN, kHidden}}}, st)[0];
    const Tensor mm2 = Launch("MatMul", "", 17, none, {h, w2}, {{DType::kFloat32, {kN, kClasses}}}, st)[0];
    const Tensor logits = Launch("Add", "", 17, none, {mm2, b2}, {{DType::kFloat32, {kN, kClasses}}}, st)[0];
    const Tensor loss = Launch("SoftmaxCrossEntropyLoss", "", 17, sce, {logits, dlab}, {{DType::kFloat32, {}}}, st)[0];
    // Backward (the rules' ops): d logits, then each layer's weight, bias and input gradients.
    Tensor one(DType::kFloat32, {});
    one.data<float>()[0] = 1.0f;
    const Tensor dlogits = Launch("SoftmaxCrossEntropyLossGrad", kOneflowDomain, 1, sce,
                                  {cuda::ToDevice(one, 0, st), logits, dlab}, {{DType::kFloat32, {kN, kClasses}}}, st)[0];
    slots[2].grad = Launch("Gemm", "", 17, gemm(1, 0), {h, dlogits}, {{DType::kFloat32, {kHidden, kClasses}}}, st)[0];
    slots[3].grad = Launch("ReduceSumToShape", kOneflowDomain, 1, none, {dlogits, ShapeTensor({kClasses})},
                           {{DType::kFloat32, {kClasses}}}, st)[0];
    const Tensor dh = Launch("Gemm", "", 17, gemm(0, 1), {dlogits, w2}, {{DType::kFloat32, {kN, kHidden}}}, st)[0];
    const Tensor dpre = Launch("ReluGrad", kOneflowDomain, 1, none, {dh, h}, {{DType::kFloat32, {kN, kHidden}}}, st)[0];
    slots[0].grad = Launch("Gemm", "", 17, gemm(1, 0), {dx, dpre}, {{DType::kFloat32, {kIn, kHidden}}}, st)[0];
    slots[1].grad = Launch("ReduceSumToShape", kOneflowDomain, 1, none, {dpre, ShapeTensor({kHidden})},
                           {{DType::kFloat32, {kHidden}}}, st)[0];
    std::vector<ParamSlot*> ptrs;
    for (ParamSlot& s : slots) ptrs.push_back(&s);
    const GradientNorm norm = opt.GlobalGradientNorm(ptrs, st);
    EXPECT_NEAR(norm.norm, cpu.last_grad_norm(), 1e-4 * cpu.last_grad_norm()) << "step " << step;
    opt.ApplyUpdate(ptrs, o.optimizer.lr, 1.0f, step, st);
    const float gpu_loss = cuda::ToHost(loss, st).data<float>()[0];
    EXPECT_NEAR(gpu_loss, cpu.last_loss(), 1e-4 * std::fabs(cpu.last_loss())) << "step " << step;
  }
  for (int i = 0; i < 4; ++i) {
    // f32 GEMMs (TF32 off) in another summation order, carried through 5 steps.
    EXPECT_LE(cuda_test::RelL2(cuda::ToHost(slots[i].value, st), cpu.GetParameter(names[i])), 1e-4) << names[i];
  }
}

}  // namespace
}  // namespace oneflow::train
