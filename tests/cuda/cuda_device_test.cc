// The CUDA device layer: error mapping (runs everywhere), the behaviour without a device (runs on
// machines without one), and streams, copies, the allocator and OOM on a real device (skipped here).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/cuda_kernels.h"

namespace oneflow {
namespace {

TEST(CudaErrors, StatusMapsToErrorCode) {
  EXPECT_EQ(cuda::CudaErrorCode(cudaErrorMemoryAllocation), ErrorCode::kOutOfMemory);
  EXPECT_EQ(cuda::CudaErrorCode(cudaErrorNoDevice), ErrorCode::kUnsupported);
  EXPECT_EQ(cuda::CudaErrorCode(cudaErrorInsufficientDriver), ErrorCode::kUnsupported);
  EXPECT_EQ(cuda::CudaErrorCode(cudaErrorInvalidDevice), ErrorCode::kUnsupported);
  EXPECT_EQ(cuda::CudaErrorCode(cudaErrorIllegalAddress), ErrorCode::kRuntime);
  EXPECT_EQ(cuda::CudaErrorCode(cudaErrorLaunchFailure), ErrorCode::kRuntime);
}

TEST(CudaErrors, MessageNamesCallAndCudaDescription) {
  try {
    OF_CUDA_CHECK(cudaErrorMemoryAllocation);  // a status stands in for a failing call
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(m.find("cudaErrorMemoryAllocation"), std::string::npos) << m;
    EXPECT_NE(m.find(cudaGetErrorString(cudaErrorMemoryAllocation)), std::string::npos) << m;
    EXPECT_NE(m.find("cuda_device_test.cc"), std::string::npos) << m;
  }
  try {
    OF_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos) << e.what();
  }
}

// The per-element comparison every GPU test relies on (cuda_test_util.h), checked on the host: it
// must flag one bad element among many, NaN where the reference has none (an unwritten, poisoned
// output), inf against finite, any integer difference, a shape mismatch, and an L2 excess.
TEST(CudaErrors, ElementsCloseFlagsEveryKindOfMismatch) {
  using cuda_test::ElementsClose;
  using cuda_test::Tol;
  auto f32 = [](std::vector<float> v) {
    Tensor t(DType::kFloat32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<float>());
    return t;
  };
  const Tol tight = cuda_test::DefaultTol(DType::kFloat32);
  const Tensor want = f32({1.0f, -2.0f, 3.0f, 0.0f, 1000.0f});
  EXPECT_TRUE(ElementsClose(want, want, cuda_test::ExactTol()));
  EXPECT_TRUE(ElementsClose(f32({1.0f, -2.0f, 3.0f, 1e-6f, 1000.001f}), want, tight));
  // One element off among five: the count and the index are in the message.
  const ::testing::AssertionResult one_bad =
      ElementsClose(f32({1.0f, -2.0f, 3.001f, 0.0f, 10.0f}), f32({1.0f, -2.0f, 3.0f, 0.0f, 10.0f}), tight);
  EXPECT_FALSE(one_bad);
  EXPECT_NE(std::string(one_bad.message()).find("1 of 5 elements"), std::string::npos) << one_bad.message();
  EXPECT_NE(std::string(one_bad.message()).find("[2]"), std::string::npos) << one_bad.message();
  // NaN: only where the reference has NaN. Poisoned (all bits set) output bytes are NaN.
  const float nan = std::nanf("");
  EXPECT_FALSE(ElementsClose(f32({1.0f, -2.0f, nan, 0.0f, 1000.0f}), want, tight));
  EXPECT_TRUE(ElementsClose(f32({nan, 2.0f}), f32({nan, 2.0f}), tight));
  EXPECT_FALSE(ElementsClose(f32({1.0f, 2.0f}), f32({nan, 2.0f}), tight));
  Tensor poisoned = f32({0.0f, 0.0f, 0.0f, 0.0f, 0.0f});
  cuda_test::PoisonHost(poisoned);
  EXPECT_FALSE(ElementsClose(poisoned, want, Tol{1e9, 1e9, 0.0, 0.0}));
  // inf must match exactly; inf against a finite reference fails whatever the tolerance.
  const float inf = INFINITY;
  EXPECT_TRUE(ElementsClose(f32({inf, -inf}), f32({inf, -inf}), tight));
  EXPECT_FALSE(ElementsClose(f32({inf, 1.0f}), f32({3e38f, 1.0f}), Tol{1.0, 1.0, 0.0, 0.0}));
  // Integers are exact whatever the tolerance; beyond 2^53 too.
  Tensor ia(DType::kInt64, {2}), ib(DType::kInt64, {2});
  ia.data<int64_t>()[0] = ib.data<int64_t>()[0] = 5;
  ia.data<int64_t>()[1] = (int64_t{1} << 60) + 1;
  ib.data<int64_t>()[1] = int64_t{1} << 60;
  EXPECT_FALSE(ElementsClose(ia, ib, Tol{1.0, 1.0, 1.0, 0.0}));
  EXPECT_TRUE(ElementsClose(ib, ib, Tol{}));
  // Shapes must agree.
  EXPECT_FALSE(ElementsClose(f32({1.0f, 2.0f}), f32({1.0f, 2.0f, 3.0f}), Tol{1.0, 1.0, 1.0, 0.0}));
  // atol + atol_rms * rms(want) + rtol * |want|: a near-zero element of a large-magnitude tensor
  // may carry an absolute error proportional to the tensor's scale.
  EXPECT_TRUE(ElementsClose(f32({100.0f, 0.001f}), f32({100.0f, 0.0f}), Tol{1e-5, 0.0, 2e-5, 0.0}));
  EXPECT_FALSE(ElementsClose(f32({100.0f, 0.01f}), f32({100.0f, 0.0f}), Tol{1e-5, 0.0, 2e-5, 0.0}));
  // Every element within its bound, but the whole tensor off by more than rel_l2 allows.
  EXPECT_TRUE(ElementsClose(f32({1.005f, 2.01f}), f32({1.0f, 2.0f}), Tol{1e-2, 0.0, 0.0, 0.0}));
  EXPECT_FALSE(ElementsClose(f32({1.005f, 2.01f}), f32({1.0f, 2.0f}), Tol{1e-2, 0.0, 0.0, 1e-3}));
  // A half-precision result against its f32 reference: rounding passes, 1% does not.
  const Tensor ref = f32({0.1f, -1.7f, 3.3f, 1000.0f});
  EXPECT_TRUE(ElementsClose(cuda_test::CastHost(ref, DType::kFloat16), ref, cuda_test::DefaultTol(DType::kFloat16)));
  EXPECT_TRUE(ElementsClose(cuda_test::CastHost(ref, DType::kBFloat16), ref, cuda_test::DefaultTol(DType::kBFloat16)));
  EXPECT_FALSE(ElementsClose(cuda_test::CastHost(f32({0.101f, -1.7f, 3.3f, 1010.0f}), DType::kFloat16), ref,
                             cuda_test::DefaultTol(DType::kFloat16)));
}

// Without a device every entry point fails with kUnsupported "no CUDA device: <why>", never aborts.
TEST(CudaNoDevice, EntryPointsReportUnsupported) {
  std::string why;
  if (cuda::DeviceCount(&why) > 0) GTEST_SKIP() << "a CUDA device is present: this test is for machines without one";
  EXPECT_FALSE(why.empty());
  auto expect_unsupported = [](const char* what, auto&& fn) {
    try {
      fn();
      ADD_FAILURE() << what << " did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << what << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << what << ": " << e.what();
    }
  };
  expect_unsupported("RequireDevice", [] { cuda::RequireDevice(0); });
  expect_unsupported("GetDeviceProps", [] { cuda::GetDeviceProps(0); });
  expect_unsupported("DeviceAllocator", [] { cuda::DeviceAllocator(0); });
  expect_unsupported("EmptyDeviceTensor", [] { cuda::EmptyDeviceTensor(DType::kFloat32, {4}, 0, nullptr); });
  Tensor host(DType::kFloat32, {4});
  expect_unsupported("ToDevice", [&] { cuda::ToDevice(host, 0, nullptr); });
  // Streams and events go straight to the runtime: an Error of some code, not an abort.
  EXPECT_THROW(cuda::Stream(0), Error);
}

TEST(CudaRegistry, KernelsForTheCoreOps) {
  for (const char* op : {"MatMul", "Gemm", "Add", "Mul", "Relu", "Cast", "ReduceSum", "ReduceMean", "Softmax",
                         "LogSoftmax", "LayerNormalization", "Transpose"})
    EXPECT_NE(KernelRegistry::Global().Find("", op, DeviceType::kCuda), nullptr) << op;
  EXPECT_NE(KernelRegistry::Global().Find("ai.oneflow", "FusedMatMul", DeviceType::kCuda), nullptr);
}

TEST(CudaDevice, RoundTripThroughPinnedStaging) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(1);
  cuda::Stream stream(0);
  for (int64_t n : {1, 1000, 1 << 20}) {
    Tensor h = cuda_test::RandomTensor(DType::kFloat32, {n}, rng);
    Tensor d = cuda::ToDevice(h, 0, stream.get());
    Tensor back = cuda::ToHost(d, stream.get());
    EXPECT_EQ(std::memcmp(back.raw(), h.raw(), h.nbytes()), 0) << n;
  }
  // Pinned tensor + CopyAsync + event.
  Tensor pinned = cuda::EmptyPinnedTensor(DType::kFloat32, {256});
  for (int i = 0; i < 256; ++i) pinned.data<float>()[i] = static_cast<float>(i) * 0.5f;
  Tensor d = cuda::EmptyDeviceTensor(DType::kFloat32, {256}, 0, stream.get());
  OF_CUDA_CHECK(cudaMemsetAsync(d.raw(), 0xFF, d.nbytes(), stream.get()));  // poisoned: a skipped copy shows
  cuda::CopyAsync(d, pinned, stream.get());
  Tensor out = cuda::EmptyPinnedTensor(DType::kFloat32, {256});
  cuda_test::PoisonHost(out);
  cuda::CopyAsync(out, d, stream.get());
  cuda::Event done;
  done.Record(stream.get());
  done.Synchronize();
  EXPECT_TRUE(done.Done());
  EXPECT_EQ(std::memcmp(out.raw(), pinned.raw(), pinned.nbytes()), 0);
}

TEST(CudaDevice, AllocatorReusesAndReportsOutOfMemory) {
  OF_REQUIRE_CUDA_DEVICE();
  cuda::Stream stream(0);
  CachingAllocator& alloc = cuda::DeviceAllocator(0);
  const size_t hits = alloc.stats().cache_hits;
  void* first = nullptr;
  {
    Tensor t = cuda::EmptyDeviceTensor(DType::kFloat32, {1 << 20}, 0, stream.get());
    first = t.raw();
  }
  Tensor again = cuda::EmptyDeviceTensor(DType::kFloat32, {1 << 20}, 0, stream.get());
  EXPECT_EQ(again.raw(), first);
  EXPECT_EQ(alloc.stats().cache_hits, hits + 1);
  try {
    cuda::EmptyDeviceTensor(DType::kFloat32, {int64_t{1} << 48}, 0, stream.get());  // 1 PiB
    FAIL() << "expected kOutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
  }
  // The device stays usable after the failure.
  Tensor h(DType::kFloat32, {8});
  EXPECT_NO_THROW(cuda::ToHost(cuda::ToDevice(h, 0, stream.get()), stream.get()));
}

TEST(CudaDevice, PropsAndTimingEvents) {
  OF_REQUIRE_CUDA_DEVICE();
  const cuda::DeviceProps p = cuda::GetDeviceProps(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_GT(p.total_memory, size_t{0});
  cuda::Stream stream(0);
  cuda::Event a(true), b(true);
  a.Record(stream.get());
  b.Record(stream.get());
  b.Synchronize();
  EXPECT_GE(b.ElapsedMs(a), 0.0f);
  EXPECT_THROW(cuda::RequireDevice(cuda::DeviceCount()), Error);  // one past the last device
}

}  // namespace
}  // namespace oneflow
