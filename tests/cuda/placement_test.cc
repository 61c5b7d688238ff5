// Device placement (engine/device_placement.h), decided without a device: which nodes fall back to
// the CPU, which values the host reads for shape inference, and where the copies go. Built with or
// without CUDA; the last test checks the placement against the real CUDA kernel registry.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "engine/device_placement.h"
#include "engine/session.h"
#include "../graph_builder.h"

namespace oneflow {
namespace {

struct Builder : test_util::GraphBuilder {
  // Index of the node producing value `v`.
  size_t Producer(int v) const {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int o : g.nodes[i].outputs)
        if (o == v) return i;
    ADD_FAILURE() << "no producer for value " << v;
    return 0;
  }
};

using test_util::Ints;

std::function<bool(const Node&)> DeviceOps(std::set<std::string> ops) {
  return [ops](const Node& n) { return ops.count(n.op_type) != 0; };
}

// Step index of node `ni` in the placement's order.
size_t StepOf(const DevicePlacement& p, size_t ni) {
  for (size_t s = 0; s < p.order.size(); ++s)
    if (static_cast<size_t>(p.order[s]) == ni) return s;
  ADD_FAILURE() << "node " << ni << " not in the order";
  return 0;
}

TEST(CudaPlacement, FallbackNodeGetsCopiesBothWays) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{2, 4}));
  const int w = b.Const("w", Tensor(DType::kFloat32, Shape{4, 3}));
  const int mm = b.Node("MatMul", {x, w});
  const int relu = b.Node("Relu", {mm});
  const int floor = b.Node("Floor", {relu});  // no "device kernel": CPU fallback
  const int exp = b.Node("Exp", {floor});
  b.g.outputs = {exp};
  PrepareGraph(b.g);
  const DevicePlacement p = PlaceGraph(b.g, DeviceOps({"MatMul", "Relu", "Exp"}));

  EXPECT_EQ(p.node_device[b.Producer(mm)], DeviceType::kCuda);
  EXPECT_EQ(p.node_device[b.Producer(relu)], DeviceType::kCuda);
  EXPECT_EQ(p.node_device[b.Producer(floor)], DeviceType::kCpu);
  EXPECT_EQ(p.node_device[b.Producer(exp)], DeviceType::kCuda);
  EXPECT_EQ(p.num_fallback_nodes(), 1);
  // The feed goes up before MatMul; the constant was uploaded at creation (no per-run copy);
  // Relu's result comes down for Floor and Floor's goes back up for Exp.
  EXPECT_EQ(p.transfers[StepOf(p, b.Producer(mm))], (std::vector<DeviceCopy>{{x, false}}));
  EXPECT_EQ(p.transfers[StepOf(p, b.Producer(relu))], std::vector<DeviceCopy>{});
  EXPECT_EQ(p.transfers[StepOf(p, b.Producer(floor))], (std::vector<DeviceCopy>{{relu, true}}));
  EXPECT_EQ(p.transfers[StepOf(p, b.Producer(exp))], (std::vector<DeviceCopy>{{floor, false}}));
  EXPECT_TRUE(p.needed_on_device[static_cast<size_t>(w)]);
  EXPECT_FALSE(p.needed_on_host[static_cast<size_t>(w)]);
  EXPECT_TRUE(p.produced_on_device[static_cast<size_t>(relu)]);
  EXPECT_FALSE(p.produced_on_device[static_cast<size_t>(floor)]);
  EXPECT_TRUE(p.host_reads_computed_values(b.g));  // Floor reads Relu's result on the host
}

TEST(CudaPlacement, AllOnDeviceHasNoCopiesButTheFeeds) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{2, 4}));
  const int y = b.Node("Relu", {b.Node("Exp", {x})});
  b.g.outputs = {y};
  PrepareGraph(b.g);
  const DevicePlacement p = PlaceGraph(b.g, DeviceOps({"Relu", "Exp"}));
  EXPECT_EQ(p.num_fallback_nodes(), 0);
  size_t copies = 0;
  for (const auto& t : p.transfers) copies += t.size();
  EXPECT_EQ(copies, 1u);  // the feed, once
  EXPECT_FALSE(p.host_reads_computed_values(b.g));
}

// Shape -> Gather -> Concat computes a Reshape target: the integer chain stays on the CPU even
// where a device kernel exists (Gather here), Shape reads no data (no copy of x), and the Reshape
// (a view, on the device) reads the shape on the host without a copy to the device.
TEST(CudaPlacement, ComputedShapeStaysOnTheHost) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, {Dim::Symbol("batch"), Dim::Known(4), Dim::Known(2)}));
  const int relu = b.Node("Relu", {x});
  const int shape = b.Node("Shape", {x});
  const int batch = b.Node("Gather", {shape, b.Const("zero", Ints({0}))});
  AttrMap axis0;
  axis0.set("axis", Attribute::Int(0));
  const int target = b.Node("Concat", {batch, b.Const("eight", Ints({8}))}, axis0);
  const int reshaped = b.Node("Reshape", {relu, target});
  const int y = b.Node("Exp", {reshaped});
  b.g.outputs = {y};
  PrepareGraph(b.g);
  const DevicePlacement p = PlaceGraph(b.g, DeviceOps({"Relu", "Gather", "Concat", "Reshape", "Exp"}));

  const size_t shape_node = b.Producer(shape), gather = b.Producer(batch), concat = b.Producer(target),
               reshape = b.Producer(reshaped);
  EXPECT_EQ(p.node_device[shape_node], DeviceType::kCpu);
  EXPECT_EQ(p.node_device[gather], DeviceType::kCpu);
  EXPECT_EQ(p.node_device[concat], DeviceType::kCpu);
  EXPECT_EQ(p.node_device[reshape], DeviceType::kCuda);
  EXPECT_EQ(p.node_device[b.Producer(relu)], DeviceType::kCuda);
  EXPECT_TRUE(p.data_free_input[shape_node][0]);
  EXPECT_TRUE(p.host_read_input[reshape][1]);
  EXPECT_FALSE(p.host_read_input[reshape][0]);
  EXPECT_TRUE(p.needed_on_host[static_cast<size_t>(target)]);
  EXPECT_FALSE(p.needed_on_device[static_cast<size_t>(target)]);
  EXPECT_FALSE(p.needed_on_host[static_cast<size_t>(x)]);  // Shape reads only x's shape
  for (size_t s = 0; s < p.transfers.size(); ++s)
    for (const DeviceCopy& c : p.transfers[s]) {
      EXPECT_FALSE(c.value == target) << "the computed shape was copied at step " << s;
      EXPECT_FALSE(c.value == x && c.to_host) << "x was copied to the host at step " << s;
    }
  EXPECT_TRUE(p.host_reads_computed_values(b.g));  // so no CUDA graph for this one
}

TEST(CudaPlacement, ShapeInputsFollowOnnxSemantics) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{2, 6}));
  const int starts = b.Input("starts", TensorType::Of(DType::kInt64, Shape{1}));
  const int ends = b.Input("ends", TensorType::Of(DType::kInt64, Shape{1}));
  const int sl = b.Node("Slice", {x, starts, ends});
  const int axes = b.Const("axes", Ints({1}));
  const int red = b.Node("ReduceSum", {sl, axes});
  b.g.outputs = {red};
  PrepareGraph(b.g);
  EXPECT_EQ(ShapeInputPositions(b.g, b.g.nodes[b.Producer(sl)]), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(ShapeInputPositions(b.g, b.g.nodes[b.Producer(red)]), (std::vector<size_t>{1}));
  const DevicePlacement p = PlaceGraph(b.g, DeviceOps({"Slice", "ReduceSum"}));
  EXPECT_TRUE(p.needed_on_host[static_cast<size_t>(starts)]);
  EXPECT_FALSE(p.needed_on_device[static_cast<size_t>(starts)]);
  EXPECT_TRUE(p.needed_on_device[static_cast<size_t>(x)]);
  // The feeds Slice reads on the host make every run depend on host data: not capturable.
  EXPECT_TRUE(p.host_reads_computed_values(b.g));
}

// The device options of a CPU session: index 0 only, and no device tensors.
TEST(DeviceSessionOptions, CpuSessionRefusesDeviceIo) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{2, 3}));
  b.g.outputs = {b.Node("Relu", {x})};
  PrepareGraph(b.g);
  SessionOptions bad_index;
  bad_index.device_index = 1;
  EXPECT_THROW(Session(b.g, bad_index), Error);
  Session s(b.g, SessionOptions{});
  EXPECT_EQ(s.executor().placement().node_device.size(), 0u);  // a CPU executor places nothing
  EXPECT_EQ(s.executor().cuda_graphs_captured(), 0u);
  Tensor xv(DType::kFloat32, Shape{2, 3});
  xv.data<float>()[0] = -1.0f;
  xv.data<float>()[1] = 2.0f;
  // Plain host tensors through the device-aware Run: the CPU path.
  auto out = s.Run({{"x", xv}}, {}, {0}, false);
  EXPECT_EQ(out[0].second.data<float>()[0], 0.0f);
  EXPECT_EQ(out[0].second.data<float>()[1], 2.0f);
  for (bool outputs_on_device : {false, true}) {
    try {
      s.Run({{"x", xv}}, {}, {static_cast<char>(!outputs_on_device)}, outputs_on_device);
      ADD_FAILURE() << "a CPU session accepted device I/O";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("CPU"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(s.Run({{"x", xv}}, {}, {1, 0}, false), Error);  // one flag per feed
}

#ifdef ONEFLOW_HAVE_CUDA
// With the real registry: an MLP runs wholly on the device; in a CNN, exactly the nodes without a
// CUDA kernel fall back (whichever they are in this build).
TEST(CudaPlacement, RealRegistry) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{2, 3, 8, 8}));
  AttrMap pads;
  pads.set("pads", Attribute::Ints({1, 1, 1, 1}));
  const int conv = b.Node("Conv", {x, b.Const("w", Tensor(DType::kFloat32, Shape{4, 3, 3, 3}))}, pads);
  const int relu = b.Node("Relu", {conv});
  AttrMap pool;
  pool.set("kernel_shape", Attribute::Ints({2, 2}));
  pool.set("strides", Attribute::Ints({2, 2}));
  const int mp = b.Node("MaxPool", {relu}, pool);
  const int flat = b.Node("Flatten", {mp});
  const int mm = b.Node("MatMul", {flat, b.Const("w2", Tensor(DType::kFloat32, Shape{64, 10}))});
  const int y = b.Node("Softmax", {mm});
  b.g.outputs = {y};
  PrepareGraph(b.g);
  const KernelRegistry& r = KernelRegistry::Global();
  auto has = [&](const Node& n) {
    const KernelDef* cpu = r.Find(n.domain, n.op_type, DeviceType::kCpu);
    return r.Find(n.domain, n.op_type, DeviceType::kCuda) != nullptr || (cpu && cpu->kind == KernelKind::kView);
  };
  const DevicePlacement p = PlaceGraph(b.g, has);
  for (size_t i = 0; i < b.g.nodes.size(); ++i)
    EXPECT_EQ(p.node_device[i] == DeviceType::kCuda, has(b.g.nodes[i])) << b.g.nodes[i].Describe();
  EXPECT_EQ(p.node_device[b.Producer(mm)], DeviceType::kCuda);
  EXPECT_EQ(p.node_device[b.Producer(y)], DeviceType::kCuda);
  EXPECT_EQ(p.node_device[b.Producer(relu)], DeviceType::kCuda);
  (void)flat;
}
#endif

}  // namespace
}  // namespace oneflow
