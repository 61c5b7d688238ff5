// The CUDA Boxing kernel's logic without a GPU: the shared Boxing steps run over an emulated device
// memory (host bytes behind the device interface) for the whole boxing table, once with host
// communicators (the staged path: every collective's data goes through ToHost/FromHost) and once
// with communicators that take "device" memory (the NCCL path: pointers handed over directly).
// Checked against slicing of the logical tensor (tests/unit/boxing_reference.h).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>

#include "../unit/boxing_reference.h"
#include "boxing_ranks.h"
#include "base/error.h"
#include "comm/communicator.h"
#include "plan/plan.h"
#include "graph/op_schema.h"
#include "kernels/boxing_steps.h"

namespace oneflow {
namespace {

// Host bytes that claim to be device memory; counts the staging copies.
class EmulatedDeviceMemory final : public HostBoxingMemory {
 public:
  Communicator::Memory kind() const override { return Communicator::Memory::kCuda; }
  void ToHost(void* host, const void* src, size_t bytes) override {
    ++staged;
    HostBoxingMemory::ToHost(host, src, bytes);
  }
  void FromHost(void* dst, const void* host, size_t bytes) override {
    ++staged;
    HostBoxingMemory::FromHost(dst, host, bytes);
  }
  static inline std::atomic<int> staged{0};
};

// An in-process communicator that says it takes device memory, as NCCL does.
class DeviceClaimingComm final : public Communicator {
 public:
  explicit DeviceClaimingComm(std::shared_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  std::string backend() const override { return "device-claiming"; }
  Memory memory() const override { return Memory::kCuda; }
  int device() const override { return 0; }
  void AllReduceSum(void* b, int64_t n, DType t, const std::vector<int>& g) override { inner_->AllReduceSum(b, n, t, g); }
  void AllGather(const void* s, void* r, const std::vector<size_t>& z, const std::vector<int>& g) override {
    inner_->AllGather(s, r, z, g);
  }
  void ReduceScatterSum(const void* s, void* r, const std::vector<int64_t>& c, DType t,
                        const std::vector<int>& g) override {
    inner_->ReduceScatterSum(s, r, c, t, g);
  }
  void AllToAll(const void* s, const std::vector<size_t>& ss, void* r, const std::vector<size_t>& rs,
                const std::vector<int>& g) override {
    inner_->AllToAll(s, ss, r, rs, g);
  }
  void Broadcast(void* b, size_t n, int root, const std::vector<int>& g) override { inner_->Broadcast(b, n, root, g); }
  void Send(const void* b, size_t n, int peer) override { inner_->Send(b, n, peer); }
  void Recv(void* b, size_t n, int peer) override { inner_->Recv(b, n, peer); }
  void Barrier(const std::vector<int>& g) override { inner_->Barrier(g); }
  void Abort(const std::string& why) override { inner_->Abort(why); }

 private:
  std::shared_ptr<Communicator> inner_;
};

// One rank's boxing graph, node by node, through RunBoxing on emulated device memory; outputs
// are poisoned with NaN first so an unwritten element shows.
Tensor RunEmulated(const Graph& g, const Tensor& in) {
  std::map<int, Tensor> values;
  values[g.inputs[0]] = in;
  EmulatedDeviceMemory mem;
  for (const Node& n : g.nodes) {
    if (n.op_type == "Identity") {
      values[n.outputs[0]] = values[n.inputs[0]];
      continue;
    }
    OF_CHECK(n.op_type == "Boxing", kInternal, "unexpected node ", n.op_type);
    BoxingAttrs a{KernelInitContext(g, n)};
    const TensorType& t = g.values[static_cast<size_t>(n.outputs[0])].type;
    Tensor out(t.dtype, t.ToShape());
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = std::nanf("");
    RunBoxing(a, values[n.inputs[0]], out, mem);
    values[n.outputs[0]] = out;
  }
  return values[g.outputs[0]];
}

void CheckPair(bool device_comms, const Placement& pl, const Shape& shape, const NdSbp& from, const NdSbp& to) {
  SCOPED_TRACE(NdSbpToString(from) + " -> " + NdSbpToString(to) + " on " + pl.ToString() + " of " +
               ShapeToString(shape) + (device_comms ? " (device communicators)" : " (staged)"));
  std::vector<std::shared_ptr<Communicator>> comms = CreateInProcessGroup(pl.size(), 20000);
  if (device_comms)
    for (auto& c : comms) c = std::make_shared<DeviceClaimingComm>(c);
  boxing_ref::CheckRanks(comms, pl, shape, from, to, "boxing_steps_test",
                         [](const Graph& g, const Tensor& in, int) { return RunEmulated(g, in); });
}

void RunTable(bool device_comms) {
  Placement one = Placement::Parse("cuda:0-3"), two = Placement::Parse("cuda:[[0,1],[2,3]]");
  for (const Sbp& a : boxing_ref::OneD())
    for (const Sbp& b : boxing_ref::OneD()) {
      CheckPair(device_comms, one, {7, 6}, {a}, {b});
      CheckPair(device_comms, one, {8, 4}, {a}, {b});
    }
  std::vector<NdSbp> all;
  for (const Sbp& a : boxing_ref::OneD())
    for (const Sbp& b : boxing_ref::OneD()) all.push_back({a, b});
  for (const NdSbp& from : all)
    for (const NdSbp& to : all) CheckPair(device_comms, two, {7, 5}, from, to);
}

TEST(BoxingSteps, TableOnEmulatedDeviceWithStagedHostCommunicators) {
  EmulatedDeviceMemory::staged = 0;
  RunTable(false);
  EXPECT_GT(EmulatedDeviceMemory::staged.load(), 0) << "host communicators must see staged copies";
}

TEST(BoxingSteps, TableOnEmulatedDeviceWithDeviceCommunicators) {
  EmulatedDeviceMemory::staged = 0;
  RunTable(true);
  EXPECT_EQ(EmulatedDeviceMemory::staged.load(), 0) << "device communicators get device pointers directly";
}

// Host tensors with a communicator that needs device memory: an error, never host pointers handed over.
TEST(BoxingSteps, HostDataWithADeviceCommunicatorIsAnError) {
  RegisterCommunicator("boxing_steps_test/host", std::make_shared<DeviceClaimingComm>(CreateInProcessGroup(1)[0]));
  Graph g;
  Node n;
  n.op_type = "Boxing";
  n.domain = kOneflowDomain;
  n.attrs.set("mode", Attribute::String("all_reduce"));
  n.attrs.set("comm", Attribute::String("boxing_steps_test/host"));
  n.attrs.set("group", Attribute::Ints({0}));
  for (const char* k : {"axis", "in_axis", "keep"}) n.attrs.set(k, Attribute::Int(0));
  for (const char* k : {"sizes", "in_sizes", "starts"}) n.attrs.set(k, Attribute::Ints({}));
  BoxingAttrs a{KernelInitContext(g, n)};
  UnregisterCommunicator("boxing_steps_test/host");
  Tensor x(DType::kFloat32, {4, 2}), y(DType::kFloat32, {4, 2});
  HostBoxingMemory mem;
  try {
    RunBoxing(a, x, y, mem);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("needs device memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oneflow
