// Several threads running one session at once (a server's instances share sessions this way):
// every result must equal the single-threaded run of the same input, whatever the interleaving of
// plan building, arena reuse and the shared thread pool. Runs under ThreadSanitizer in CI
// (scripts/sanitize.sh tsan). The reference is computed here in float64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "../graph_builder.h"
#include "engine/session.h"

namespace oneflow {
namespace {

constexpr int64_t kIn = 16, kHidden = 32, kOut = 8;

Tensor RandomTensor(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// y = relu(x W1 + b1) W2 for a batch dim the model leaves symbolic.
struct Mlp {
  Tensor w1 = RandomTensor({kIn, kHidden}, 1), b1 = RandomTensor({kHidden}, 2), w2 = RandomTensor({kHidden, kOut}, 3);

  Graph Build() const {
    test_util::GraphBuilder b;
    const int x = b.Input("x", TensorType::Of(DType::kFloat32, std::vector<Dim>{Dim::Symbol("batch"), Dim::Known(kIn)}));
    const int h = b.Node("Relu", {b.Node("Add", {b.Node("MatMul", {x, b.Param("w1", w1)}), b.Param("b1", b1)})});
    b.g.outputs = {b.Node("MatMul", {h, b.Param("w2", w2)})};
    PrepareGraph(b.g);
    return b.g;
  }

  std::vector<double> Reference(const Tensor& x) const {
    const int64_t n = x.shape()[0];
    std::vector<double> y(static_cast<size_t>(n * kOut), 0.0);
    for (int64_t r = 0; r < n; ++r) {
      std::vector<double> h(kHidden);
      for (int64_t j = 0; j < kHidden; ++j) {
        double s = b1.data<float>()[j];
        for (int64_t k = 0; k < kIn; ++k) s += double(x.data<float>()[r * kIn + k]) * w1.data<float>()[k * kHidden + j];
        h[static_cast<size_t>(j)] = s > 0 ? s : 0;
      }
      for (int64_t o = 0; o < kOut; ++o)
        for (int64_t j = 0; j < kHidden; ++j)
          y[static_cast<size_t>(r * kOut + o)] += h[static_cast<size_t>(j)] * w2.data<float>()[j * kOut + o];
    }
    return y;
  }
};

TEST(ExecutorConcurrency, ThreadsRunningOneSessionGetTheirOwnResults) {
  const Mlp mlp;
  SessionOptions options;
  options.intra_op_threads = 2;  // one pool shared by every caller
  const Session session(mlp.Build(), options);
  constexpr int kThreads = 4, kRuns = 25;
  std::vector<std::vector<std::string>> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        // Batch sizes differ between threads and runs: plans are built and cached concurrently.
        const int64_t batch = 1 + (t * 7 + r * 3) % 9;
        const Tensor x = RandomTensor({batch, kIn}, static_cast<unsigned>(100 * t + r));
        const Tensor y = session.Run({{"x", x}}, {})[0].second;
        const std::vector<double> want = mlp.Reference(x);
        for (int64_t i = 0; i < y.numel(); ++i) {
          const double got = y.data<float>()[i], w = want[static_cast<size_t>(i)];
          if (std::fabs(got - w) > 1e-4 * (1 + std::fabs(w))) {
            failures[static_cast<size_t>(t)].push_back("thread " + std::to_string(t) + " run " + std::to_string(r) +
                                                       " element " + std::to_string(i) + ": " + std::to_string(got) +
                                                       " != " + std::to_string(w));
            break;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const auto& f : failures)
    for (const std::string& msg : f) ADD_FAILURE() << msg;
}

}  // namespace
}  // namespace oneflow
