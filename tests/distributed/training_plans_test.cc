// Training under plans on 4 in-process CPU devices: the MLP and the transformer encoder of
// bench/make_train_models.py trained 20 steps with data parallel, ZeRO-1, ZeRO-2, tensor parallel
// (column/row), 2x2 data x tensor, a 2-stage pipeline and auto plans must give the single-device TrainingSession's
// loss curve and final parameters (<= 1e-5 relative, f32), and the same inference outputs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <regex>

#include "base/error.h"
#include "train_cases.h"

namespace oneflow::train {
namespace {

using namespace testing;

constexpr int kSteps = 20;

std::string ModelsDir() {
  const char* dir = std::getenv("ONEFLOW_TRAIN_MODELS");
  if (!dir) throw std::runtime_error("ONEFLOW_TRAIN_MODELS is not set (run through ctest)");
  return dir;
}

Case& Reference(const std::string& name) {
  static std::map<std::string, Case> cases;
  auto it = cases.find(name);
  if (it != cases.end()) return it->second;
  Case c = MakeCase(ModelsDir(), name, kSteps);
  RunReference(c);
  return cases[name] = std::move(c);
}

double EstimatedStep(const DistributedTrainer& t) {
  std::smatch m;
  std::string json = t.Explain(true);
  EXPECT_TRUE(std::regex_search(json, m, std::regex("\"estimated_step_seconds\":([0-9.eE+-]+)"))) << json.substr(0, 400);
  return m.empty() ? 0 : std::stod(m[1]);
}

// Trains under `strategy`, checks it against the reference and returns the estimated step time.
double Check(const std::string& model, const std::string& strategy) {
  Case& c = Reference(model);
  std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(c.model, Strategy(c, strategy));
  Comparison r = Compare(c, Train(c, *t));
  EXPECT_EQ(t->step(), kSteps);
  EXPECT_LE(r.params, 1e-5) << model << " " << strategy << ": worst parameter " << r.worst_param;
  EXPECT_LE(r.loss, 1e-5) << model << " " << strategy << ": worst step " << r.worst_step;
  EXPECT_LE(r.eval, 1e-5) << model << " " << strategy;
  const double est = EstimatedStep(*t);
  if (strategy.rfind("auto", 0) == 0) {  // the candidates and the choice
    const std::string text = t->Explain(false);
    std::printf("%s\n", text.substr(0, text.find('\n', text.find("\nchosen: ") + 1)).c_str());
  }
  std::printf("%-12s %-6s loss %.2e  params %.2e  eval %.2e  (loss %.4f -> %.4f)  estimated step %.3f ms\n",
              model.c_str(), strategy.c_str(), r.loss, r.params, r.eval, c.losses.front(), c.losses.back(), est * 1e3);
  return est;
}

void AllPlans(const std::string& model) {
  std::vector<double> hand;
  for (const char* s : {"data", "zero1", "zero2", "zero3", "tensor", "2x2", "pipeline"}) hand.push_back(Check(model, s));
  const double autos = Check(model, "auto");
  // Every estimate is made on the planner's cost model (train/step_estimate.h), the pipeline's
  // included, and the auto mode considers the hand layouts (the 2-stage pipeline with 2
  // micro-batches among its pipeline layouts), so its estimate is no worse than any of them.
  EXPECT_LE(autos, *std::min_element(hand.begin(), hand.end()) * (1 + 1e-9)) << model;
}

// Under a 10 ms link latency the MLP's cheapest layout is a pipeline: the auto mode builds the
// pipeline trainer with the chosen stages and micro-batches, and training under it still matches
// the single-device run.
TEST(TrainingPlans, AutoChoosesPipeline) {
  Case& c = Reference("mlp");
  std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(c.model, Strategy(c, "auto_slow_link"));
  t->Prepare({{"input", {16, 784}}, {"labels", {16}}});
  const std::string json = t->Explain(true);
  EXPECT_NE(json.find("\"strategy\":\"pipeline\""), std::string::npos) << json.substr(0, 300);
  EXPECT_NE(json.find("\"chosen\":\"pipeline "), std::string::npos) << json.substr(json.find("\"auto\""));
  Check("mlp", "auto_slow_link");
}

// The auto mode's choice respects the memory budget, pipeline layouts included: under 12 MiB per
// device the MLP's pipelines (about 16 MiB: a stage keeps its whole weights, gradients and momentum)
// are listed as not admissible and the choice fits; under 1 MiB nothing fits, and the error says so.
TEST(TrainingPlans, AutoWithinMemoryBudget) {
  Case c = MakeCase(ModelsDir(), "mlp", 0);
  auto prepare = [&](int64_t budget) {
    DistributedTrainingOptions d = Strategy(c, "auto");
    d.dist.plan.memory_budget_bytes = budget;
    std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(c.model, d);
    t->Prepare({{"input", {16, 784}}, {"labels", {16}}});
    return t;
  };
  const int64_t budget = 12 << 20;
  const std::string json = prepare(budget)->Explain(true);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(json, m, std::regex("\"chosen\":\"([^\"]+)\""))) << json.substr(0, 400);
  const std::string label = m[1].str();
  const size_t at = json.find("{\"label\":\"" + label + "\"");
  ASSERT_NE(at, std::string::npos) << label;
  ASSERT_TRUE(std::regex_search(json.cbegin() + static_cast<std::ptrdiff_t>(at), json.cend(), m,
                                std::regex("\"memory_bytes\":([0-9]+)")));
  std::printf("auto under %lld B: %s, %.1f MiB per device\n", static_cast<long long>(budget), label.c_str(),
              std::stod(m[1]) / (1 << 20));
  EXPECT_LE(std::stod(m[1]), static_cast<double>(budget));
  int pipelines = 0;
  const std::regex pipeline("\"kind\":\"pipeline\",[^}]*\"admissible\":(true|false)");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), pipeline); it != std::sregex_iterator(); ++it, ++pipelines)
    EXPECT_EQ((*it)[1].str(), "false") << it->str();
  EXPECT_EQ(pipelines, 6);  // 2 stages x 2 and 4 stages x 1, each with 2, 4 and 8 micro-batches
  try {
    prepare(1 << 20);
    ADD_FAILURE() << "no layout fits 1 MiB, yet one was chosen";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory budget"), std::string::npos) << e.what();
  }
}

TEST(TrainingPlans, Mlp) { AllPlans("mlp"); }
TEST(TrainingPlans, Transformer) { AllPlans("transformer"); }

TEST(TrainingPlans, UnevenBatchAndGradientClipping) {
  Case c = MakeCase(ModelsDir(), "mlp", 0);
  c.options.max_grad_norm = 0.5f;
  for (int i = 0; i < 5; ++i) c.batches.push_back({{"input", Normal({7, 784}, 500 + i)}, {"labels", Classes(7, 600 + i)}});
  RunReference(c);
  DistributedTrainingOptions d = Strategy(c, "zero1");
  std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(c.model, d);
  for (size_t i = 0; i < c.batches.size(); ++i) {
    TrainStepResult r = t->TrainStep(c.batches[i]);
    EXPECT_NEAR(r.loss, c.losses[i], 1e-5 * std::fabs(c.losses[i]));
    EXPECT_GT(r.grad_norm, 0.5);  // clipping was active
  }
  for (const std::string& n : t->parameter_names()) EXPECT_LE(RelError(t->GetParameter(n), c.params.at(n)), 1e-5) << n;
}

TEST(TrainingPlans, Explain) {
  Case c = MakeCase(ModelsDir(), "mlp", 1);
  DistributedTrainingOptions d = Strategy(c, "zero1");
  d.training.optimizer.kind = OptimizerKind::kAdam;
  std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(c.model, d);
  EXPECT_THROW(t->Explain(false), Error);  // no plan before the first step
  t->TrainStep(c.batches[0]);
  std::string text = t->Explain(false);
  if (std::getenv("ONEFLOW_PRINT_PLAN")) std::printf("%s\n", text.c_str());
  EXPECT_NE(text.find("optimizer state"), std::string::npos) << text;
  EXPECT_NE(text.find("ZeRO-1"), std::string::npos) << text;
  EXPECT_NE(text.find("bucketed by the trainer"), std::string::npos) << text;  // gradients left as partial sums
  // Adam's two f32 states for the 1,863,690 weights, divided over 4 devices.
  std::smatch m;
  std::string json = t->Explain(true);
  ASSERT_TRUE(std::regex_search(json, m, std::regex("\"optimizer_state\":([0-9]+)")));
  EXPECT_NEAR(std::stod(m[1]), 2.0 * 4 * 1863690 / 4, 2.0 * 4 * 1863690 / 4 * 0.01);
}

// ZeRO-3: each device holds a quarter of every weight (each of the MLP's weights and biases has a
// row per device) and of Adam's state; the plan gathers each weight where it is used and returns
// each gradient split like its weight, and the trainer all-reduces nothing itself.
TEST(TrainingPlans, ZeRO3ShardsTheWeightsAtRest) {
  Case c = MakeCase(ModelsDir(), "mlp", 1);
  DistributedTrainingOptions d = Strategy(c, "zero3");
  d.training.optimizer.kind = OptimizerKind::kAdam;
  std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(c.model, d);
  t->TrainStep(c.batches[0]);
  const std::string text = t->Explain(false);
  if (std::getenv("ONEFLOW_PRINT_PLAN")) std::printf("%s\n", text.c_str());
  EXPECT_NE(text.find("ZeRO-3"), std::string::npos) << text.substr(0, 300);
  EXPECT_NE(text.find("weights sharded on dim 0 at rest"), std::string::npos) << text.substr(0, 300);
  EXPECT_NE(text.find("all_gather"), std::string::npos) << "no gather before use";
  // Each gradient comes out of the plan already split like its weight (reduce-scattered, or
  // computed by rows from gathered activations where the search finds that cheaper).
  EXPECT_NE(text.find("fc2.weight_grad (returned as S(0))"), std::string::npos) << text;
  EXPECT_EQ(text.find("bucketed by the trainer"), std::string::npos) << "a gradient left to the trainer's all-reduce";
  std::smatch m;
  const std::string json = t->Explain(true);
  const double weights = 4.0 * 1863690;  // f32 bytes of the MLP's weights
  ASSERT_TRUE(std::regex_search(json, m, std::regex("\"parameters\":([0-9]+)")));
  EXPECT_NEAR(std::stod(m[1]), weights / 4, weights / 4 * 0.01);
  ASSERT_TRUE(std::regex_search(json, m, std::regex("\"optimizer_state\":([0-9]+)")));
  EXPECT_NEAR(std::stod(m[1]), 2 * weights / 4, 2 * weights / 4 * 0.01);
  for (const std::string& n : t->parameter_names()) {  // whole weights, gathered from the shards
    Tensor p = t->GetParameter(n);
    EXPECT_EQ(p.shape(), c.model.values[static_cast<size_t>(c.model.FindValue(n))].constant.shape()) << n;
  }
}

TEST(TrainingPlans, BadInput) {
  Case c = MakeCase(ModelsDir(), "mlp", 1);
  DistributedTrainingOptions d = Strategy(c, "data");
  d.zero_stage = 4;
  EXPECT_THROW(DistributedTrainer::Create(c.model, d), Error);
  d = Strategy(c, "tensor");
  d.zero_stage = 3;  // ZeRO-3 lays the weights out itself: not with manual annotations
  try {
    DistributedTrainer::Create(c.model, d);
    ADD_FAILURE() << "ZeRO-3 with manual annotations was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ZeRO-3 lays out the weights itself"), std::string::npos) << e.what();
  }
  d = Strategy(c, "data");
  d.dist.num_devices = 2;  // the placement names devices 2 and 3, which do not exist
  EXPECT_THROW(DistributedTrainer::Create(c.model, d), Error);
  d = Strategy(c, "tensor");
  d.dist.plan.sbp["fc2.weight"] = {Sbp::S(7)};  // no axis 7
  auto t = DistributedTrainer::Create(c.model, d);
  EXPECT_THROW(t->TrainStep(c.batches[0]), Error);
  auto ok = DistributedTrainer::Create(c.model, Strategy(c, "data"));
  EXPECT_THROW(ok->TrainStep({{"input", Normal({16, 784}, 1)}}), Error);  // labels missing
  EXPECT_THROW(ok->TrainStep({{"input", Normal({16, 784}, 1)}, {"labels", Normal({16}, 2)}}), Error);  // labels f32
  EXPECT_THROW(ok->GetParameter("nope"), Error);
}

}  // namespace
}  // namespace oneflow::train
