// GPU tests of the NCCL communicator and the CUDA Boxing kernel; they skip with "no CUDA device"
// where there is none. One GPU: a 1-rank NCCL communicator (every collective, the Boxing kernel's
// device-pointer path, argument errors), init timeout and Abort() (a 2-rank group whose second rank
// never comes), and the boxing table on 4 ranks sharing the GPU through host-staged in-process
// communicators. Several GPUs (NcclMultiGpu.*): the boxing table and a collective timeout on NCCL.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "../cuda/cuda_test_util.h"
#include "../unit/boxing_reference.h"
#include "boxing_ranks.h"
#include "base/error.h"
#include "comm/nccl.h"
#include "plan/plan.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

using cuda_test::OpCall;
using cuda_test::RunKernel;

Tensor Iota(DType dt, int64_t n, double scale) {
  Tensor t(dt, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (dt == DType::kFloat32) t.data<float>()[i] = static_cast<float>(scale * (i - n / 2));
    else t.data<int64_t>()[i] = static_cast<int64_t>(scale * i) - 7;
  }
  return t;
}

void ExpectSameBytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.nbytes(), want.nbytes()) << what;
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << what;
}

// On one rank every collective is the identity on its data; these are exact comparisons with the
// input, made after NCCL ran on the device buffers.
TEST(NcclOneRank, EveryCollective) {
  OF_REQUIRE_CUDA_DEVICE();
  auto comm = CreateNcclGroup({0}, 60000)[0];
  cuda::Stream stream(0);
  cuda::StreamScope scope(stream.get());
  const std::vector<int> g{0};
  for (DType dt : {DType::kFloat32, DType::kInt64}) {
    Tensor x = Iota(dt, 1000, 0.25);
    Tensor d = cuda::ToDevice(x, 0, stream.get());
    comm->AllReduceSum(d.raw(), d.numel(), dt, g);
    ExpectSameBytes(cuda::ToHost(d, stream.get()), x, "all-reduce");
    Tensor out = cuda::EmptyDeviceTensor(dt, {1000}, 0, stream.get());
    comm->AllGather(d.raw(), out.raw(), {d.nbytes()}, g);
    ExpectSameBytes(cuda::ToHost(out, stream.get()), x, "all-gather");
    OF_CUDA_CHECK(cudaMemsetAsync(out.raw(), 0, out.nbytes(), stream.get()));
    comm->ReduceScatterSum(d.raw(), out.raw(), {1000}, dt, g);
    ExpectSameBytes(cuda::ToHost(out, stream.get()), x, "reduce-scatter");
    OF_CUDA_CHECK(cudaMemsetAsync(out.raw(), 0, out.nbytes(), stream.get()));
    comm->AllToAll(d.raw(), {d.nbytes()}, out.raw(), {d.nbytes()}, g);
    ExpectSameBytes(cuda::ToHost(out, stream.get()), x, "all-to-all");
    comm->Broadcast(d.raw(), d.nbytes(), 0, g);
    ExpectSameBytes(cuda::ToHost(d, stream.get()), x, "broadcast");
  }
  comm->Barrier(g);
  // Argument errors are reported and leave the communicator usable.
  try {
    comm->Barrier({0, 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("distinct ranks below 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(comm->Send(nullptr, 4, 0), Error);  // no peer on a 1-rank world
  try {
    comm->AllReduceSum(nullptr, 1, DType::kBool, g);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
  comm->Barrier(g);
}

// The CUDA Boxing kernel with a 1-rank NCCL communicator: the collective modes hand device
// pointers to NCCL and must give the input back; the local modes against hand-made expectations.
TEST(NcclOneRank, BoxingKernel) {
  OF_REQUIRE_CUDA_DEVICE();
  auto comm = CreateNcclGroup({0}, 60000)[0];
  RegisterCommunicator("nccl_test/one", comm);
  std::mt19937 rng(1);
  Tensor x = cuda_test::RandomTensor(DType::kFloat32, {5, 3}, rng);
  auto call = [&](const std::string& mode, AttrMap extra, const Shape& out_shape) {
    OpCall c;
    c.op = "Boxing";
    c.domain = kOneflowDomain;
    c.opset = 1;
    c.attrs = std::move(extra);
    // The schema's defaults (RunKernel builds the node without schema resolution).
    for (const char* k : {"axis", "in_axis"})
      if (!c.attrs.has(k)) c.attrs.set(k, Attribute::Int(0));
    if (!c.attrs.has("keep")) c.attrs.set("keep", Attribute::Int(1));
    for (const char* k : {"sizes", "in_sizes", "starts"})
      if (!c.attrs.has(k)) c.attrs.set(k, Attribute::Ints({}));
    c.attrs.set("mode", Attribute::String(mode));
    c.attrs.set("comm", Attribute::String("nccl_test/one"));
    c.attrs.set("group", Attribute::Ints({0}));
    c.inputs = {x};
    c.outputs = {{DType::kFloat32, out_shape}};
    return RunKernel(DeviceType::kCuda, c).at(0);
  };
  AttrMap gather;
  gather.set("axis", Attribute::Int(1));
  gather.set("sizes", Attribute::Ints({3}));
  ExpectSameBytes(call("all_gather", gather, {5, 3}), x, "all_gather");
  ExpectSameBytes(call("all_reduce", {}, {5, 3}), x, "all_reduce");
  AttrMap rs;
  rs.set("axis", Attribute::Int(0));
  rs.set("sizes", Attribute::Ints({5}));
  ExpectSameBytes(call("reduce_scatter", rs, {5, 3}), x, "reduce_scatter");
  AttrMap a2a;
  a2a.set("axis", Attribute::Int(1));
  a2a.set("sizes", Attribute::Ints({3}));
  a2a.set("in_axis", Attribute::Int(0));
  a2a.set("in_sizes", Attribute::Ints({5}));
  ExpectSameBytes(call("all_to_all", a2a, {5, 3}), x, "all_to_all");
  // slice rows 1..3, column 1..2; zero_pad back into [5, 3]; zero_fill without keep.
  AttrMap sl;
  sl.set("starts", Attribute::Ints({1, 1}));
  Tensor s = call("slice", sl, {3, 2});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(s.data<float>()[i * 2 + j], x.data<float>()[(i + 1) * 3 + j + 1]);
  AttrMap zf;
  zf.set("keep", Attribute::Int(0));
  Tensor z = call("zero_fill", zf, {5, 3});
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(z.data<float>()[i], 0.0f);
  UnregisterCommunicator("nccl_test/one");
}

// Rank 0 of a 2-rank world whose rank 1 never comes: the non-blocking init is polled until the
// timeout, the communicator aborted, and the call fails naming rank, group and cause; later calls
// fail with that cause instead of trying again.
TEST(NcclTimeout, InitOfAMissingPeerAbortsAfterTheTimeout) {
  OF_REQUIRE_CUDA_DEVICE();
  auto comm = CreateNcclCommunicator(0, 2, 0, CreateInMemoryStore(), 1500);
  cuda::Stream stream(0);
  cuda::StreamScope scope(stream.get());
  Tensor d = cuda::ToDevice(Iota(DType::kFloat32, 16, 1.0), 0, stream.get());
  const auto t0 = std::chrono::steady_clock::now();
  try {
    comm->AllReduceSum(d.raw(), 16, DType::kFloat32, {0, 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 0: all-reduce on group [0,1] timed out after 1500 ms"), std::string::npos) << m;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 1.4);
  EXPECT_LT(s, 30.0) << "the abort itself must not hang";
  try {
    comm->Barrier({0});
    FAIL() << "no error after the abort";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("was aborted"), std::string::npos) << e.what();
  }
}

TEST(NcclTimeout, AbortFromAnotherThreadStopsAWait) {
  OF_REQUIRE_CUDA_DEVICE();
  auto store = CreateInMemoryStore();
  auto comm = CreateNcclCommunicator(0, 2, 0, store, 120000);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    comm->Abort("rank 1 failed: test");
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::string err;
  try {
    cuda::StreamScope scope(nullptr);
    comm->Barrier({0, 1});
  } catch (const Error& e) {
    err = e.what();
  }
  stopper.join();
  EXPECT_NE(err.find("aborted while"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 1 failed: test"), std::string::npos) << err;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  // The abort is published in the store: a peer's next call fails with rank 0's cause (its own
  // 1-member group needs no NCCL communicator, so sharing the GPU is fine here).
  auto peer = CreateNcclCommunicator(1, 2, 0, store, 120000);
  try {
    peer->Barrier({1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("aborted by rank 0: rank 1 failed: test"), std::string::npos) << e.what();
  }
}

// One rank's boxing graph run node by node with CUDA kernels on its own stream.
Tensor RunBoxingOnCuda(const Graph& g, const Tensor& host_in, int device) {
  cuda::DeviceGuard guard(device);
  cuda::Stream stream(device);
  cuda::StreamScope scope(stream.get());
  std::map<int, Tensor> values;
  values[g.inputs[0]] = cuda::ToDevice(host_in, device, stream.get());
  for (const Node& n : g.nodes) {
    if (n.op_type == "Identity") {
      values[n.outputs[0]] = values[n.inputs[0]];
      continue;
    }
    const KernelDef* def = KernelRegistry::Global().Find(n.domain, n.op_type, DeviceType::kCuda);
    OF_CHECK(def != nullptr, kInternal, "no CUDA kernel for ", n.op_type);
    std::unique_ptr<OpKernel> k = def->factory(KernelInitContext(g, n));
    const TensorType& t = g.values[static_cast<size_t>(n.outputs[0])].type;
    Tensor out = cuda::EmptyDeviceTensor(t.dtype, t.ToShape(), device, stream.get());
    if (out.nbytes()) OF_CUDA_CHECK(cudaMemsetAsync(out.raw(), 0xFF, out.nbytes(), stream.get()));  // poison
    KernelContext ctx(n, cuda_test::Pool());
    ctx.inputs().push_back(&values[n.inputs[0]]);
    ctx.outputs().push_back(&out);
    k->Compute(ctx);
    values[n.outputs[0]] = out;
  }
  return cuda::ToHost(values[g.outputs[0]], stream.get());
}

// The boxing table of tests/unit/sbp_boxing_test.cc on CUDA: `comms[p]` for rank p on `devices[p]`.
void CheckPairOnCuda(const std::vector<std::shared_ptr<Communicator>>& comms, const std::vector<int>& devices,
                     const Placement& pl, const Shape& shape, const NdSbp& from, const NdSbp& to) {
  SCOPED_TRACE(NdSbpToString(from) + " -> " + NdSbpToString(to) + " on " + pl.ToString() + " of " +
               ShapeToString(shape) + " over " + comms[0]->backend());
  boxing_ref::CheckRanks(comms, pl, shape, from, to, "nccl_boxing_test", [&](const Graph& g, const Tensor& in, int p) {
    return RunBoxingOnCuda(g, in, devices[static_cast<size_t>(p)]);
  });
}

void RunTable(const std::function<std::vector<std::shared_ptr<Communicator>>()>& make, const std::vector<int>& devices) {
  Placement one = Placement::Parse("cuda:0-3"), two = Placement::Parse("cuda:[[0,1],[2,3]]");
  for (const Sbp& a : boxing_ref::OneD())
    for (const Sbp& b : boxing_ref::OneD()) {
      CheckPairOnCuda(make(), devices, one, {7, 6}, {a}, {b});
      CheckPairOnCuda(make(), devices, one, {8, 4}, {a}, {b});
    }
  for (const Sbp& a0 : boxing_ref::OneD())
    for (const Sbp& a1 : boxing_ref::OneD())
      for (const Sbp& b0 : boxing_ref::OneD())
        for (const Sbp& b1 : boxing_ref::OneD()) CheckPairOnCuda(make(), devices, two, {7, 5}, {a0, a1}, {b0, b1});
}

// 4 ranks on the one GPU through host-staged in-process communicators: the kernel's device-side
// packing, slicing and padding for every pair of SBPs.
TEST(CudaBoxing, TableOnOneGpuWithStagedCommunicators) {
  OF_REQUIRE_CUDA_DEVICE();
  RunTable([] { return CreateInProcessGroup(4, 60000); }, {0, 0, 0, 0});
}

// The same table over NCCL with one rank per GPU (needs 4 GPUs).
TEST(NcclMultiGpu, BoxingTable) {
  OF_REQUIRE_CUDA_DEVICE();
  if (cuda::DeviceCount() < 4) GTEST_SKIP() << "needs 4 CUDA devices for 4 NCCL ranks, found " << cuda::DeviceCount();
  std::vector<std::shared_ptr<Communicator>> comms = CreateNcclGroup({0, 1, 2, 3}, 60000);
  RunTable([&] { return comms; }, {0, 1, 2, 3});
}

// Two GPUs: rank 1 joins the communicator but never issues the all-reduce; rank 0's collective
// hangs on the device until the timeout aborts it.
TEST(NcclMultiGpu, CollectiveOfAMissingPeerTimesOut) {
  OF_REQUIRE_CUDA_DEVICE();
  if (cuda::DeviceCount() < 2) GTEST_SKIP() << "needs 2 CUDA devices, found " << cuda::DeviceCount();
  auto comms = CreateNcclGroup({0, 1}, 3000);
  std::thread joiner([&] {
    cuda::DeviceGuard guard(1);
    comms[1]->Barrier({0, 1});  // both create the communicator
  });
  {
    cuda::DeviceGuard guard(0);
    comms[0]->Barrier({0, 1});
  }
  joiner.join();
  cuda::DeviceGuard guard(0);
  cuda::Stream stream(0);
  cuda::StreamScope scope(stream.get());
  Tensor d = cuda::ToDevice(Iota(DType::kFloat32, 64, 1.0), 0, stream.get());
  try {
    comms[0]->AllReduceSum(d.raw(), 64, DType::kFloat32, {0, 1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("timed out after 3000 ms waiting for the collective to complete"),
              std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oneflow
