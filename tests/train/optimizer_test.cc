// Optimizer, schedule, clipping and parameter-selection tests. The update rules are checked against
// the numpy (float64) reference written by make_optimizer_reference.py (path in ONEFLOW_TRAIN_FIXTURE).
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../graph_builder.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/param_select.h"

using namespace oneflow;
using namespace oneflow::train;

namespace {

struct RefCase {
  std::string name;
  std::map<std::string, std::string> config, schedule;
  std::vector<std::vector<float>> params, expect;
  std::vector<std::vector<std::vector<float>>> grads;         // [step][param]
  std::vector<std::vector<std::vector<float>>> state;         // [param][k]
  std::vector<double> lrs, norms;
  int steps = 0;
};

std::vector<double> ReadNumbers(std::istringstream& is) {
  std::vector<double> v;
  double x;
  while (is >> x) v.push_back(x);
  return v;
}

std::vector<float> ToFloat(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

std::map<std::string, std::string> ReadKeyValues(std::istringstream& is) {
  std::map<std::string, std::string> kv;
  std::string tok;
  while (is >> tok) {
    size_t eq = tok.find('=');
    kv[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return kv;
}

std::vector<RefCase> LoadCases() {
  const char* dir = std::getenv("ONEFLOW_TRAIN_FIXTURE");
  if (!dir) return {};
  std::ifstream in(std::string(dir) + "/optimizer_reference.txt");
  std::vector<RefCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream is(line);
    std::string tag;
    is >> tag;
    if (tag == "case") { cases.emplace_back(); is >> cases.back().name; continue; }
    RefCase& c = cases.back();
    if (tag == "config") c.config = ReadKeyValues(is);
    else if (tag == "schedule") c.schedule = ReadKeyValues(is);
    else if (tag == "sizes") {
      std::string word;
      int n;
      while (is >> word && word != "steps") c.params.emplace_back(), (void)word;
      is >> n;
      c.steps = n;
      c.grads.assign(static_cast<size_t>(n), std::vector<std::vector<float>>(c.params.size()));
      c.params.assign(c.params.size(), {});
      c.expect.assign(c.params.size(), {});
      c.state.assign(c.params.size(), {});
    } else if (tag == "param") { size_t i; is >> i; c.params[i] = ToFloat(ReadNumbers(is)); }
    else if (tag == "grad") { size_t s, i; is >> s >> i; c.grads[s][i] = ToFloat(ReadNumbers(is)); }
    else if (tag == "lr") c.lrs = ReadNumbers(is);
    else if (tag == "norm") c.norms = ReadNumbers(is);
    else if (tag == "expect") { size_t i; is >> i; c.expect[i] = ToFloat(ReadNumbers(is)); }
    else if (tag == "state") { size_t i, k; is >> i >> k; c.state[i].resize(k + 1); c.state[i][k] = ToFloat(ReadNumbers(is)); }
  }
  return cases;
}

Tensor FromVector(const std::vector<float>& v) {
  Tensor t(DType::kFloat32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

OptimizerConfig ConfigOf(const RefCase& c) {
  OptimizerConfig o;
  const std::string& k = c.config.at("kind");
  o.kind = k == "sgd" ? OptimizerKind::kSgd : k == "adam" ? OptimizerKind::kAdam : OptimizerKind::kAdamW;
  o.lr = std::stof(c.config.at("lr"));
  o.weight_decay = std::stof(c.config.at("weight_decay"));
  o.momentum = std::stof(c.config.at("momentum"));
  o.dampening = std::stof(c.config.at("dampening"));
  o.nesterov = c.config.at("nesterov") == "1";
  o.beta1 = std::stof(c.config.at("beta1"));
  o.beta2 = std::stof(c.config.at("beta2"));
  o.eps = std::stof(c.config.at("eps"));
  return o;
}

LrSchedule ScheduleOf(const RefCase& c) {
  LrSchedule s;
  const std::string& k = c.schedule.at("kind");
  s.kind = k == "step" ? LrScheduleKind::kStep : k == "cosine" ? LrScheduleKind::kCosine : LrScheduleKind::kConstant;
  s.warmup_steps = std::stoll(c.schedule.at("warmup_steps"));
  s.warmup_start_factor = std::stof(c.schedule.at("warmup_start_factor"));
  s.step_size = std::stoll(c.schedule.at("step_size"));
  s.gamma = std::stof(c.schedule.at("gamma"));
  s.decay_steps = std::stoll(c.schedule.at("decay_steps"));
  s.min_lr_factor = std::stof(c.schedule.at("min_lr_factor"));
  return s;
}

// Runs a reference case through our optimizer; returns the parameter slots after all steps.
std::vector<ParamSlot> RunCase(const RefCase& c, int threads) {
  OptimizerConfig cfg = ConfigOf(c);
  ValidateOptimizerConfig(cfg);
  LrSchedule sched = ScheduleOf(c);
  ValidateLrSchedule(sched);
  float max_norm = std::stof(c.config.at("max_norm"));
  ThreadPool pool(threads);
  std::vector<ParamSlot> slots(c.params.size());
  std::vector<ParamSlot*> ptrs;
  for (size_t i = 0; i < slots.size(); ++i) {
    slots[i].value = FromVector(c.params[i]);
    for (size_t k = 0; k < OptimizerStateNames(cfg).size(); ++k)
      slots[i].state.push_back(Tensor(DType::kFloat32, slots[i].value.shape()));
    ptrs.push_back(&slots[i]);
  }
  for (int s = 0; s < c.steps; ++s) {
    for (size_t i = 0; i < slots.size(); ++i) slots[i].grad = FromVector(c.grads[static_cast<size_t>(s)][i]);
    GradientNorm norm = GlobalGradientNorm(ptrs, pool);
    EXPECT_TRUE(norm.finite);
    EXPECT_NEAR(norm.norm, c.norms[static_cast<size_t>(s)], 1e-6 * c.norms[static_cast<size_t>(s)]) << c.name;
    float lr = LearningRate(sched, cfg.lr, s);
    EXPECT_NEAR(lr, c.lrs[static_cast<size_t>(s)], 1e-6 * cfg.lr) << c.name << " step " << s;
    ApplyUpdate(cfg, ptrs, lr, ClipScale(norm.norm, max_norm), s, pool);
  }
  return slots;
}

void ExpectClose(const float* got, const std::vector<float>& want, const std::string& what) {
  double worst = 0;
  size_t at = 0;
  for (size_t j = 0; j < want.size(); ++j) {
    double err = std::fabs(static_cast<double>(got[j]) - want[j]) / (1e-5 + 1e-4 * std::fabs(want[j]));
    if (err > worst) worst = err, at = j;
  }
  EXPECT_LE(worst, 1.0) << what << ": element " << at << " is " << got[at] << ", reference " << want[at];
}

}  // namespace

TEST(Optimizer, MatchesNumpyReference) {
  std::vector<RefCase> cases = LoadCases();
  if (cases.empty()) GTEST_SKIP() << "ONEFLOW_TRAIN_FIXTURE is not set (run through ctest, which generates it)";
  EXPECT_EQ(cases.size(), 9u);
  for (const RefCase& c : cases) {
    std::vector<ParamSlot> slots = RunCase(c, 2);
    for (size_t i = 0; i < slots.size(); ++i) {
      ExpectClose(slots[i].value.data<float>(), c.expect[i], c.name + " param " + std::to_string(i));
      ASSERT_EQ(slots[i].state.size(), c.state[i].size()) << c.name;
      for (size_t k = 0; k < c.state[i].size(); ++k)
        ExpectClose(slots[i].state[k].data<float>(), c.state[i][k], c.name + " state " + std::to_string(k));
    }
  }
}

TEST(Optimizer, BitIdenticalForAnyThreadCount) {
  std::vector<RefCase> cases = LoadCases();
  if (cases.empty()) GTEST_SKIP() << "ONEFLOW_TRAIN_FIXTURE is not set";
  for (const RefCase& c : cases) {
    std::vector<ParamSlot> a = RunCase(c, 1), b = RunCase(c, 3);
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(0, std::memcmp(a[i].value.raw(), b[i].value.raw(), a[i].value.nbytes())) << c.name;
  }
}

TEST(Optimizer, NonFiniteGradientIsDetected) {
  ThreadPool pool(2);
  ParamSlot s;
  s.value = Tensor(DType::kFloat32, {40000});
  s.grad = Tensor(DType::kFloat32, {40000});
  s.grad.data<float>()[33333] = std::nanf("");
  std::vector<ParamSlot*> p{&s};
  EXPECT_FALSE(GlobalGradientNorm(p, pool).finite);
  s.grad.data<float>()[33333] = INFINITY;
  EXPECT_FALSE(GlobalGradientNorm(p, pool).finite);
  s.grad.data<float>()[33333] = 3.0f;
  s.grad.data<float>()[7] = 4.0f;
  GradientNorm n = GlobalGradientNorm(p, pool);
  EXPECT_TRUE(n.finite);
  EXPECT_DOUBLE_EQ(n.norm, 5.0);
  EXPECT_FLOAT_EQ(ClipScale(5.0, 1.0f), static_cast<float>(1.0 / (5.0 + 1e-6)));
  EXPECT_EQ(ClipScale(5.0, 10.0f), 1.0f);
  EXPECT_EQ(ClipScale(5.0, 0.0f), 1.0f);
}

TEST(Optimizer, BadHyperParametersAreRefused) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kSgd;
  c.nesterov = true;
  EXPECT_THROW(ValidateOptimizerConfig(c), Error);  // Nesterov without momentum
  c = OptimizerConfig();
  c.beta2 = 1.0f;
  EXPECT_THROW(ValidateOptimizerConfig(c), Error);
  c = OptimizerConfig();
  c.lr = -1.0f;
  EXPECT_THROW(ValidateOptimizerConfig(c), Error);
  LrSchedule s;
  s.kind = LrScheduleKind::kCosine;
  s.decay_steps = 0;
  EXPECT_THROW(ValidateLrSchedule(s), Error);
}

TEST(ParamSelect, GlobMatch) {
  EXPECT_TRUE(GlobMatch("layer1.*", "layer1.weight"));
  EXPECT_TRUE(GlobMatch("*.bias", "fc.bias"));
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("l?yer*w*t", "layer1.weight"));
  EXPECT_FALSE(GlobMatch("layer1.*", "layer2.weight"));
  EXPECT_FALSE(GlobMatch("*.bias", "fc.bias2"));
  EXPECT_FALSE(GlobMatch("a?", "a"));
  EXPECT_TRUE(GlobMatch("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(GlobMatch("a*b*c", "aXbYbZ"));
}

TEST(ParamSelect, DefaultsAndFreezing) {
  Graph g;
  auto param = [&](const std::string& name, DType dt) { return test_util::AddParam(g, name, Tensor(dt, {2})); };
  int w1 = param("fc1.weight", DType::kFloat32);
  int b1 = param("fc1.bias", DType::kFloat32);
  int w2 = param("fc2.weight", DType::kFloat32);
  param("shape", DType::kInt64);                     // integer initializers never train
  g.AddConstant("folded", Tensor(DType::kFloat32, {2}));  // not a model parameter
  EXPECT_EQ(SelectParameters(g, {}), (std::vector<int>{w1, b1, w2}));
  EXPECT_EQ(SelectParameters(g, {"*.bias"}), (std::vector<int>{w1, w2}));
  EXPECT_EQ(SelectParameters(g, {"fc1.*", "fc2.weight"}), (std::vector<int>{}));
  EXPECT_THROW(SelectParameters(g, {"fc3.*"}), Error);  // a pattern matching nothing is a typo
  param("half", DType::kFloat16);
  EXPECT_THROW(SelectParameters(g, {}), Error);
  EXPECT_EQ(SelectParameters(g, {"half"}).size(), 3u);
}
