// Pipeline-parallel training (train/pipeline_trainer.cc) on in-process CPU devices: the bench MLP
// and a small transformer encoder (bench/make_train_models.py --small), 2 stages x 2 data-parallel
// devices with 4 micro-batches and 2 stages x 1, 20 steps of SGD+momentum and of Adam, against a
// single-device TrainingSession on the same batches (whose gradients tests/train checks against
// numpy and finite differences): the loss of every step, the final parameters and inference
// outputs within 1e-5 relative. Also: Explain, and bad input giving clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "base/error.h"
#include "engine/session.h"
#include "serialize/onnx_import.h"
#include "train/distributed_trainer.h"

namespace oneflow::train {
namespace {

Graph LoadModel(const std::string& file) {
  const char* dir = std::getenv("ONEFLOW_TRAIN_DIST_MODELS");
  if (!dir) throw std::runtime_error("ONEFLOW_TRAIN_DIST_MODELS is not set (run through ctest)");
  Graph g = LoadOnnxFile(std::string(dir) + "/" + file);
  PrepareGraph(g);
  return g;
}

Tensor RandomFloat(const Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> d;
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

Tensor RandomLabels(int64_t n, int64_t classes, std::mt19937& rng) {
  Tensor t(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng() % classes);
  return t;
}

// ||got - want|| / ||want|| (L2 over the tensor).
double RelL2(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return 1e30;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = double(got.data<float>()[i]) - want.data<float>()[i];
    num += d * d;
    den += double(want.data<float>()[i]) * want.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-60));
}

// max |got - want| / max |want|: the relative error of a whole tensor.
double RelError(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return 1e30;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    num = std::max(num, std::fabs(double(got.data<float>()[i]) - want.data<float>()[i]));
    den = std::max(den, std::fabs(double(want.data<float>()[i])));
  }
  return num / std::max(den, 1e-30);
}

using Feeds = std::vector<std::pair<std::string, Tensor>>;

struct Case {
  std::string model;
  bool mlp = true;
  int64_t batch = 0;
};

std::vector<Feeds> Batches(const Case& c, int steps, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Feeds> out;
  for (int s = 0; s < steps; ++s) {
    if (c.mlp)
      out.push_back({{"input", RandomFloat({c.batch, 784}, rng)}, {"labels", RandomLabels(c.batch, 10, rng)}});
    else
      out.push_back({{"input", RandomFloat({c.batch, 16, 64}, rng)}, {"labels", RandomFloat({c.batch, 16, 64}, rng)}});
  }
  return out;
}

TrainingOptions Training(const Case& c, OptimizerKind kind) {
  TrainingOptions o;
  o.intra_op_threads = 1;
  o.appended_loss = c.mlp ? AppendedLoss::kSoftmaxCrossEntropy : AppendedLoss::kMse;
  o.logits_output = c.mlp ? "logits" : "output";
  // The key bias's gradient is zero in exact arithmetic (softmax ignores a per-query constant), so
  // in f32 it is rounding noise, which the optimizers (Adam: a step of about lr whatever the
  // gradient's size) turn into noise-driven values: comparing them would compare noise.
  if (!c.mlp) o.frozen = {"*k.bias"};
  o.optimizer.kind = kind;
  if (kind == OptimizerKind::kSgd) {
    o.optimizer.lr = 0.05f;
    o.optimizer.momentum = 0.9f;
  } else {
    o.optimizer.lr = 1e-3f;
    // With eps 1e-8, elements whose gradient is about 1e-8 (a ReLU unit active on one token) take
    // a step whose size depends on the gradient's rounding, i.e. on the summation order, which
    // micro-batches change; ReLU boundaries then amplify it (about 1e-4 relative after 20 steps
    // on the transformer). eps 1e-6 keeps the comparison well-conditioned.
    o.optimizer.eps = 1e-6f;
  }
  return o;
}

DistributedTrainingOptions Pipeline(const TrainingOptions& t, const char* placement, int stages, int micro) {
  DistributedTrainingOptions o;
  o.training = t;
  o.dist.plan.placement = Placement::Parse(placement);
  o.pipeline_stages = stages;
  o.micro_batches = micro;
  return o;
}

// Trains both ways and compares; returns the worst relative errors {loss, parameter (L2 per
// tensor), output (max-norm)}.
std::array<double, 3> Compare(const Case& c, OptimizerKind kind, const char* placement, int stages, int micro) {
  const Graph model = LoadModel(c.model);
  const TrainingOptions to = Training(c, kind);
  const std::vector<Feeds> batches = Batches(c, 20, 7);
  TrainingSession single(model, to);
  std::unique_ptr<DistributedTrainer> pipe = CreatePipelineTrainer(model, Pipeline(to, placement, stages, micro));
  std::array<double, 3> worst = {0, 0, 0};
  for (size_t s = 0; s < batches.size(); ++s) {
    single.Run(batches[s], {}, RunMode::kTrain);
    single.Backward();
    EXPECT_EQ(single.Step(), StepOutcome::kApplied);
    TrainStepResult r = pipe->TrainStep(batches[s]);
    EXPECT_TRUE(r.applied);
    const double want = single.last_loss();
    worst[0] = std::max(worst[0], std::fabs(r.loss - want) / std::fabs(want));
    EXPECT_NEAR(r.grad_norm, single.last_grad_norm(), 1e-4 * single.last_grad_norm()) << "step " << s;
  }
  EXPECT_EQ(pipe->step(), 20);
  EXPECT_EQ(pipe->parameter_names(), single.parameter_names());
  double worst_elementwise = 0;
  for (const std::string& p : single.parameter_names()) {
    const Tensor got = pipe->GetParameter(p), want = single.GetParameter(p);
    const double e = RelL2(got, want);
    EXPECT_LE(e, 1e-5) << "parameter " << p;
    worst[1] = std::max(worst[1], e);
    worst_elementwise = std::max(worst_elementwise, RelError(got, want));
  }
  // Inference with the trained parameters (eval mode: no labels).
  std::mt19937 rng(99);
  Tensor x = c.mlp ? RandomFloat({c.batch, 784}, rng) : RandomFloat({c.batch, 16, 64}, rng);
  auto want = single.Run({{"input", x}}, {}, RunMode::kEval);
  auto got = pipe->Run({{"input", x}}, {});
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    worst[2] = std::max(worst[2], RelError(got[i].second, want[i].second));
  }
  std::printf("%s %s on %s, %d stages, %d micro-batches: max relative error loss %.3g, parameters %.3g (L2; "
              "elementwise max %.3g), outputs %.3g\n",
              c.model.c_str(), OptimizerKindName(kind), placement, stages, micro, worst[0], worst[1], worst_elementwise,
              worst[2]);
  EXPECT_LE(worst[0], 1e-5);
  EXPECT_LE(worst[1], 1e-5);
  EXPECT_LE(worst[2], 1e-5);
  return worst;
}

const Case kMlp{"mlp_784_1024_1024_10.onnx", true, 18};  // uneven: micro-batches of 5,5,4,4 rows
const Case kTransformer{"transformer_encoder_small.onnx", false, 10};

TEST(Pipeline, MlpSgdTwoStagesTimesTwo) { Compare(kMlp, OptimizerKind::kSgd, "cpu:0-3", 2, 4); }
TEST(Pipeline, MlpAdamTwoStagesTimesTwo) { Compare(kMlp, OptimizerKind::kAdam, "cpu:0-3", 2, 4); }
TEST(Pipeline, MlpAdamTwoStagesTimesOne) { Compare(kMlp, OptimizerKind::kAdam, "cpu:0-1", 2, 2); }
TEST(Pipeline, TransformerSgdTwoStagesTimesTwo) { Compare(kTransformer, OptimizerKind::kSgd, "cpu:0-3", 2, 4); }
TEST(Pipeline, TransformerAdamTwoStagesTimesTwo) { Compare(kTransformer, OptimizerKind::kAdam, "cpu:0-3", 2, 4); }
TEST(Pipeline, TransformerAdamTwoStagesTimesOne) { Compare(kTransformer, OptimizerKind::kAdam, "cpu:0-1", 2, 2); }
// Four stages: every inner stage both receives and sends (the 1F1B pairing of warm-up and steady).
TEST(Pipeline, TransformerSgdFourStages) { Compare(kTransformer, OptimizerKind::kSgd, "cpu:0-3", 4, 3); }

TEST(Pipeline, ExplainNamesStagesMemoryAndTime) {
  const Graph model = LoadModel(kMlp.model);
  auto pipe = CreatePipelineTrainer(model, Pipeline(Training(kMlp, OptimizerKind::kAdam), "cpu:0-3", 2, 4));
  pipe->TrainStep(Batches(kMlp, 1, 3)[0]);
  const std::string text = pipe->Explain(false), json = pipe->Explain(true);
  EXPECT_NE(text.find("stage 0 on ranks [0,1]"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 1 on ranks [2,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("optimizer state"), std::string::npos) << text;
  EXPECT_NE(text.find("bubble (s-1)/(m+s-1) = 0.2"), std::string::npos) << text;
  EXPECT_NE(json.find("\"bubble_fraction\":0.2"), std::string::npos) << json;
  // Optimizer state of Adam: two tensors per parameter; the two stages hold every parameter once.
  EXPECT_NE(json.find("\"strategy\":\"pipeline\""), std::string::npos) << json;
}

template <typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Pipeline, BadInputGivesClearErrors) {
  const Graph model = LoadModel(kMlp.model);
  const TrainingOptions to = Training(kMlp, OptimizerKind::kSgd);
  EXPECT_NE(ErrorOf([&] { CreatePipelineTrainer(model, Pipeline(to, "cpu:0-2", 2, 2)); }).find("do not divide into 2"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { CreatePipelineTrainer(model, Pipeline(to, "cpu:0-3", 2, 0)); }).find("micro_batches must be"),
            std::string::npos);
  auto zero = Pipeline(to, "cpu:0-3", 2, 2);
  zero.zero_stage = 1;
  EXPECT_NE(ErrorOf([&] { CreatePipelineTrainer(model, zero); }).find("ZeRO"), std::string::npos);
  auto pipe = CreatePipelineTrainer(model, Pipeline(to, "cpu:0-3", 2, 4));
  std::mt19937 rng(1);
  Feeds small = {{"input", RandomFloat({3, 784}, rng)}, {"labels", RandomLabels(3, 10, rng)}};
  EXPECT_NE(ErrorOf([&] { pipe->TrainStep(small); }).find("micro_batches (4) exceeds the batch size (3)"),
            std::string::npos);
  Feeds six = {{"input", RandomFloat({6, 784}, rng)}, {"labels", RandomLabels(6, 10, rng)}};
  EXPECT_NE(ErrorOf([&] { pipe->TrainStep(six); }).find("cannot be split over the 2 data-parallel devices"),
            std::string::npos);
  Feeds no_labels = {{"input", RandomFloat({8, 784}, rng)}};
  EXPECT_NE(ErrorOf([&] { pipe->TrainStep(no_labels); }).find("input 'labels' is missing"), std::string::npos);
  Feeds mismatch = {{"input", RandomFloat({8, 784}, rng)}, {"labels", RandomLabels(6, 10, rng)}};
  EXPECT_NE(ErrorOf([&] { pipe->TrainStep(mismatch); }).find("has batch 6"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { pipe->Run({{"input", RandomFloat({8, 784}, rng)}}, {"loss"}); }).find("not computed by Run"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { pipe->GetParameter("nope"); }).find("not a trained parameter"), std::string::npos);
  // After the refused calls the trainer still works.
  Feeds ok = {{"input", RandomFloat({8, 784}, rng)}, {"labels", RandomLabels(8, 10, rng)}};
  EXPECT_TRUE(pipe->TrainStep(ok).applied);
}

// x -> Split -> two MatMuls -> Einsum to a scalar loss: no value alone separates the forward graph.
Graph NoCutModel() {
  Graph g;
  g.opset_imports[""] = 18;
  int x = g.AddValue("x", TensorType::Of(DType::kFloat32, {4, 6}));
  g.inputs.push_back(x);
  std::mt19937 rng(5);
  auto param = [&](const char* name) {
    int v = g.AddConstant(name, RandomFloat({3, 3}, rng));
    g.values[static_cast<size_t>(v)].is_parameter = true;
    return v;
  };
  int w1 = param("w1"), w2 = param("w2");
  int s1 = g.AddValue("s1"), s2 = g.AddValue("s2"), t1 = g.AddValue("t1"), t2 = g.AddValue("t2"), loss = g.AddValue("loss");
  auto node = [&](const char* op, std::vector<int> in, std::vector<int> out, AttrMap attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = std::string(op) + std::to_string(g.nodes.size());
    n.opset = 18;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    n.attrs = std::move(attrs);
    g.nodes.push_back(std::move(n));
  };
  AttrMap split;
  split.set("axis", Attribute::Int(1));
  split.set("num_outputs", Attribute::Int(2));
  node("Split", {x}, {s1, s2}, split);
  node("MatMul", {s1, w1}, {t1});
  node("MatMul", {s2, w2}, {t2});
  AttrMap eq;
  eq.set("equation", Attribute::String("ij,ij->"));
  node("Einsum", {t1, t2}, {loss}, eq);
  g.outputs.push_back(loss);
  PrepareGraph(g);
  return g;
}

TEST(Pipeline, ModelWithoutSingleValueCut) {
  Graph g = NoCutModel();
  TrainingOptions to;
  to.intra_op_threads = 1;
  to.loss_output = "loss";
  std::string err = ErrorOf([&] { CreatePipelineTrainer(g, Pipeline(to, "cpu:0-1", 2, 1)); });
  EXPECT_NE(err.find("cannot cut the model into 2 pipeline stages: its forward graph has 0 float32 value(s)"),
            std::string::npos)
      << err;
  // The MLP cuts into at most (its forward nodes) stages; 3 of 4 devices do not divide.
  const Graph mlp = LoadModel(kMlp.model);
  err = ErrorOf([&] { CreatePipelineTrainer(mlp, Pipeline(Training(kMlp, OptimizerKind::kSgd), "cpu:0-3", 3, 3)); });
  EXPECT_NE(err.find("do not divide into 3 pipeline stages"), std::string::npos) << err;
}

}  // namespace
}  // namespace oneflow::train
