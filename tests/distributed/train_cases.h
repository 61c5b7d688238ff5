// Training cases shared by the in-process training-plan tests and the Gloo training worker: the
// MLP and transformer encoder of bench/make_train_models.py with fixed batches, the
// single-device reference run, and the distributed strategies under test by name.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/session.h"
#include "serialize/onnx_import.h"
#include "train/distributed_trainer.h"
#include "train/tensor_parallel.h"
#include "train/training_session.h"

namespace oneflow::train::testing {

using Feeds = std::vector<std::pair<std::string, Tensor>>;

inline Tensor Normal(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

inline Tensor Classes(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Tensor t(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
  return t;
}

// max |got - want| / max |want|: relative to the tensor's scale, floored at 1e-2 for tensors that
// stay near zero (the attention key bias: its gradient is zero in exact arithmetic, so only
// rounding noise moves it).
inline double RelError(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return INFINITY;
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    num = std::max(num, std::fabs(double(got.data<float>()[i]) - want.data<float>()[i]));
    den = std::max(den, std::fabs(double(want.data<float>()[i])));
  }
  return num / std::max(den, 1e-2);
}

struct Case {
  Graph model;
  TrainingOptions options;
  std::vector<Feeds> batches;
  Feeds eval_feed;
  // The single-device reference (RunReference).
  std::vector<double> losses;
  std::map<std::string, Tensor> params;
  Tensor eval_out;
};

// "mlp" (SGD with momentum, softmax cross-entropy, batch 16) or "transformer" (SGD, MSE,
// batch 4 x 8 tokens), `steps` batches, from the models in `dir`.
inline Case MakeCase(const std::string& dir, const std::string& name, int steps) {
  Case k;
  const bool mlp = name == "mlp";
  if (!mlp && name != "transformer") throw std::runtime_error("unknown case " + name);
  k.model = LoadOnnxFile(dir + (mlp ? "/mlp_784_1024_1024_10.onnx" : "/transformer_encoder.onnx"));
  if (!mlp) {
    // The strategies must train the reference's trajectory up to rounding. Relu's kink can turn a
    // rounding difference into a different branch wherever a pre-activation lies within rounding
    // of zero, and over 20 steps the encoder's 4x8x1024 FFN activations did: the reference itself
    // then left every strategy by 2e-5, or 2x2 alone by 5e-4, depending on which kernels (AVX2,
    // AVX-512, oneDNN's) summed a product. On Tanh, smooth, rounding differences stay that size.
    for (Node& n : k.model.nodes)
      if (n.op_type == "Relu") {
        n.op_type = "Tanh";
        n.schema = nullptr;
      }
  }
  PrepareGraph(k.model);
  if (mlp) {
    k.options.appended_loss = AppendedLoss::kSoftmaxCrossEntropy;
    k.options.logits_output = "logits";
    k.options.optimizer.kind = OptimizerKind::kSgd;
    k.options.optimizer.lr = 0.05f;
    k.options.optimizer.momentum = 0.9f;
    for (int i = 0; i < steps; ++i)
      k.batches.push_back({{"input", Normal({16, 784}, 100 + i)}, {"labels", Classes(16, 200 + i)}});
    k.eval_feed = {{"input", Normal({6, 784}, 7)}};
  } else {
    k.options.appended_loss = AppendedLoss::kMse;
    k.options.logits_output = "output";
    k.options.frozen = {"scale"};  // the attention's 1/sqrt(d) is a constant of the model, not a weight
    // SGD: Adam would turn the rounding noise of gradients that are zero in exact arithmetic (the
    // key bias: softmax ignores it) into full-size steps, so no two summation orders would agree.
    k.options.optimizer.kind = OptimizerKind::kSgd;
    k.options.optimizer.lr = 0.001f;  // larger steps make the 20-step trajectory chaotic: rounding
    k.options.optimizer.momentum = 0.9f;  // differences then grow past 1e-5 in any summation order
    for (int i = 0; i < steps; ++i)
      k.batches.push_back({{"input", Normal({4, 8, 256}, 300 + i)}, {"labels", Normal({4, 8, 256}, 400 + i)}});
    k.eval_feed = {{"input", Normal({4, 8, 256}, 9)}};
  }
  return k;
}

inline void RunReference(Case& c) {
  TrainingOptions o = c.options;
  o.session.intra_op_threads = 1;
  TrainingSession s(c.model, o);
  for (const Feeds& b : c.batches) {
    s.Run(b, {}, RunMode::kTrain);
    s.Backward();
    if (s.Step() != StepOutcome::kApplied) throw std::runtime_error("reference step skipped");
    c.losses.push_back(s.last_loss());
  }
  for (const std::string& n : s.parameter_names()) c.params[n] = s.GetParameter(n);
  c.eval_out = s.Run(c.eval_feed, {}, RunMode::kEval)[0].second;
}

// The strategies under test, on 4 devices: "data", "zero1", "zero2", "zero3" (weights sharded on
// dim 0, gathered where used, gradients reduce-scattered), "tensor" (column/row on a
// 1-D placement), "2x2" (data x tensor), "auto", "pipeline" (2 stages x 2 data parallel, 2
// micro-batches), "auto_slow_link" (auto with a 10 ms link latency, under which the MLP's cheapest
// layout is a pipeline: few, large transfers beat many collectives).
inline DistributedTrainingOptions Strategy(const Case& c, const std::string& name) {
  DistributedTrainingOptions d;
  d.training = c.options;
  const bool two_d = name == "2x2";
  d.dist.plan.placement = Placement::Parse(two_d ? "cpu:[[0,1],[2,3]]" : "cpu:0-3");
  const bool autos = name == "auto" || name == "auto_slow_link";
  if (name == "auto_slow_link") d.dist.plan.cost.link_latency_s = 10e-3;
  d.dist.plan.mode = autos ? PlanMode::kAuto : name == "tensor" || two_d ? PlanMode::kManual
                                                                                   : PlanMode::kDataParallel;
  if (name == "zero1" || name == "zero2" || name == "zero3") {
    d.zero_stage = name[4] - '0';
    d.bucket_bytes = 1 << 20;  // several buckets
  } else if (name == "tensor" || two_d) {
    const int axis = two_d ? 1 : 0, nd = two_d ? 2 : 1;
    for (const auto& [param, sbp] : ColumnRowLayout(c.model)) {
      NdSbp s = AllBroadcast(nd);
      s[static_cast<size_t>(axis)] = sbp;
      d.dist.plan.sbp[param] = s;
    }
    const NdSbp data = two_d ? ParseNdSbp("(S(0),B)") : NdSbp{Sbp::B()};
    d.dist.plan.sbp["input"] = data;
    d.dist.plan.sbp["labels"] = data;
  } else if (name == "pipeline") {
    d.pipeline_stages = 2;
    d.micro_batches = 2;  // the transformer's batch of 4: 2 rows per micro-batch, 1 per device
  } else if (name != "data" && !autos) {
    throw std::runtime_error("unknown strategy " + name);
  }
  return d;
}

// What a distributed run produced: the loss per step, the final parameters, an inference output.
struct Trained {
  std::vector<double> losses;
  std::map<std::string, Tensor> params;
  Tensor eval_out;
};

// Trains `c.batches` with `t`. GetParameter is collective: with Gloo every rank must call this.
inline Trained Train(const Case& c, DistributedTrainer& t) {
  Trained r;
  for (const Feeds& b : c.batches) {
    TrainStepResult s = t.TrainStep(b);
    if (!s.applied) throw std::runtime_error("a distributed step was skipped");
    r.losses.push_back(s.loss);
  }
  for (const std::string& n : t.parameter_names()) r.params[n] = t.GetParameter(n);
  r.eval_out = t.Run(c.eval_feed, {})[0].second;
  return r;
}

struct Comparison {
  double loss = 0, params = 0, eval = 0;  // worst relative errors against the reference
  size_t worst_step = 0;
  std::string worst_param;
};

inline Comparison Compare(const Case& ref, const Trained& got) {
  Comparison r;
  if (got.losses.size() != ref.losses.size()) throw std::runtime_error("step counts differ");
  for (size_t i = 0; i < ref.losses.size(); ++i) {
    const double e = std::fabs(got.losses[i] - ref.losses[i]) / std::fabs(ref.losses[i]);
    if (e > r.loss) r.worst_step = i;
    r.loss = std::max(r.loss, e);
  }
  for (const auto& [n, want] : ref.params) {
    const double e = RelError(got.params.at(n), want);
    if (e > r.params) r.worst_param = n;
    r.params = std::max(r.params, e);
  }
  r.eval = RelError(got.eval_out, ref.eval_out);
  return r;
}

}  // namespace oneflow::train::testing
