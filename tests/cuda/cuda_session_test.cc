// Sessions on a CUDA device against the same sessions on the CPU (and an MLP against a
// double-precision loop): an MLP, a small CNN whose Conv/MaxPool may fall back to the CPU, dynamic
// shapes, a Reshape whose shape is computed at run time, CUDA graph capture and replay with new
// inputs, device feeds and device outputs. Skips with "no CUDA device: ..." where there is none.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "cuda_test_util.h"
#include "../graph_builder.h"
#include "engine/session.h"

namespace oneflow {
namespace {

using test_util::Ints;
using cuda_test::RelL2;

using Model = test_util::GraphBuilder;

Tensor Random(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
  Tensor t(DType::kFloat32, shape);
  std::uniform_real_distribution<float> d(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

SessionOptions Options(DeviceType device, CudaGraphMode graphs = CudaGraphMode::kOff, int level = 2) {
  SessionOptions o;
  o.intra_op_threads = 2;
  o.optimization_level = level;
  o.device = device;
  o.cuda_graphs = graphs;
  return o;
}

// Runs `feeds` on both sessions and compares every output (f32, relative L2).
void ExpectSame(const Session& gpu, const Session& cpu, const std::vector<std::pair<std::string, Tensor>>& feeds,
                double tol, const std::string& what) {
  auto got = gpu.Run(feeds, {});
  auto want = cpu.Run(feeds, {});
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << what;
    ASSERT_EQ(got[i].second.shape(), want[i].second.shape()) << what << " output " << got[i].first;
    EXPECT_LE(RelL2(got[i].second, want[i].second), tol) << what << " output " << got[i].first;
  }
}

// x[B,32] -> MatMul -> Add -> Relu -> MatMul -> Add -> Softmax; weights as constants.
struct Mlp {
  Model m;
  Tensor w1, b1, w2, b2;
  explicit Mlp(TensorType x_type) {
    std::mt19937 rng(11);
    w1 = Random({32, 64}, rng, 0.3f);
    b1 = Random({64}, rng, 0.1f);
    w2 = Random({64, 10}, rng, 0.3f);
    b2 = Random({10}, rng, 0.1f);
    const int x = m.Input("x", std::move(x_type));
    const int h = m.Node("Relu", {m.Node("Add", {m.Node("MatMul", {x, m.Const("w1", w1)}), m.Const("b1", b1)})});
    const int z = m.Node("Add", {m.Node("MatMul", {h, m.Const("w2", w2)}), m.Const("b2", b2)});
    m.g.outputs = {m.Node("Softmax", {z})};
    PrepareGraph(m.g);
  }
  // The same in double precision, with plain loops.
  Tensor Reference(const Tensor& x) const {
    const int64_t batch = x.dim(0);
    Tensor y(DType::kFloat32, {batch, 10});
    for (int64_t r = 0; r < batch; ++r) {
      std::vector<double> h(64), z(10);
      for (int j = 0; j < 64; ++j) {
        double acc = b1.data<float>()[j];
        for (int k = 0; k < 32; ++k) acc += double(x.data<float>()[r * 32 + k]) * w1.data<float>()[k * 64 + j];
        h[j] = std::max(acc, 0.0);
      }
      double mx = -1e300, sum = 0;
      for (int j = 0; j < 10; ++j) {
        double acc = b2.data<float>()[j];
        for (int k = 0; k < 64; ++k) acc += h[k] * w2.data<float>()[k * 10 + j];
        z[j] = acc;
        mx = std::max(mx, acc);
      }
      for (int j = 0; j < 10; ++j) sum += std::exp(z[j] - mx);
      for (int j = 0; j < 10; ++j) y.data<float>()[r * 10 + j] = static_cast<float>(std::exp(z[j] - mx) / sum);
    }
    return y;
  }
};

TEST(CudaSession, MlpMatchesCpuAndDoubleReference) {
  OF_REQUIRE_CUDA_DEVICE();
  Mlp mlp(TensorType::Of(DType::kFloat32, Shape{8, 32}));
  for (int level : {0, 2}) {
    Session gpu(mlp.m.g, Options(DeviceType::kCuda, CudaGraphMode::kOff, level));
    Session cpu(mlp.m.g, Options(DeviceType::kCpu, CudaGraphMode::kOff, level));
    EXPECT_EQ(gpu.executor().placement().num_fallback_nodes(), 0) << "level " << level;
    std::mt19937 rng(static_cast<unsigned>(3 + level));
    for (int rep = 0; rep < 3; ++rep) {  // the first run builds the plan; later ones use the arena
      const Tensor x = Random({8, 32}, rng);
      auto got = gpu.Run({{"x", x}}, {});
      EXPECT_LE(RelL2(got[0].second, mlp.Reference(x)), 1e-5) << "level " << level << " rep " << rep;
      ExpectSame(gpu, cpu, {{"x", x}}, 1e-5, "mlp");
    }
  }
}

TEST(CudaSession, CnnWithCpuFallbackMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(5);
  Model m;
  const int x = m.Input("x", TensorType::Of(DType::kFloat32, Shape{2, 3, 8, 8}));
  AttrMap conv;
  conv.set("pads", Attribute::Ints({1, 1, 1, 1}));
  const int c = m.Node("Conv", {x, m.Const("w", Random({4, 3, 3, 3}, rng, 0.5f)), m.Const("b", Random({4}, rng))}, conv);
  AttrMap pool;
  pool.set("kernel_shape", Attribute::Ints({2, 2}));
  pool.set("strides", Attribute::Ints({2, 2}));
  const int p = m.Node("MaxPool", {m.Node("Relu", {c})}, pool);
  const int f = m.Node("Flatten", {p});
  const int z = m.Node("Gemm", {f, m.Const("w2", Random({64, 10}, rng, 0.2f)), m.Const("b2", Random({10}, rng))});
  m.g.outputs = {m.Node("Softmax", {z}), p};
  PrepareGraph(m.g);
  Session gpu(m.g, Options(DeviceType::kCuda, CudaGraphMode::kOn));
  Session cpu(m.g, Options(DeviceType::kCpu));
  for (int rep = 0; rep < 4; ++rep) ExpectSame(gpu, cpu, {{"x", Random({2, 3, 8, 8}, rng)}}, 1e-5, "cnn");
  // A run with a CPU fallback node is never captured (the host waits on the device mid-run).
  if (gpu.executor().placement().num_fallback_nodes() > 0) {
    EXPECT_EQ(gpu.executor().cuda_graphs_captured(), 0u);
  }
}

TEST(CudaSession, DynamicBatchMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  Mlp mlp(TensorType::Of(DType::kFloat32, {Dim::Symbol("batch"), Dim::Known(32)}));
  Session gpu(mlp.m.g, Options(DeviceType::kCuda, CudaGraphMode::kAuto));
  Session cpu(mlp.m.g, Options(DeviceType::kCpu));
  std::mt19937 rng(9);
  for (int64_t batch : {1, 5, 3, 5, 64, 1}) {
    const Tensor x = Random({batch, 32}, rng);
    EXPECT_LE(RelL2(gpu.Run({{"x", x}}, {})[0].second, mlp.Reference(x)), 1e-5) << "batch " << batch;
    ExpectSame(gpu, cpu, {{"x", x}}, 1e-5, "batch " + std::to_string(batch));
  }
  EXPECT_EQ(gpu.executor().cuda_graphs_captured(), 0u);  // auto: symbolic inputs are not captured
}

TEST(CudaSession, ReshapeWithComputedShapeMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  Model m;
  const int x = m.Input("x", TensorType::Of(DType::kFloat32, {Dim::Symbol("batch"), Dim::Known(4), Dim::Known(6)}));
  const int relu = m.Node("Relu", {x});
  const int batch = m.Node("Gather", {m.Node("Shape", {x}), m.Const("zero", Ints({0}))});
  AttrMap axis0;
  axis0.set("axis", Attribute::Int(0));
  const int target = m.Node("Concat", {batch, m.Const("rest", Ints({3, 8}))}, axis0);
  const int y = m.Node("Softmax", {m.Node("Reshape", {relu, target})});
  m.g.outputs = {y, target};
  PrepareGraph(m.g);
  Session gpu(m.g, Options(DeviceType::kCuda, CudaGraphMode::kOn));
  Session cpu(m.g, Options(DeviceType::kCpu));
  std::mt19937 rng(2);
  for (int64_t b : {2, 3, 2}) {
    const Tensor xv = Random({b, 4, 6}, rng, 3.0f);
    auto got = gpu.Run({{"x", xv}}, {});
    ASSERT_EQ(got[0].second.shape(), (Shape{b, 3, 8}));
    ASSERT_EQ(got[1].second.ToInt64Vector(), (std::vector<int64_t>{b, 3, 8}));
    ExpectSame(gpu, cpu, {{"x", xv}}, 1e-5, "reshape batch " + std::to_string(b));
  }
}

TEST(CudaSession, CudaGraphReplayMatchesEagerAndFollowsNewInputs) {
  OF_REQUIRE_CUDA_DEVICE();
  Mlp mlp(TensorType::Of(DType::kFloat32, Shape{16, 32}));
  Session graphs(mlp.m.g, Options(DeviceType::kCuda, CudaGraphMode::kAuto));
  Session eager(mlp.m.g, Options(DeviceType::kCuda, CudaGraphMode::kOff));
  std::mt19937 rng(21);
  std::vector<Tensor> inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(Random({16, 32}, rng));
  // Run 1 is eager (warm-up), run 2 captures and launches, runs 3.. replay with new data.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor got = graphs.Run({{"x", inputs[i]}}, {})[0].second;
    const Tensor want = eager.Run({{"x", inputs[i]}}, {})[0].second;
    EXPECT_LE(RelL2(got, want), 1e-6) << "run " << i;
    EXPECT_LE(RelL2(got, mlp.Reference(inputs[i])), 1e-5) << "run " << i;
    EXPECT_EQ(graphs.executor().cuda_graphs_captured(), i == 0 ? 0u : 1u) << "run " << i;
  }
  // Replays produce new results for new inputs, not the captured run's.
  const Tensor a = graphs.Run({{"x", inputs[0]}}, {})[0].second;
  const Tensor b = graphs.Run({{"x", inputs[1]}}, {})[0].second;
  EXPECT_GT(RelL2(a, b), 1e-3);
  EXPECT_EQ(eager.executor().cuda_graphs_captured(), 0u);
}

// Relu has a CUDA kernel that refuses f64 only when it runs: the node moves to its CPU kernel for
// that run and the later ones, with copies around it, and the session stops capturing graphs.
TEST(CudaSession, KernelRefusingAtRunTimeFallsBackToCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  Model m;
  const int x = m.Input("x", TensorType::Of(DType::kFloat32, Shape{4, 8}));
  AttrMap to64, to32;
  to64.set("to", Attribute::Int(static_cast<int64_t>(DType::kFloat64)));
  to32.set("to", Attribute::Int(static_cast<int64_t>(DType::kFloat32)));
  const int r64 = m.Node("Relu", {m.Node("Cast", {m.Node("Sub", {x, m.Const("c", Tensor::Scalar(DType::kFloat32, 0.25))})}, to64)});
  m.g.outputs = {m.Node("Exp", {m.Node("Cast", {r64}, to32)})};
  PrepareGraph(m.g);
  Session gpu(m.g, Options(DeviceType::kCuda, CudaGraphMode::kOn, 0));
  Session cpu(m.g, Options(DeviceType::kCpu, CudaGraphMode::kOff, 0));
  std::mt19937 rng(4);
  for (int rep = 0; rep < 4; ++rep) ExpectSame(gpu, cpu, {{"x", Random({4, 8}, rng)}}, 1e-6, "rep " + std::to_string(rep));
  EXPECT_EQ(gpu.executor().cuda_graphs_captured(), 0u);
}

TEST(CudaSession, DeviceFeedsAndDeviceOutputs) {
  OF_REQUIRE_CUDA_DEVICE();
  Mlp mlp(TensorType::Of(DType::kFloat32, Shape{4, 32}));
  for (CudaGraphMode mode : {CudaGraphMode::kOff, CudaGraphMode::kAuto}) {
    Session gpu(mlp.m.g, Options(DeviceType::kCuda, mode));
    std::mt19937 rng(8);
    cuda::Stream stream(0);
    for (int rep = 0; rep < 4; ++rep) {
      const Tensor x = Random({4, 32}, rng);
      const Tensor xd = cuda::ToDevice(x, 0, stream.get());
      stream.Synchronize();  // the caller's data must be complete before the run
      auto out = gpu.Run({{"x", xd}}, {}, {1}, true);
      const Tensor y = cuda::ToHost(out[0].second, stream.get());
      EXPECT_LE(RelL2(y, mlp.Reference(x)), 1e-5) << "rep " << rep;
      EXPECT_NE(out[0].second.storage(), xd.storage());
      // Host feed, device output; device feed, host output.
      EXPECT_LE(RelL2(cuda::ToHost(gpu.Run({{"x", x}}, {}, {}, true)[0].second, stream.get()), mlp.Reference(x)), 1e-5);
      EXPECT_LE(RelL2(gpu.Run({{"x", xd}}, {}, {1}, false)[0].second, mlp.Reference(x)), 1e-5);
    }
  }
  Session cpu(mlp.m.g, Options(DeviceType::kCpu));
  try {
    cpu.Run({{"x", Tensor(DType::kFloat32, Shape{4, 32})}}, {}, {1}, false);
    ADD_FAILURE() << "a CPU session accepted a device feed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

// Without a device a CUDA session is refused at creation, saying why (on a machine with a device,
// this host-side test has nothing to check).
TEST(CudaNoDevice, SessionOnCudaSaysNoDevice) {
  std::string why;
  if (cuda::DeviceCount(&why) > 0) GTEST_SKIP() << "a CUDA device is present";
  Mlp mlp(TensorType::Of(DType::kFloat32, Shape{4, 32}));
  try {
    Session s(mlp.m.g, Options(DeviceType::kCuda));
    ADD_FAILURE() << "a CUDA session was created without a device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("no CUDA device: "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oneflow
