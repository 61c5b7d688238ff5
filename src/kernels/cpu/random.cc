// CPU kernels of the random ops (graph/ops/random.cc). Each node owns a Mersenne Twister seeded once,
// at kernel creation; runs may overlap, so draws take a lock (a run's draws are consecutive, and
// which run gets which stretch of the stream follows the order they take the lock).
#include <algorithm>
#include <cmath>
#include <mutex>
#include <random>
#include <vector>

#include "kernels/cpu/isa_region.h"
#include "kernels/kernel.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// The node's generator: `seed` (a float attribute in ONNX) when set, else the system's entropy.
class RandomKernelBase : public OpKernel {
 public:
  explicit RandomKernelBase(const KernelInitContext& c) {
    if (c.attrs().has("seed")) {
      const float seed = c.attrs().GetFloat("seed");
      OF_CHECK(std::isfinite(seed), kInvalidModel, c.node().Describe(), ": seed is ", seed, "; it must be finite");
      engine_.seed(static_cast<uint32_t>(static_cast<int64_t>(seed)));
    } else {
      engine_.seed(std::random_device{}());
    }
  }

 protected:
  // Calls draw(engine) under the node's lock.
  template <typename Fn>
  void Draw(Fn&& draw) {
    std::lock_guard<std::mutex> lock(mu_);
    draw(engine_);
  }

 private:
  std::mutex mu_;
  std::mt19937 engine_;
};

// Writes `values` (as doubles) into `out` of any float dtype.
void Store(Tensor& out, const std::vector<double>& values) {
  DispatchAll(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    for (size_t i = 0; i < values.size(); ++i) dst[i] = CastFromDouble<T>(values[i]);
  });
}

// RandomNormal, RandomNormalLike: N(mean, scale^2).
class RandomNormalKernel final : public RandomKernelBase {
 public:
  explicit RandomNormalKernel(const KernelInitContext& c)
      : RandomKernelBase(c), mean_(c.attrs().GetFloat("mean")), scale_(c.attrs().GetFloat("scale")) {}
  void Compute(KernelContext& ctx) override {
    Tensor& out = ctx.output(0);
    std::vector<double> values(static_cast<size_t>(out.numel()));
    Draw([&](std::mt19937& e) {
      std::normal_distribution<double> dist(mean_, scale_);
      for (double& v : values) v = dist(e);
    });
    Store(out, values);
  }

 private:
  double mean_, scale_;
};
ONEFLOW_KERNEL_CLASS(RandomNormal, RandomNormalKernel);
ONEFLOW_KERNEL_CLASS(RandomNormalLike, RandomNormalKernel);

// RandomUniform, RandomUniformLike: U[low, high).
class RandomUniformKernel final : public RandomKernelBase {
 public:
  explicit RandomUniformKernel(const KernelInitContext& c)
      : RandomKernelBase(c), low_(c.attrs().GetFloat("low")), high_(c.attrs().GetFloat("high")) {
    OF_CHECK(std::isfinite(low_) && std::isfinite(high_) && low_ <= high_, kInvalidModel, c.node().Describe(),
             ": low (", low_, ") and high (", high_, ") must be finite with low <= high");
  }
  void Compute(KernelContext& ctx) override {
    Tensor& out = ctx.output(0);
    std::vector<double> values(static_cast<size_t>(out.numel()));
    Draw([&](std::mt19937& e) {
      std::uniform_real_distribution<double> dist(0.0, 1.0);
      for (double& v : values) v = low_ + (high_ - low_) * dist(e);
    });
    Store(out, values);
  }

 private:
  double low_, high_;
};
ONEFLOW_KERNEL_CLASS(RandomUniform, RandomUniformKernel);
ONEFLOW_KERNEL_CLASS(RandomUniformLike, RandomUniformKernel);

class BernoulliKernel final : public RandomKernelBase {
 public:
  using RandomKernelBase::RandomKernelBase;
  void Compute(KernelContext& ctx) override {
    const Tensor& p = ctx.input(0);
    const int64_t n = p.numel();
    std::vector<double> probs(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      probs[static_cast<size_t>(i)] = p.GetAsDouble(i);
      OF_CHECK(probs[static_cast<size_t>(i)] >= 0.0 && probs[static_cast<size_t>(i)] <= 1.0, kInvalidArgument,
               ctx.node_desc(), ": probability ", i, " is ", probs[static_cast<size_t>(i)], "; it must be in [0, 1]");
    }
    std::vector<double> values(probs.size());
    Draw([&](std::mt19937& e) {
      std::uniform_real_distribution<double> dist(0.0, 1.0);
      for (size_t i = 0; i < values.size(); ++i) values[i] = dist(e) < probs[i] ? 1.0 : 0.0;
    });
    Store(ctx.output(0), values);
  }
};
ONEFLOW_KERNEL_CLASS(Bernoulli, BernoulliKernel);

// Per row: softmax of the logits as a cumulative distribution, then a binary search per sample.
class MultinomialKernel final : public RandomKernelBase {
 public:
  using RandomKernelBase::RandomKernelBase;
  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    OF_CHECK(x.rank() == 2, kInvalidArgument, ctx.node_desc(), ": input must be [batch_size, class_size], got ",
             DescribeValue(x));
    const int64_t batch = x.dim(0), classes = x.dim(1);
    Tensor& out = ctx.output(0);
    const int64_t samples = out.dim(1);
    OF_CHECK(classes > 0 || batch == 0, kInvalidArgument, ctx.node_desc(), ": class_size is 0: nothing to draw");
    std::vector<double> values(static_cast<size_t>(batch * samples));
    std::vector<double> cdf(static_cast<size_t>(classes));
    for (int64_t b = 0; b < batch; ++b) {
      double top = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) top = std::max(top, x.GetAsDouble(b * classes + c));
      OF_CHECK(std::isfinite(top), kInvalidArgument, ctx.node_desc(), ": row ", b,
               " has no finite log-probability to draw from");
      double total = 0.0;
      for (int64_t c = 0; c < classes; ++c) {
        total += std::exp(x.GetAsDouble(b * classes + c) - top);
        cdf[static_cast<size_t>(c)] = total;
      }
      Draw([&](std::mt19937& e) {
        std::uniform_real_distribution<double> dist(0.0, total);
        for (int64_t s = 0; s < samples; ++s) {
          const double u = dist(e);
          const int64_t c = std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
          values[static_cast<size_t>(b * samples + s)] = static_cast<double>(std::min(c, classes - 1));
        }
      });
    }
    DispatchAll(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = out.data<T>();
      for (size_t i = 0; i < values.size(); ++i) dst[i] = static_cast<T>(values[i]);
    });
  }
};
ONEFLOW_KERNEL_CLASS(Multinomial, MultinomialKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
