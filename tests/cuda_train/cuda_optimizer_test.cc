// The fused multi-tensor CUDA optimizer (train/optimizer_cuda.h) against the CPU ApplyUpdate and
// GlobalGradientNorm on the same parameters: SGD (plain, momentum with dampening, Nesterov with
// weight decay), Adam with L2 and AdamW, over several steps, with clipping and parameters whose
// sizes straddle the chunk size. Skips with "no CUDA device" where there is none.
#include <gtest/gtest.h>

#include <cmath>

#include "../cuda/cuda_test_util.h"
#include "train/optimizer_cuda.h"

namespace oneflow::train {
namespace {

struct Slots {
  std::vector<ParamSlot> slots;
  std::vector<ParamSlot*> Ptrs() {
    std::vector<ParamSlot*> p;
    for (ParamSlot& s : slots) p.push_back(&s);
    return p;
  }
};

Slots MakeHost(const OptimizerConfig& c, const std::vector<int64_t>& sizes, std::mt19937& rng) {
  Slots h;
  for (int64_t n : sizes) {
    ParamSlot s;
    s.value = cuda_test::RandomTensor(DType::kFloat32, {n}, rng);
    s.grad = cuda_test::RandomTensor(DType::kFloat32, {n}, rng, -0.5f, 0.5f);
    for (size_t k = 0; k < OptimizerStateNames(c).size(); ++k) s.state.push_back(Tensor(DType::kFloat32, {n}));
    h.slots.push_back(std::move(s));
  }
  return h;
}

Slots ToDevice(const Slots& host, cudaStream_t st) {
  Slots d;
  for (const ParamSlot& s : host.slots) {
    ParamSlot x;
    x.value = cuda::ToDevice(s.value, 0, st);
    x.grad = cuda::ToDevice(s.grad, 0, st);
    for (const Tensor& t : s.state) x.state.push_back(cuda::ToDevice(t, 0, st));
    d.slots.push_back(std::move(x));
  }
  return d;
}

// Per element: |a - b| <= 1e-5 |b| + 2e-6 max|b|. The absolute term is a few float32 ulps at the
// tensor's own scale: the device kernel contracts a*b+c into FMAs (nvcc's default) where the CPU
// rounds twice, and over several steps those ulps land on elements that pass near zero (a momentum
// buffer of random gradients), where a purely relative bound would call them wrong. A wrong
// formula is off by the size of a term, orders of magnitude above this.
::testing::AssertionResult Close(const Tensor& got, const Tensor& want) {
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::fabs(double{want.data<float>()[i]}));
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double x = got.data<float>()[i], y = want.data<float>()[i];
    if (!(std::fabs(x - y) <= 1e-5 * std::fabs(y) + 2e-6 * scale)) {  // NaN fails too
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << want.numel() << " elements differ; first at " << first
                                       << ": got " << got.data<float>()[first] << ", want " << want.data<float>()[first]
                                       << " (scale " << scale << ")";
}

TEST(CudaOptimizer, MatchesCpuApplyUpdate) {
  OF_REQUIRE_CUDA_DEVICE();
  std::vector<OptimizerConfig> configs(5);
  configs[0].kind = OptimizerKind::kSgd;
  configs[0].lr = 0.1f;
  configs[1].kind = OptimizerKind::kSgd;
  configs[1].momentum = 0.9f;
  configs[1].dampening = 0.1f;
  configs[2].kind = OptimizerKind::kSgd;
  configs[2].momentum = 0.9f;
  configs[2].nesterov = true;
  configs[2].weight_decay = 1e-2f;
  configs[3].kind = OptimizerKind::kAdam;
  configs[3].weight_decay = 1e-2f;
  configs[4].kind = OptimizerKind::kAdamW;
  configs[4].weight_decay = 0.1f;
  configs[4].lr = 3e-3f;
  const std::vector<int64_t> sizes = {1, 1000, 65536, 65537 + 3, 200000};
  ThreadPool pool(2);
  for (size_t k = 0; k < configs.size(); ++k) {
    std::mt19937 rng(static_cast<uint32_t>(40 + k));
    const OptimizerConfig& c = configs[k];
    Slots host = MakeHost(c, sizes, rng);
    cuda::Stream stream(0);
    Slots dev = ToDevice(host, stream.get());
    CudaMultiTensorOptimizer opt(c);
    for (int64_t step = 0; step < 4; ++step) {
      const float lr = c.lr * (1.0f - 0.1f * static_cast<float>(step));
      const float clip = step == 2 ? 0.25f : 1.0f;
      ApplyUpdate(c, host.Ptrs(), lr, clip, step, pool);
      opt.ApplyUpdate(dev.Ptrs(), lr, clip, step, stream.get());
      // Fresh gradients for the next step, the same on both sides.
      for (size_t i = 0; i < host.slots.size(); ++i) {
        host.slots[i].grad = cuda_test::RandomTensor(DType::kFloat32, host.slots[i].grad.shape(), rng, -0.5f, 0.5f);
        dev.slots[i].grad = cuda::ToDevice(host.slots[i].grad, 0, stream.get());
      }
    }
    for (size_t i = 0; i < host.slots.size(); ++i) {
      // The same scalars and operations: equal up to FMA contraction on the device (see Close).
      EXPECT_TRUE(Close(cuda::ToHost(dev.slots[i].value, stream.get()), host.slots[i].value))
          << OptimizerKindName(c.kind) << " config " << k << " param " << i;
      for (size_t j = 0; j < host.slots[i].state.size(); ++j)
        EXPECT_TRUE(Close(cuda::ToHost(dev.slots[i].state[j], stream.get()), host.slots[i].state[j]))
            << "state " << j << " config " << k << " param " << i;
    }
  }
}

TEST(CudaOptimizer, GradientNormMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(50);
  OptimizerConfig c;
  Slots host = MakeHost(c, {3, 70000, 131072, 5}, rng);
  cuda::Stream stream(0);
  Slots dev = ToDevice(host, stream.get());
  CudaMultiTensorOptimizer opt(c);
  ThreadPool pool(2);
  const GradientNorm want = GlobalGradientNorm(host.Ptrs(), pool);
  const GradientNorm got = opt.GlobalGradientNorm(dev.Ptrs(), stream.get());
  EXPECT_TRUE(got.finite);
  EXPECT_NEAR(got.norm, want.norm, 1e-12 * want.norm);  // both sum in double, in different orders
  // NaN in one gradient makes the norm non-finite.
  host.slots[1].grad.data<float>()[12345] = NAN;
  dev.slots[1].grad = cuda::ToDevice(host.slots[1].grad, 0, stream.get());
  EXPECT_FALSE(opt.GlobalGradientNorm(dev.Ptrs(), stream.get()).finite);
}

TEST(CudaOptimizer, RejectsMismatchedSlots) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(51);
  OptimizerConfig c;  // Adam: two state tensors
  Slots host = MakeHost(c, {10}, rng);
  host.slots[0].state.pop_back();
  cuda::Stream stream(0);
  Slots dev = ToDevice(host, stream.get());
  CudaMultiTensorOptimizer opt(c);
  try {
    opt.ApplyUpdate(dev.Ptrs(), 1e-3f, 1.0f, 0, stream.get());
    FAIL() << "accepted a slot with one state tensor for Adam";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace oneflow::train
