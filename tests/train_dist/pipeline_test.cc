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
#include <functional>
#include <random>

#include "base/error.h"
#include "engine/session.h"
#include "serialize/onnx_import.h"
#include "train/distributed_trainer.h"

// Pipeline-parallel training (train/pipeline_trainer.cc) on in-process CPU devices: the bench MLP
// and a small transformer encoder (bench/make_train_models.py --small), 2 stages x 2 data-parallel
// devices with 4 micro-batches, 2 stages x 1 and 4 stages, 20 steps of SGD+momentum and of Adam,
// against a single-device TrainingSession on the same batches (whose gradients tests/train checks
// against numpy and finite differences): the loss of every step, the final parameters and the
// inference outputs within 1e-5 relative. Also: Explain, and bad input giving clear errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "pipeline_compare.h"

namespace oneflow::train {
namespace {

using namespace pipeline_test;

Graph LoadBench(const std::string& file) {
  const char* dir = std::getenv("ONEFLOW_TRAIN_DIST_MODELS");
  if (!dir) throw std::runtime_error("ONEFLOW_TRAIN_DIST_MODELS is not set (run through ctest)");
  return LoadModel(std::string(dir) + "/" + file);
}

void Compare(const Case& c, OptimizerKind kind, const char* placement, int stages, int micro,
             const std::function<void(TrainingOptions&)>& adjust = {}) {
  const Graph model = LoadBench(c.file);
  TrainingOptions to = Training(c, kind);
  if (adjust) adjust(to);
  Figures f = CompareWithSingleDevice(model, c, Pipeline(to, placement, stages, micro));
  std::printf("%s %s on %s, %d stages, %d micro-batches: max relative error loss %.3g, grad norm %.3g, parameters "
              "%.3g (L2; elementwise max %.3g), outputs %.3g\n",
              c.file.c_str(), OptimizerKindName(kind), placement, stages, micro, f.loss, f.grad_norm, f.param_l2,
              f.param_max, f.output);
  EXPECT_TRUE(f.all_applied);
  EXPECT_EQ(f.steps, 20);
  EXPECT_TRUE(f.same_names);
  EXPECT_TRUE(f.same_outputs);
  EXPECT_LE(f.loss, 1e-5);
  EXPECT_LE(f.grad_norm, 1e-5);
  EXPECT_LE(f.param_l2, 1e-5);
  EXPECT_LE(f.output, 1e-5);
}

const Case kMlp{"mlp_784_1024_1024_10.onnx", true, 18};  // uneven: micro-batches of 5,5,4,4 rows
const Case kTransformer{"transformer_encoder_small.onnx", false, 10};

TEST(Pipeline, MlpSgdTwoStagesTimesTwo) { Compare(kMlp, OptimizerKind::kSgd, "cpu:0-3", 2, 4); }
TEST(Pipeline, MlpAdamTwoStagesTimesTwo) { Compare(kMlp, OptimizerKind::kAdam, "cpu:0-3", 2, 4); }
TEST(Pipeline, MlpAdamTwoStagesTimesOne) { Compare(kMlp, OptimizerKind::kAdam, "cpu:0-1", 2, 2); }
TEST(Pipeline, TransformerSgdTwoStagesTimesTwo) { Compare(kTransformer, OptimizerKind::kSgd, "cpu:0-3", 2, 4); }
TEST(Pipeline, TransformerAdamTwoStagesTimesTwo) { Compare(kTransformer, OptimizerKind::kAdam, "cpu:0-3", 2, 4); }
TEST(Pipeline, TransformerAdamTwoStagesTimesOne) { Compare(kTransformer, OptimizerKind::kAdam, "cpu:0-1", 2, 2); }
// The bench transformer at its full width (d=256, feed-forward 1024). Its 4 x 1024 ReLU units per
// row make it likelier that some pre-activation lies within rounding of zero at some step; the
// micro-batches' summation order then decides its side and the runs part by about 1e-4 from that
// step on (at SGD lr 0.05 or 0.01 at this batch; lr 0.02 crosses none in 20 steps). That is a
// property of comparing two f32 summation orders on a ReLU model, not of the schedule: the first
// steps agree within 1e-7 either way.
const Case kTransformerFull{"transformer_encoder.onnx", false, 4, 256};
TEST(Pipeline, FullTransformerSgdTwoStagesTimesTwo) {
  Compare(kTransformerFull, OptimizerKind::kSgd, "cpu:0-3", 2, 2, [](TrainingOptions& o) { o.optimizer.lr = 0.02f; });
}
TEST(Pipeline, FullTransformerAdamTwoStagesTimesTwo) { Compare(kTransformerFull, OptimizerKind::kAdam, "cpu:0-3", 2, 2); }
// Four stages: every inner stage both receives and sends (the 1F1B pairing of warm-up and steady).
TEST(Pipeline, TransformerSgdFourStages) { Compare(kTransformer, OptimizerKind::kSgd, "cpu:0-3", 4, 3); }

template <typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Clipping by the global norm over every stage (the norms are about 3, so it is active) and a
// warm-up + cosine schedule.
TEST(Pipeline, MlpSgdClippedWithCosineSchedule) {
  Compare(kMlp, OptimizerKind::kSgd, "cpu:0-3", 2, 4, [](TrainingOptions& o) {
    o.max_grad_norm = 1.0f;
    o.schedule.kind = LrScheduleKind::kCosine;
    o.schedule.warmup_steps = 3;
    o.schedule.decay_steps = 15;
  });
}

// NaN/Inf: skipped (parameters and step counter unchanged) or refused with an error.
TEST(Pipeline, NonFiniteLossIsSkippedOrRefused) {
  const Graph model = LoadBench(kMlp.file);
  TrainingOptions to = Training(kMlp, OptimizerKind::kSgd);
  Feeds bad = Batches(kMlp, 1, 4)[0];
  bad[0].second.data<float>()[5] = std::nanf("");
  auto pipe = CreatePipelineTrainer(model, Pipeline(to, "cpu:0-3", 2, 4));
  const std::string w = pipe->parameter_names().back();  // a last-stage parameter
  const Tensor before = pipe->GetParameter(w);
  TrainStepResult r = pipe->TrainStep(bad);
  EXPECT_FALSE(r.applied);
  // The single-device session sees the same: Relu drops the NaN (finite loss) but W1's gradient
  // holds NaN, and it skips the step too.
  TrainingSession single(model, to);
  single.Run(bad, {}, RunMode::kTrain);
  single.Backward();
  EXPECT_EQ(single.Step(), StepOutcome::kSkipped);
  EXPECT_NEAR(r.loss, single.last_loss(), 1e-5 * std::fabs(single.last_loss()));
  EXPECT_EQ(pipe->step(), 0);
  EXPECT_EQ(RelMax(pipe->GetParameter(w), before), 0.0);
  EXPECT_TRUE(pipe->TrainStep(Batches(kMlp, 1, 5)[0]).applied);
  EXPECT_EQ(pipe->step(), 1);
  to.nonfinite = NonFinitePolicy::kRefuse;
  auto refuse = CreatePipelineTrainer(model, Pipeline(to, "cpu:0-3", 2, 4));
  const std::string refused = ErrorOf([&] { refuse->TrainStep(bad); });
  EXPECT_NE(refused.find("step refused: the gradient of 'fc1.weight' holds NaN or Inf; parameters are unchanged"), std::string::npos)
      << refused;
  EXPECT_EQ(refuse->step(), 0);
  EXPECT_TRUE(refuse->TrainStep(Batches(kMlp, 1, 5)[0]).applied);
}

TEST(Pipeline, ExplainNamesStagesMemoryAndTime) {
  const Graph model = LoadBench(kMlp.file);
  auto pipe = CreatePipelineTrainer(model, Pipeline(Training(kMlp, OptimizerKind::kAdam), "cpu:0-3", 2, 4));
  EXPECT_NE(pipe->Explain(false).find("symbolic dims taken as 1 (no step yet)"), std::string::npos);
  pipe->TrainStep(Batches(kMlp, 1, 3)[0]);  // batch 18
  const std::string text = pipe->Explain(false), json = pipe->Explain(true);
  EXPECT_NE(text.find("stage 0 on ranks [0,1]"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 1 on ranks [2,3]"), std::string::npos) << text;
  // Bytes from the MLP's shapes: stage 0 holds fc1 (784x1024 + 1024 floats), stage 1 fc2 and fc3;
  // Adam keeps two state tensors per parameter.
  const int64_t fc1 = (784 * 1024 + 1024) * 4, rest = (1024 * 1024 + 1024 + 1024 * 10 + 10) * 4;
  EXPECT_NE(text.find(StrCat("parameters ", fc1, " B, gradients ", fc1, " B, optimizer state ", 2 * fc1, " B")),
            std::string::npos) << text;
  EXPECT_NE(text.find(StrCat("parameters ", rest, " B, gradients ", rest, " B, optimizer state ", 2 * rest, " B")),
            std::string::npos) << text;
  // Batch 18 over 4 micro-batches over 2 devices: the largest block has 3 rows; stage 0 sends the
  // 1024-wide ReLU output of those rows.
  EXPECT_NE(text.find(StrCat("(", 3 * 1024 * 4, " B per micro-batch block")), std::string::npos) << text;
  EXPECT_NE(text.find("bubble (s-1)/(m+s-1) = 0.2"), std::string::npos) << text;
  EXPECT_NE(json.find("\"bubble_fraction\":0.2"), std::string::npos) << json;
  // Optimizer state of Adam: two tensors per parameter; the two stages hold every parameter once.
  EXPECT_NE(json.find("\"strategy\":\"pipeline\""), std::string::npos) << json;
}

TEST(Pipeline, BadInputGivesClearErrors) {
  const Graph model = LoadBench(kMlp.file);
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
  Feeds narrow = {{"input", RandomFloat({8, 783}, rng)}, {"labels", RandomLabels(8, 10, rng)}};
  EXPECT_NE(ErrorOf([&] { pipe->TrainStep(narrow); }).find("input 'input' has shape [8,783], the model expects"),
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
  to.session.intra_op_threads = 1;
  to.loss_output = "loss";
  std::string err = ErrorOf([&] { CreatePipelineTrainer(g, Pipeline(to, "cpu:0-1", 2, 1)); });
  EXPECT_NE(err.find("cannot cut the model into 2 pipeline stages: its forward graph has 0 float32 value(s)"),
            std::string::npos)
      << err;
  // The MLP cuts into at most (its forward nodes) stages; 3 of 4 devices do not divide.
  const Graph mlp = LoadBench(kMlp.file);
  err = ErrorOf([&] { CreatePipelineTrainer(mlp, Pipeline(Training(kMlp, OptimizerKind::kSgd), "cpu:0-3", 3, 3)); });
  EXPECT_NE(err.find("do not divide into 3 pipeline stages"), std::string::npos) << err;
}

}  // namespace
}  // namespace oneflow::train
