// CPU kernels of the random ops (graph/ops/random.cc). Each node owns a Mersenne Twister seeded once,
// at kernel creation; runs may overlap, so draws take a lock (a run's draws are consecutive, and
// which run gets which stretch of the stream follows the order they take the lock).
#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>
#include <type_traits>
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

// The real type draws are made in for elements of type T: double for double, float otherwise (a
// float draw takes one 32-bit word of the generator, a double two).
template <typename T>
using DrawType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Fills the output with draws of Dist<R> (a std:: real distribution with parameters a, b), R the
// output's draw type; the Like ops take the shape and dtype of an input, the others from attributes,
// which inference has already applied.
template <template <typename> class Dist>
class DrawKernel final : public RandomKernelBase {
 public:
  DrawKernel(const KernelInitContext& c, double a, double b) : RandomKernelBase(c), a_(a), b_(b) {}
  void Compute(KernelContext& ctx) override {
    Tensor& out = ctx.output(0);
    DispatchFloating(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using R = DrawType<T>;
      T* dst = out.data<T>();
      const int64_t n = out.numel();
      Draw([&](std::mt19937& e) {
        Dist<R> dist(static_cast<R>(a_), static_cast<R>(b_));
        for (int64_t i = 0; i < n; ++i) dst[i] = CastFromDouble<T>(static_cast<double>(dist(e)));
      });
    });
  }

 private:
  double a_, b_;
};

// RandomNormal, RandomNormalLike: N(mean, scale^2).
std::unique_ptr<OpKernel> MakeNormal(const KernelInitContext& c) {
  return std::make_unique<DrawKernel<std::normal_distribution>>(c, c.attrs().GetFloat("mean"),
                                                                c.attrs().GetFloat("scale"));
}
ONEFLOW_KERNEL_FACTORY(RandomNormal, DeviceType::kCpu, MakeNormal);
ONEFLOW_KERNEL_FACTORY(RandomNormalLike, DeviceType::kCpu, MakeNormal);

// RandomUniform, RandomUniformLike: U[low, high).
std::unique_ptr<OpKernel> MakeUniform(const KernelInitContext& c) {
  const double low = c.attrs().GetFloat("low"), high = c.attrs().GetFloat("high");
  OF_CHECK(std::isfinite(low) && std::isfinite(high) && low <= high, kInvalidModel, c.node().Describe(),
           ": low (", low, ") and high (", high, ") must be finite with low <= high");
  return std::make_unique<DrawKernel<std::uniform_real_distribution>>(c, low, high);
}
ONEFLOW_KERNEL_FACTORY(RandomUniform, DeviceType::kCpu, MakeUniform);
ONEFLOW_KERNEL_FACTORY(RandomUniformLike, DeviceType::kCpu, MakeUniform);

class BernoulliKernel final : public RandomKernelBase {
 public:
  using RandomKernelBase::RandomKernelBase;
  void Compute(KernelContext& ctx) override {
    const Tensor& p = ctx.input(0);
    const int64_t n = p.numel();
    // 1 where a draw of U[0, 1) falls below the probability, in the probabilities' draw type.
    std::vector<char> ones(static_cast<size_t>(n));
    DispatchFloating(p.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using R = DrawType<T>;
      std::vector<R> probs(static_cast<size_t>(n));
      const T* src = p.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        const R v = static_cast<R>(CastToDouble<T>(src[i]));
        OF_CHECK(v >= R(0) && v <= R(1), kInvalidArgument, ctx.node_desc(), ": probability ", i, " is ", v,
                 "; it must be in [0, 1]");
        probs[static_cast<size_t>(i)] = v;
      }
      Draw([&](std::mt19937& e) {
        std::uniform_real_distribution<R> dist(R(0), R(1));
        for (size_t i = 0; i < probs.size(); ++i) ones[i] = dist(e) < probs[i];
      });
    });
    Tensor& out = ctx.output(0);
    DispatchAll(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = out.data<T>();
      for (size_t i = 0; i < ones.size(); ++i) dst[i] = CastFromDouble<T>(ones[i] ? 1.0 : 0.0);
    });
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
