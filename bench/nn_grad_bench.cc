// oneflow_nn_grad_bench: throughput of the nn gradient kernels (ai.oneflow ConvGradData/Filter, the
// softmax and layer-norm grads) next to the forward Conv with non-constant weights (as in training),
// on the shapes of the training examples (digits CNN, a CIFAR-sized layer, a ResNet layer, the
// transformer block d=256 seq=128 batch=8), at 1 and 2 threads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/node_runner.h"
#include "engine/session.h"
#include "graph/op_schema.h"

using namespace oneflow;
using Clock = std::chrono::steady_clock;

namespace {

// One prepared node and its inputs, run through NodeRunner (shape inference, allocation, kernel).
struct Bench {
  Graph g;
  std::unique_ptr<NodeRunner> runner;
  std::vector<Tensor> inputs;

  Bench(const std::string& op, const std::string& domain, std::vector<Tensor> in, const AttrMap& attrs, size_t outs)
      : inputs(std::move(in)) {
    Node n;
    n.op_type = op;
    n.domain = domain;
    n.name = "n";
    n.opset = domain.empty() ? 17 : kOneflowDomainVersion;
    n.attrs = attrs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int v = g.AddValue("in" + std::to_string(i), TensorType::Of(inputs[i].dtype(), inputs[i].shape()));
      g.inputs.push_back(v);
      n.inputs.push_back(v);
    }
    for (size_t i = 0; i < outs; ++i) {
      n.outputs.push_back(g.AddValue("out" + std::to_string(i)));
      g.outputs.push_back(n.outputs.back());
    }
    g.nodes.push_back(n);
    g.opset_imports[""] = 17;
    g.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
    PrepareGraph(g);
    runner = std::make_unique<NodeRunner>(g, g.nodes[0]);
  }

  double BestMs(ThreadPool& pool, int reps) const {
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : inputs) ptrs.push_back(&t);
    double best = 1e30;
    for (int r = 0; r <= reps; ++r) {
      std::vector<Tensor> outs;
      const auto t0 = Clock::now();
      runner->Run(ptrs, outs, pool, {});
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (r > 0) best = std::min(best, ms);
    }
    return best;
  }
};

Tensor Random(const Shape& s) {
  static std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  Tensor t(DType::kFloat32, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

Tensor ShapeOf(const Shape& s) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(s.size())});
  std::copy(s.begin(), s.end(), t.data<int64_t>());
  return t;
}

struct ConvShape {
  const char* name;
  int64_t n, c, m, hw, k, pad, group;
};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  if (reps <= 0) {
    std::fprintf(stderr, "usage: %s [REPS (default 10)]\n", argv[0]);
    return 2;
  }
  const ConvShape convs[] = {{"digits conv1 64x1x8x8 k3->16", 64, 1, 16, 8, 3, 1, 1},
                             {"digits conv2 64x16x4x4 k3->32", 64, 16, 32, 4, 3, 1, 1},
                             {"cifar 32x64x32x32 k3->64", 32, 64, 64, 32, 3, 1, 1},
                             {"resnet 8x128x28x28 k3->128", 8, 128, 128, 28, 3, 1, 1},
                             {"depthwise 16x128x28x28 k3", 16, 128, 128, 28, 3, 1, 128}};
  for (int threads = 1; threads <= 2; ++threads) {
    ThreadPool pool(threads);
    std::printf("threads %d\n", threads);
    for (const ConvShape& s : convs) {
      AttrMap a;
      a.set("pads", Attribute::Ints({s.pad, s.pad, s.pad, s.pad}));
      a.set("group", Attribute::Int(s.group));
      const Shape xs{s.n, s.c, s.hw, s.hw}, ws{s.m, s.c / s.group, s.k, s.k};
      const int64_t oh = s.hw + 2 * s.pad - s.k + 1;
      const Shape ys{s.n, s.m, oh, oh};
      const double gflop = 2.0 * s.n * s.m * (s.c / s.group) * s.k * s.k * oh * oh * 1e-9;
      Tensor x = Random(xs), w = Random(ws), dy = Random(ys);
      const double fwd = Bench("Conv", "", {x, w}, a, 1).BestMs(pool, reps);
      const double gd = Bench("ConvGradData", kOneflowDomain, {dy, w, ShapeOf(xs)}, a, 1).BestMs(pool, reps);
      const double gf = Bench("ConvGradFilter", kOneflowDomain, {x, dy, ShapeOf(ws)}, a, 1).BestMs(pool, reps);
      std::printf("  %-32s fwd %8.3f ms (%6.1f GFLOP/s)  grad-data %8.3f ms (%6.1f)  grad-filter %8.3f ms (%6.1f)\n",
                  s.name, fwd, gflop / fwd * 1e3, gd, gflop / gd * 1e3, gf, gflop / gf * 1e3);
    }
    // Transformer block shapes: softmax over [8, 4, 128, 128] attention scores, layer norm [1024, 256].
    {
      AttrMap a;
      a.set("axis", Attribute::Int(-1));
      const Shape ss{8, 4, 128, 128}, ls{8 * 128, 256};
      Tensor y = Random(ss), g = Random(ss);
      const double sm = Bench("SoftmaxGrad", kOneflowDomain, {g, y}, a, 1).BestMs(pool, reps);
      Tensor x = Random(ls), dy = Random(ls), scale = Random({256});
      const double ln = Bench("LayerNormalizationGrad", kOneflowDomain, {dy, x, scale}, a, 3).BestMs(pool, reps);
      const double sm_gb = 3.0 * NumElements(ss) * 4 * 1e-9, ln_gb = 3.0 * NumElements(ls) * 4 * 1e-9;
      std::printf("  %-32s %8.3f ms (%5.1f GB/s)\n", "SoftmaxGrad [8,4,128,128]", sm, sm_gb / sm * 1e3);
      std::printf("  %-32s %8.3f ms (%5.1f GB/s)\n", "LayerNormalizationGrad [1024,256]", ln, ln_gb / ln * 1e3);
    }
  }
  return 0;
}
