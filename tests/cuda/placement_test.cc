// Device placement (engine/device_placement.h), decided without a device: which nodes fall back to
// the CPU, which values the host reads for shape inference, and where the copies go; the run-time
// fallback policy and its error; the profile's fallback table; scalar parameters (Pad's value,
// Trilu's k) that stay on the device. Built with or without CUDA; the tests under ONEFLOW_HAVE_CUDA
// check the real CUDA kernel registry and the CUDA error classification (no device needed).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "engine/device_placement.h"
#include "kernels/op_profile.h"
#include "engine/session.h"
#include "graph/op_schema.h"
#include "../graph_builder.h"
#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#endif

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
  EXPECT_EQ(p.num_planned_fallbacks(), 1);  // counted in the session's stats
  EXPECT_TRUE(p.no_device_kernel[b.Producer(floor)]);
  EXPECT_FALSE(p.no_device_kernel[b.Producer(relu)]);
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
  // Gather and Concat are kept on the host by choice, not for want of a kernel: only Shape (no
  // "device kernel" here) is a planned fallback.
  EXPECT_EQ(p.num_fallback_nodes(), 3);
  EXPECT_EQ(p.num_planned_fallbacks(), 1);
  EXPECT_TRUE(p.no_device_kernel[shape_node]);
  EXPECT_FALSE(p.no_device_kernel[gather]);
  EXPECT_FALSE(p.no_device_kernel[concat]);
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

// ReduceSumToShape(dY, Shape(b)), a broadcast bias's gradient, with every dim unknown (as in a
// training graph of a model with dynamic shapes): only the op's own declaration (OpSchema::ShapeInput)
// says inference reads its `shape` input, so the device session must keep a host copy of it. Without
// it the first CUDA training run of the transformer encoder failed ("output 0 shape not determined").
TEST(CudaPlacement, DeclaredShapeInputsHoldForUnknownDims) {
  Builder b;
  b.g.opset_imports[kOneflowDomain] = 1;
  const int dy = b.Input("dy", TensorType::Of(DType::kFloat32, std::vector<Dim>{Dim::Unknown(), Dim::Unknown()}));
  const int bias = b.Input("bias", TensorType::Of(DType::kFloat32, std::vector<Dim>{Dim::Unknown()}));
  const int shape = b.Node("Shape", {bias});
  const int db = b.Node("ReduceSumToShape", {dy, shape});
  b.g.nodes.back().domain = kOneflowDomain;
  b.g.nodes.back().opset = 1;
  b.g.outputs = {db};
  PrepareGraph(b.g);
  EXPECT_EQ(ShapeInputPositions(b.g, b.g.nodes[b.Producer(db)]), (std::vector<size_t>{1}));
  const DevicePlacement p = PlaceGraph(b.g, DeviceOps({"ReduceSumToShape"}));
  EXPECT_TRUE(p.needed_on_host[static_cast<size_t>(shape)]);
}

// Pad's constant_value, Trilu's k and the cross-entropy's inputs are data for the device kernels
// (read in-kernel), not host reads; Pad's pads is a true shape input and CumSum's axis a launch
// parameter, read on the host — from the constant's host copy, which neither uploads it nor keeps
// the run from being captured into a CUDA graph.
struct HostReadModel {
  Builder b;
  int x, value, pads, pad, k, trilu, axis, cumsum, scores, labels, loss;
  HostReadModel() {
    x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{3, 4}));
    value = b.Input("value", TensorType::Of(DType::kFloat32, Shape{}));
    pads = b.Const("pads", Ints({1, 0, 0, 2}));
    pad = b.Node("Pad", {x, pads, value});
    k = b.Input("k", TensorType::Of(DType::kInt64, Shape{}));
    trilu = b.Node("Trilu", {pad, k});
    axis = b.Const("axis", Tensor::Scalar(DType::kInt64, 1));
    cumsum = b.Node("CumSum", {trilu, axis});
    labels = b.Input("labels", TensorType::Of(DType::kInt64, Shape{4}));
    scores = cumsum;  // [4, 6]: N = 4, C = 6
    loss = b.Node("SoftmaxCrossEntropyLoss", {scores, labels});
    b.g.outputs = {trilu, loss};
    PrepareGraph(b.g);
  }
};

TEST(CudaHostReads, ScalarParametersStayOnTheDevice) {
  HostReadModel m;
  const Graph& g = m.b.g;
  const size_t pad = m.b.Producer(m.pad), trilu = m.b.Producer(m.trilu), cumsum = m.b.Producer(m.cumsum),
               loss = m.b.Producer(m.loss);
  // The tables: Pad's pads (1) sets a shape; CumSum's axis (1) sets the loop structure only.
  EXPECT_EQ(ShapeInputPositions(g, g.nodes[pad]), (std::vector<size_t>{1}));
  EXPECT_EQ(HostInputPositions(g, g.nodes[pad]), (std::vector<size_t>{1}));
  EXPECT_EQ(HostInputPositions(g, g.nodes[trilu]), std::vector<size_t>{});
  EXPECT_EQ(ShapeInputPositions(g, g.nodes[cumsum]), std::vector<size_t>{});
  EXPECT_EQ(HostInputPositions(g, g.nodes[cumsum]), (std::vector<size_t>{1}));
  EXPECT_EQ(HostInputPositions(g, g.nodes[loss]), std::vector<size_t>{});

  const DevicePlacement p = PlaceGraph(g, DeviceOps({"Pad", "Trilu", "CumSum", "SoftmaxCrossEntropyLoss"}));
  EXPECT_EQ(p.num_fallback_nodes(), 0);
  EXPECT_TRUE(p.host_read_input[pad][1]);    // pads: a shape input
  EXPECT_FALSE(p.host_read_input[pad][2]);   // constant_value: read by the kernel
  EXPECT_FALSE(p.host_read_input[trilu][1]); // k: read by the kernel
  EXPECT_TRUE(p.host_read_input[cumsum][1]); // axis: a launch parameter...
  for (size_t i = 0; i < 2; ++i) EXPECT_FALSE(p.host_read_input[loss][i]) << "loss input " << i;
  // ...but a constant: its host copy, never uploaded, never copied per run.
  EXPECT_TRUE(p.needed_on_host[static_cast<size_t>(m.axis)]);
  EXPECT_FALSE(p.needed_on_device[static_cast<size_t>(m.axis)]);
  for (int v : {m.value, m.k, m.labels}) {
    EXPECT_TRUE(p.needed_on_device[static_cast<size_t>(v)]) << g.values[static_cast<size_t>(v)].name;
    EXPECT_FALSE(p.needed_on_host[static_cast<size_t>(v)]) << g.values[static_cast<size_t>(v)].name;
  }
  for (const auto& step : p.transfers)
    for (const DeviceCopy& c : step) EXPECT_FALSE(c.to_host) << "value " << g.values[static_cast<size_t>(c.value)].name;
  // Nothing computed is read on the host: the run can be captured into a CUDA graph.
  EXPECT_FALSE(p.host_reads_computed_values(g));
}

// A CumSum axis computed at run time is a true host read (it sets the launch): not capturable.
TEST(CudaHostReads, ComputedCumSumAxisIsReadOnTheHost) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat32, Shape{3, 4}));
  const int axis = b.Input("axis", TensorType::Of(DType::kInt64, Shape{}));
  b.g.outputs = {b.Node("CumSum", {x, axis})};
  PrepareGraph(b.g);
  const DevicePlacement p = PlaceGraph(b.g, DeviceOps({"CumSum"}));
  EXPECT_TRUE(p.needed_on_host[static_cast<size_t>(axis)]);
  EXPECT_FALSE(p.needed_on_device[static_cast<size_t>(axis)]);
  EXPECT_TRUE(p.host_reads_computed_values(b.g));
}

// The run-time fallback policy: a kernel declining a node (kUnsupported) is an error by default and
// a fallback only when allowed; CUDA statuses, other codes and refusals during capture never are.
TEST(CudaFallbackPolicy, DecliningKernelIsAnErrorUnlessAllowed) {
  using A = RunFailureAction;
  EXPECT_EQ(ClassifyRunFailure(ErrorCode::kUnsupported, false, false, false), A::kRefuse);
  EXPECT_EQ(ClassifyRunFailure(ErrorCode::kUnsupported, false, false, true), A::kFallBack);
  // A CUDA status mapped to kUnsupported (a driver problem) is never a fallback.
  EXPECT_EQ(ClassifyRunFailure(ErrorCode::kUnsupported, true, false, true), A::kRethrow);
  EXPECT_EQ(ClassifyRunFailure(ErrorCode::kUnsupported, true, false, false), A::kRethrow);
  // While capturing, the capture is abandoned; the eager run then applies the policy.
  EXPECT_EQ(ClassifyRunFailure(ErrorCode::kUnsupported, false, true, true), A::kRethrow);
  EXPECT_EQ(ClassifyRunFailure(ErrorCode::kUnsupported, false, true, false), A::kRethrow);
  for (ErrorCode c : {ErrorCode::kInternal, ErrorCode::kRuntime, ErrorCode::kInvalidArgument, ErrorCode::kOutOfMemory})
    for (bool allowed : {false, true})
      EXPECT_EQ(ClassifyRunFailure(c, false, false, allowed), A::kRethrow) << ErrorCodeName(c);
}

TEST(CudaFallbackPolicy, ErrorNamesNodeOpReasonAndTheSwitch) {
  Builder b;
  const int x = b.Input("x", TensorType::Of(DType::kFloat64, Shape{2, 3}));
  const int y = b.Node("Relu", {x});
  b.g.outputs = {y};
  PrepareGraph(b.g);
  const Node& n = b.g.nodes[b.Producer(y)];
  const Error e = RuntimeFallbackError(n, "Relu 'Relu0': dtype float64 on CUDA");
  const std::string m = e.what();
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  const std::vector<std::string> parts = {n.Describe(), "Relu", "dtype float64 on CUDA", "ONEFLOW_CUDA_ALLOW_FALLBACK=1",
                                          "cuda_allow_runtime_fallback", "allow_runtime_fallback"};
  for (const std::string& part : parts)
    EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' missing from: " << m;
}

// ONEFLOW_CUDA_ALLOW_FALLBACK=1 (exactly, like ONEFLOW_CUDA_ALLOW_TF32) allows it; read per session.
TEST(CudaFallbackPolicy, EnvironmentVariable) {
  const char* old = std::getenv("ONEFLOW_CUDA_ALLOW_FALLBACK");
  const std::string saved = old ? old : "";
  unsetenv("ONEFLOW_CUDA_ALLOW_FALLBACK");
  EXPECT_FALSE(RuntimeFallbackAllowedByEnv());
  setenv("ONEFLOW_CUDA_ALLOW_FALLBACK", "0", 1);
  EXPECT_FALSE(RuntimeFallbackAllowedByEnv());
  setenv("ONEFLOW_CUDA_ALLOW_FALLBACK", "1", 1);
  EXPECT_TRUE(RuntimeFallbackAllowedByEnv());
  if (old) setenv("ONEFLOW_CUDA_ALLOW_FALLBACK", saved.c_str(), 1);
  else unsetenv("ONEFLOW_CUDA_ALLOW_FALLBACK");
}

// ONEFLOW_PROFILE's fallback table: a row per op type with its planned and run-time fallbacks.
TEST(CudaFallbackPolicy, ProfileTableHasARowPerOp) {
  EXPECT_EQ(FormatFallbackTable({}), "");
  EXPECT_EQ(FormatFallbackTable({{"Relu", FallbackCounts{}}}), "");
  std::map<std::string, FallbackCounts> by_op;
  by_op["Conv"].planned = 3;
  by_op["Relu"].runtime = 1;
  by_op["MaxPool"].planned = 1;
  by_op["MaxPool"].runtime = 1;
  const std::string t = FormatFallbackTable(by_op);
  EXPECT_NE(t.find("planned"), std::string::npos) << t;
  EXPECT_NE(t.find("run-time"), std::string::npos) << t;
  const size_t conv = t.find("Conv"), pool = t.find("MaxPool"), relu = t.find("Relu");
  ASSERT_NE(conv, std::string::npos) << t;
  ASSERT_NE(pool, std::string::npos) << t;
  ASSERT_NE(relu, std::string::npos) << t;
  EXPECT_LT(conv, pool) << t;  // most fallbacks first
  EXPECT_LT(pool, relu) << t;
  const std::string conv_row = t.substr(conv, t.find('\n', conv) - conv);
  EXPECT_NE(conv_row.find(" 3 "), std::string::npos) << conv_row;
  const std::string relu_row = t.substr(relu, t.find('\n', relu) - relu);
  EXPECT_EQ(relu_row.substr(relu_row.size() - 2), " 1") << relu_row;
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
  EXPECT_EQ(s.executor().cuda_fallbacks().planned, 0u);  // a CPU executor counts no fallbacks
  EXPECT_EQ(s.executor().cuda_fallbacks().runtime, 0u);
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
  auto has = [&](const Node& n) {  // a CUDA kernel, or a view (OpSchema::View: none needed)
    return r.Find(n.domain, n.op_type, DeviceType::kCuda) != nullptr || (n.schema && n.schema->view);
  };
  const DevicePlacement p = PlaceGraph(b.g, has);
  for (size_t i = 0; i < b.g.nodes.size(); ++i)
    EXPECT_EQ(p.node_device[i] == DeviceType::kCuda, has(b.g.nodes[i])) << b.g.nodes[i].Describe();
  EXPECT_EQ(p.node_device[b.Producer(mm)], DeviceType::kCuda);
  EXPECT_EQ(p.node_device[b.Producer(y)], DeviceType::kCuda);
  EXPECT_EQ(p.node_device[b.Producer(relu)], DeviceType::kCuda);
  (void)flat;
}

// The real registry has CUDA kernels for Pad, Trilu, CumSum and the cross-entropy loss: the model
// above places wholly on the device, with nothing computed read on the host (capturable).
TEST(CudaHostReads, RealRegistryPlacesScalarParameterOpsOnTheDevice) {
  HostReadModel m;
  const KernelRegistry& r = KernelRegistry::Global();
  const DevicePlacement p =
      PlaceGraph(m.b.g, [&](const Node& n) { return r.Find(n.domain, n.op_type, DeviceType::kCuda) != nullptr; });
  EXPECT_EQ(p.num_fallback_nodes(), 0);
  EXPECT_EQ(p.num_planned_fallbacks(), 0);
  EXPECT_FALSE(p.host_reads_computed_values(m.b.g));
}

// Build/architecture problems are a distinct error (kInternal, naming the compute capabilities the
// library was built for), never kUnsupported, so they never become a CPU fallback.
TEST(CudaFallbackPolicy, BuildArchitectureErrorsAreNeverFallbacks) {
  for (cudaError_t status : {cudaErrorNoKernelImageForDevice, cudaErrorUnsupportedPtxVersion,
                             cudaErrorInvalidDeviceFunction, cudaErrorInvalidPtx, cudaErrorInvalidKernelImage}) {
    EXPECT_TRUE(cuda::IsBuildArchitectureError(status)) << cudaGetErrorName(status);
    EXPECT_EQ(cuda::CudaErrorCode(status), ErrorCode::kInternal) << cudaGetErrorName(status);
    try {
      OF_CUDA_CHECK(status);  // a status stands in for a failing launch
      ADD_FAILURE() << "expected an Error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kInternal) << msg;
      EXPECT_TRUE(cuda::IsCudaStatusError(e)) << msg;
      EXPECT_NE(msg.find(cudaGetErrorName(status)), std::string::npos) << msg;
      EXPECT_NE(msg.find("built for compute capabilities"), std::string::npos) << msg;
      EXPECT_NE(msg.find("CMAKE_CUDA_ARCHITECTURES"), std::string::npos) << msg;
      for (bool allowed : {false, true})
        EXPECT_EQ(ClassifyRunFailure(e.code(), cuda::IsCudaStatusError(e), false, allowed), RunFailureAction::kRethrow);
    }
  }
  EXPECT_STRNE(cuda::CompiledCudaArchList(), "unknown");
  // Machine problems keep their code (the C API reports "no CUDA device" as UNSUPPORTED) but are
  // CUDA statuses: never a fallback either.
  EXPECT_FALSE(cuda::IsBuildArchitectureError(cudaErrorNoDevice));
  EXPECT_EQ(cuda::CudaErrorCode(cudaErrorNoDevice), ErrorCode::kUnsupported);
  try {
    OF_CUDA_CHECK(cudaErrorNoDevice);
  } catch (const Error& e) {
    EXPECT_TRUE(cuda::IsCudaStatusError(e));
    EXPECT_EQ(ClassifyRunFailure(e.code(), cuda::IsCudaStatusError(e), false, true), RunFailureAction::kRethrow);
  }
  // cuBLAS NOT_SUPPORTED is cuBLASLt declining a case: a kernel refusal, subject to the policy.
  try {
    OF_CUBLAS_CHECK(CUBLAS_STATUS_NOT_SUPPORTED);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_FALSE(cuda::IsCudaStatusError(e));
    EXPECT_EQ(ClassifyRunFailure(e.code(), cuda::IsCudaStatusError(e), false, false), RunFailureAction::kRefuse);
  }
}

// Deferred device checks: inside a scope a check is only collected (no CUDA call, so this runs
// without a device); scopes nest; an empty list verifies without touching the device.
TEST(CudaDeviceChecks, ScopesCollectChecks) {
  Tensor flag(DType::kInt32, Shape{1});
  cuda::DeviceCheckScope outer;
  cuda::DeferDeviceCheck(flag, ErrorCode::kInvalidArgument, "outer check", nullptr);
  {
    cuda::DeviceCheckScope inner;
    cuda::DeferDeviceCheck(flag, ErrorCode::kInvalidArgument, "inner check", nullptr);
    ASSERT_EQ(inner.checks().size(), 1u);
    EXPECT_EQ(inner.checks()[0].message, "inner check");
  }
  cuda::DeferDeviceCheck(flag, ErrorCode::kRuntime, "outer again", nullptr);
  ASSERT_EQ(outer.checks().size(), 2u);
  EXPECT_EQ(outer.checks()[1].code, ErrorCode::kRuntime);
  cuda::DeviceCheckScope::VerifyDeviceChecks({}, nullptr);  // nothing to read: no device call
  EXPECT_THROW(
      cuda::DeferDeviceCheck(Tensor(DType::kInt64, Shape{1}), ErrorCode::kInvalidArgument, "bad flag", nullptr), Error);
}
#endif

}  // namespace
}  // namespace oneflow
