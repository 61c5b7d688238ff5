// Shared by the pipeline tests (in-process gtest and the Gloo worker): the models and batches, the
// training options, and one comparison of a pipeline trainer against a single-device
// TrainingSession on the same 20 batches (loss per step, final parameters, inference outputs).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/session.h"
#include "serialize/onnx_import.h"
#include "train/distributed_trainer.h"

namespace oneflow::train::pipeline_test {

inline Graph LoadModel(const std::string& path) {
  Graph g = LoadOnnxFile(path);
  PrepareGraph(g);
  return g;
}

inline Tensor RandomFloat(const Shape& shape, std::mt19937& rng) {
  std::normal_distribution<float> d;
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

inline Tensor RandomLabels(int64_t n, int64_t classes, std::mt19937& rng) {
  Tensor t(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng() % classes);
  return t;
}

// ||got - want|| / ||want|| (L2 over the tensor).
inline double RelL2(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return 1e30;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = double(got.data<float>()[i]) - want.data<float>()[i];
    num += d * d;
    den += double(want.data<float>()[i]) * want.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-60));
}

// max |got - want| / max |want|.
inline double RelMax(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return 1e30;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    num = std::max(num, std::fabs(double(got.data<float>()[i]) - want.data<float>()[i]));
    den = std::max(den, std::fabs(double(want.data<float>()[i])));
  }
  return num / std::max(den, 1e-30);
}

using Feeds = std::vector<std::pair<std::string, Tensor>>;

// The bench MLP (784-1024-1024-10, cross-entropy) or a transformer encoder of width `d` (seq 16,
// MSE against random targets).
struct Case {
  std::string file;
  bool mlp = true;
  int64_t batch = 0;
  int64_t d = 64;
};

inline Tensor ModelInput(const Case& c, std::mt19937& rng) {
  return c.mlp ? RandomFloat({c.batch, 784}, rng) : RandomFloat({c.batch, 16, c.d}, rng);
}

inline std::vector<Feeds> Batches(const Case& c, int steps, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Feeds> out;
  for (int s = 0; s < steps; ++s) {
    Tensor x = ModelInput(c, rng);
    out.push_back({{"input", x}, {"labels", c.mlp ? RandomLabels(c.batch, 10, rng) : RandomFloat(x.shape(), rng)}});
  }
  return out;
}

inline TrainingOptions Training(const Case& c, OptimizerKind kind) {
  TrainingOptions o;
  o.session.intra_op_threads = 1;
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

inline DistributedTrainingOptions Pipeline(const TrainingOptions& t, const std::string& placement, int stages,
                                           int micro) {
  DistributedTrainingOptions o;
  o.training = t;
  o.dist.plan.placement = Placement::Parse(placement);
  o.pipeline_stages = stages;
  o.micro_batches = micro;
  return o;
}

struct Figures {
  double loss = 0;               // max over steps of |loss - reference| / |reference|
  double grad_norm = 0;          // the same for the global gradient norm
  double param_l2 = 0;           // max over parameters of RelL2
  double param_max = 0;          // max over parameters of RelMax (reported, not asserted)
  double output = 0;             // max over outputs of RelMax
  bool all_applied = true, same_names = true, same_outputs = true;
  int64_t steps = 0;
};

// 20 steps of the pipeline trainer `dist` and of a single-device session on the same batches.
inline Figures CompareWithSingleDevice(const Graph& model, const Case& c, const DistributedTrainingOptions& dist) {
  const std::vector<Feeds> batches = Batches(c, 20, 7);
  TrainingSession single(model, dist.training);
  std::unique_ptr<DistributedTrainer> pipe = CreatePipelineTrainer(model, dist);
  Figures f;
  for (const Feeds& b : batches) {
    single.Run(b, {}, RunMode::kTrain);
    single.Backward();
    f.all_applied &= single.Step() == StepOutcome::kApplied;
    TrainStepResult r = pipe->TrainStep(b);
    f.all_applied &= r.applied;
    f.loss = std::max(f.loss, std::fabs(r.loss - single.last_loss()) / std::fabs(single.last_loss()));
    f.grad_norm = std::max(f.grad_norm, std::fabs(r.grad_norm - single.last_grad_norm()) / single.last_grad_norm());
  }
  f.steps = pipe->step();
  f.same_names = pipe->parameter_names() == single.parameter_names();
  for (const std::string& p : single.parameter_names()) {
    const Tensor got = pipe->GetParameter(p), want = single.GetParameter(p);
    f.param_l2 = std::max(f.param_l2, RelL2(got, want));
    f.param_max = std::max(f.param_max, RelMax(got, want));
  }
  std::mt19937 rng(99);
  Tensor x = ModelInput(c, rng);
  auto want = single.Run({{"input", x}}, {}, RunMode::kEval);
  auto got = pipe->Run({{"input", x}}, {});
  f.same_outputs = got.size() == want.size();
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    f.same_outputs &= got[i].first == want[i].first;
    f.output = std::max(f.output, RelMax(got[i].second, want[i].second));
  }
  return f;
}

}  // namespace oneflow::train::pipeline_test
