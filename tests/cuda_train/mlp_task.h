// The MLP classification task and the encoder options of the training tests (mixed precision on the CPU, training sessions
// on CUDA): a seeded 32-64-64-8 MLP and batches labelled by a fixed random linear teacher.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "engine/session.h"
#include "graph/grad_context.h"
#include "model_graph.h"
#include "train/training_session.h"

namespace oneflow::train_test {

constexpr int64_t kIn = 32, kHidden = 64, kClasses = 8, kBatch = 64;

inline Tensor Randn(const Shape& s, std::mt19937& rng, float scale) {
  Tensor t(DType::kFloat32, s);
  std::normal_distribution<float> d(0.0f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// input [N, 32] -> 64 -> Relu -> 64 -> Relu -> logits [N, 8]; He-initialized, zero biases. With
// `attention_like`, the logits go through Softmax and a LayerNormalization first (ops the pass
// must keep in f32).
inline Graph MakeMlp(uint64_t seed, bool attention_like = false) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  Graph g;
  g.opset_imports[""] = 17;
  const int x = g.AddValue("input", TensorType::Of(DType::kFloat32, {kBatch, kIn}));
  g.inputs.push_back(x);
  const int64_t dims[] = {kIn, kHidden, kHidden, kClasses};
  int h = x;
  for (int l = 0; l < 3; ++l) {
    const std::string p = "fc" + std::to_string(l + 1);
    const int w = AddParam(g, p + ".weight", Randn({dims[l], dims[l + 1]}, rng, std::sqrt(2.0f / dims[l])));
    const int b = AddParam(g, p + ".bias", Tensor(DType::kFloat32, {dims[l + 1]}));
    const bool last = l == 2;
    const int pre = AddOp(g, "Add", {AddOp(g, "MatMul", {h, w}, p + ".mm"), b}, last && !attention_like ? "logits" : p + ".pre");
    h = last ? pre : AddOp(g, "Relu", {pre}, p + ".act");
  }
  if (attention_like) {
    const int probs = AddOp(g, "Softmax", {h}, "probs", MakeAttrs({{"axis", Attribute::Int(-1)}}));
    Tensor ones(DType::kFloat32, {kClasses});
    for (int64_t i = 0; i < kClasses; ++i) ones.data<float>()[i] = 1.0f;
    const int scale = AddParam(g, "ln.weight", ones);
    const int bias = AddParam(g, "ln.bias", Tensor(DType::kFloat32, {kClasses}));
    h = AddOp(g, "LayerNormalization", {probs, scale, bias}, "logits", MakeAttrs({{"axis", Attribute::Int(-1)}}));
  }
  g.outputs.push_back(h);
  PrepareGraph(g);
  return g;
}

// A learnable task: labels are the argmax of a fixed random linear map of the input.
struct Batch {
  Tensor x, labels;
};
inline Batch MakeBatch(std::mt19937& rng, const Tensor& teacher) {
  Batch b{Randn({kBatch, kIn}, rng, 1.0f), Tensor(DType::kInt64, {kBatch})};
  for (int64_t n = 0; n < kBatch; ++n) {
    int64_t best = 0;
    double best_v = -1e30;
    for (int64_t c = 0; c < kClasses; ++c) {
      double v = 0;
      for (int64_t k = 0; k < kIn; ++k) v += b.x.data<float>()[n * kIn + k] * teacher.data<float>()[k * kClasses + c];
      if (v > best_v) best_v = v, best = c;
    }
    b.labels.data<int64_t>()[n] = best;
  }
  return b;
}

// The bench encoder's training options in the tests: MSE against the "labels" input, Adam at 1e-3.
inline train::TrainingOptions EncoderMseOptions() {
  train::TrainingOptions o;
  o.session.intra_op_threads = 2;
  o.appended_loss = train::AppendedLoss::kMse;
  o.logits_output = "output";
  o.optimizer.lr = 1e-3f;
  return o;
}

}  // namespace oneflow::train_test
