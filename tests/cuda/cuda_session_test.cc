// Sessions on a CUDA device against the same sessions on the CPU (and an MLP against a
// double-precision loop): an MLP, a small CNN whose Conv/MaxPool may fall back to the CPU, dynamic
// shapes, a Reshape whose shape is computed at run time, CUDA graph capture and replay with new
// inputs, device feeds and device outputs; run-time fallbacks (an error by default, counted when
// allowed; a build/architecture error never one); Pad, Trilu, CumSum and the cross-entropy loss
// captured into CUDA graphs (their scalar inputs read on the device). Skips with "no CUDA device:
// ..." where there is none.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>

#include "cuda_test_util.h"
#include "../graph_builder.h"
#include "engine/session.h"
#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "kernels/cuda/cuda_kernels.h"

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

// Sets (or unsets, value = nullptr) an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

constexpr const char* kAllowFallbackEnv = "ONEFLOW_CUDA_ALLOW_FALLBACK";

// A model whose ops all have CUDA kernels reports no fallbacks, planned or at run time.
TEST(CudaSession, ModelWithCudaKernelsOnlyReportsNoFallbacks) {
  OF_REQUIRE_CUDA_DEVICE();
  Mlp mlp(TensorType::Of(DType::kFloat32, Shape{8, 32}));
  Session gpu(mlp.m.g, Options(DeviceType::kCuda, CudaGraphMode::kAuto));
  std::mt19937 rng(17);
  for (int rep = 0; rep < 3; ++rep) {
    const Tensor x = Random({8, 32}, rng);
    EXPECT_LE(RelL2(gpu.Run({{"x", x}}, {})[0].second, mlp.Reference(x)), 1e-5) << "rep " << rep;
  }
  const CudaFallbackStats fb = gpu.executor().cuda_fallbacks();
  EXPECT_EQ(fb.planned, 0u);
  EXPECT_EQ(fb.runtime, 0u);
  EXPECT_EQ(gpu.executor().placement().num_planned_fallbacks(), 0);
  EXPECT_EQ(gpu.executor().cuda_graphs_captured(), 1u);
}

// Test CUDA kernels for two real ops that have only a CPU kernel (the op list is closed, so tests
// borrow ops rather than invent them): one declines every run (as a kernel does for a dtype or a
// size it finds unsupported only when it runs), one fails its launch as a library built for
// another GPU architecture does. The CPU session running the ops' own kernels is the reference.
constexpr const char* kDecliningOp = "Shrink";
constexpr const char* kNoImageOp = "LpNormalization";

void DeclineOnCuda(KernelContext& ctx) {
  Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": the test kernel declines every run");
}
void NoKernelImageOnCuda(KernelContext&) {
  cuda::ThrowCudaError(cudaErrorNoKernelImageForDevice, "TestKernel<<<...>>>", __FILE__, __LINE__);
}

void RegisterTestOps() {
  static std::once_flag once;
  std::call_once(once, [] {
    KernelRegistry& r = KernelRegistry::Global();
    for (OpId op : {OpId::kShrink, OpId::kLpNormalization})
      ASSERT_EQ(r.Find(op, DeviceType::kCuda), nullptr)
          << OpName(op) << " has a CUDA kernel of its own now: borrow another CPU-only op for this test";
    r.RegisterFn(OpId::kShrink, DeclineOnCuda, DeviceType::kCuda);
    r.RegisterFn(OpId::kLpNormalization, NoKernelImageOnCuda, DeviceType::kCuda);
  });
}

// x[4, 8] -> Relu -> `op` -> Exp.
struct TestOpModel {
  Model m;
  std::string op_node;  // the test op's node name
  explicit TestOpModel(const char* op) {
    RegisterTestOps();
    const int x = m.Input("x", TensorType::Of(DType::kFloat32, Shape{4, 8}));
    const int t = m.Node(op, {m.Node("Relu", {x})});
    op_node = m.g.nodes.back().name;
    m.g.outputs = {m.Node("Exp", {t})};
    PrepareGraph(m.g);
  }
};

// By default a kernel declining its node at run time fails the run, naming the node, its op and the
// kernel's reason: a silent CPU fallback would pass a broken setup as correct but slow.
TEST(CudaSession, KernelDecliningAtRunTimeIsAnErrorByDefault) {
  OF_REQUIRE_CUDA_DEVICE();
  ScopedEnv env(kAllowFallbackEnv, nullptr);
  TestOpModel t(kDecliningOp);
  Session gpu(t.m.g, Options(DeviceType::kCuda, CudaGraphMode::kOn, 0));
  EXPECT_EQ(gpu.executor().placement().num_fallback_nodes(), 0);  // it has a CUDA kernel
  std::mt19937 rng(41);
  for (int rep = 0; rep < 2; ++rep) {  // and stays an error
    try {
      gpu.Run({{"x", Random({4, 8}, rng)}}, {});
      ADD_FAILURE() << "a declined kernel ran without an error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << m;
      for (const std::string& part : {t.op_node, std::string(kDecliningOp), std::string("declines every run"),
                                      std::string(kAllowFallbackEnv)})
        EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' missing from: " << m;
    }
  }
  EXPECT_EQ(gpu.executor().cuda_fallbacks().runtime, 0u);
  EXPECT_EQ(gpu.executor().cuda_fallbacks().planned, 0u);
}

// With the option (or ONEFLOW_CUDA_ALLOW_FALLBACK=1) the node runs on its CPU kernel from then on,
// with copies around it, counted once; such a session is never captured into a CUDA graph.
TEST(CudaSession, KernelDecliningAtRunTimeIsACountedFallbackWhenAllowed) {
  OF_REQUIRE_CUDA_DEVICE();
  TestOpModel t(kDecliningOp);
  Session cpu(t.m.g, Options(DeviceType::kCpu, CudaGraphMode::kOff, 0));
  for (bool by_env : {false, true}) {
    ScopedEnv env(kAllowFallbackEnv, by_env ? "1" : nullptr);
    SessionOptions o = Options(DeviceType::kCuda, CudaGraphMode::kOn, 0);
    o.cuda_allow_runtime_fallback = !by_env;
    Session gpu(t.m.g, o);
    std::mt19937 rng(43);
    for (int rep = 0; rep < 4; ++rep)
      ExpectSame(gpu, cpu, {{"x", Random({4, 8}, rng)}}, 1e-6,
                 std::string(by_env ? "env" : "option") + " rep " + std::to_string(rep));
    const CudaFallbackStats fb = gpu.executor().cuda_fallbacks();
    EXPECT_EQ(fb.runtime, 1u) << (by_env ? "env" : "option");
    EXPECT_EQ(fb.planned, 0u);
    EXPECT_EQ(gpu.executor().cuda_graphs_captured(), 0u);
  }
}

// A library without code for the device (no kernel image, PTX too new, invalid device function) is a
// distinct error, kInternal naming the architectures, even where run-time fallback is allowed.
TEST(CudaSession, NoKernelImageIsNeverAFallback) {
  OF_REQUIRE_CUDA_DEVICE();
  TestOpModel t(kNoImageOp);
  SessionOptions o = Options(DeviceType::kCuda, CudaGraphMode::kOff, 0);
  o.cuda_allow_runtime_fallback = true;
  Session gpu(t.m.g, o);
  std::mt19937 rng(47);
  try {
    gpu.Run({{"x", Random({4, 8}, rng)}}, {});
    ADD_FAILURE() << "a missing kernel image ran without an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInternal) << m;
    EXPECT_NE(m.find("cudaErrorNoKernelImageForDevice"), std::string::npos) << m;
    EXPECT_NE(m.find("built for compute capabilities"), std::string::npos) << m;
    EXPECT_NE(m.find("compute capability "), std::string::npos) << m;  // the device's own
  }
  EXPECT_EQ(gpu.executor().cuda_fallbacks().runtime, 0u);
}

// Relu has a CUDA kernel that refuses f64 only when it runs: an error by default; allowed, the node
// moves to its CPU kernel for that run and the later ones, with copies around it, counted, and the
// session stops capturing graphs.
TEST(CudaSession, KernelRefusingAtRunTimeFallsBackToCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  ScopedEnv env(kAllowFallbackEnv, nullptr);
  Model m;
  const int x = m.Input("x", TensorType::Of(DType::kFloat32, Shape{4, 8}));
  AttrMap to64, to32;
  to64.set("to", Attribute::Int(static_cast<int64_t>(DType::kFloat64)));
  to32.set("to", Attribute::Int(static_cast<int64_t>(DType::kFloat32)));
  const int r64 = m.Node("Relu", {m.Node("Cast", {m.Node("Sub", {x, m.Const("c", Tensor::Scalar(DType::kFloat32, 0.25))})}, to64)});
  m.g.outputs = {m.Node("Exp", {m.Node("Cast", {r64}, to32)})};
  PrepareGraph(m.g);
  std::mt19937 rng(4);
  {
    Session strict(m.g, Options(DeviceType::kCuda, CudaGraphMode::kOn, 0));
    try {
      strict.Run({{"x", Random({4, 8}, rng)}}, {});
      ADD_FAILURE() << "Relu on f64 fell back without being allowed to";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find("Relu"), std::string::npos) << e.what();
    }
  }
  SessionOptions allow = Options(DeviceType::kCuda, CudaGraphMode::kOn, 0);
  allow.cuda_allow_runtime_fallback = true;
  Session gpu(m.g, allow);
  Session cpu(m.g, Options(DeviceType::kCpu, CudaGraphMode::kOff, 0));
  for (int rep = 0; rep < 4; ++rep) ExpectSame(gpu, cpu, {{"x", Random({4, 8}, rng)}}, 1e-6, "rep " + std::to_string(rep));
  EXPECT_EQ(gpu.executor().cuda_graphs_captured(), 0u);
  EXPECT_EQ(gpu.executor().cuda_fallbacks().runtime, 1u);
}

// ---- Scalar inputs read on the device: Pad, Trilu, CumSum, the cross-entropy loss ----------------

// Element by element: exactly equal (tol 0: copies, masks, sums added in the same order as on the
// CPU), else within tol * (1 + |want|).
void ExpectElementwise(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.dtype(), DType::kFloat32) << what;
  ASSERT_EQ(want.dtype(), DType::kFloat32) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float a = got.data<float>()[i], b = want.data<float>()[i];
    if (tol == 0) ASSERT_EQ(a, b) << what << " element " << i;
    else ASSERT_NEAR(a, b, tol * (1.0 + std::fabs(b))) << what << " element " << i;
  }
}

using Feeds = std::vector<std::pair<std::string, Tensor>>;

// Runs every feed set on a CUDA session with graphs on and on a CPU session, comparing each run's
// outputs element by element. Run 1 is eager, run 2 captures, later runs replay with new data, so
// a scalar read at capture time instead of in the kernel would show as a mismatch.
void ExpectCapturedAndSame(const Model& m, const std::vector<Feeds>& runs, double tol, const std::string& what) {
  Session gpu(m.g, Options(DeviceType::kCuda, CudaGraphMode::kOn));
  Session cpu(m.g, Options(DeviceType::kCpu));
  EXPECT_EQ(gpu.executor().placement().num_fallback_nodes(), 0) << what;
  EXPECT_FALSE(gpu.executor().placement().host_reads_computed_values(gpu.optimized())) << what;
  for (size_t r = 0; r < runs.size(); ++r) {
    auto got = gpu.Run(runs[r], {});
    auto want = cpu.Run(runs[r], {});
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < got.size(); ++i)
      ExpectElementwise(got[i].second, want[i].second, tol,
                        what + " run " + std::to_string(r) + " output " + got[i].first);
  }
  EXPECT_GT(gpu.executor().cuda_graphs_captured(), 0u) << what;
  EXPECT_EQ(gpu.executor().cuda_fallbacks().planned, 0u) << what;
  EXPECT_EQ(gpu.executor().cuda_fallbacks().runtime, 0u) << what;
}

// Pad's constant_value from a feed (changing every run) and from a constant.
TEST(CudaSession, PadValueIsReadOnTheDeviceAndCaptured) {
  OF_REQUIRE_CUDA_DEVICE();
  Model m;
  const int x = m.Input("x", TensorType::Of(DType::kFloat32, Shape{3, 5}));
  const int value = m.Input("value", TensorType::Of(DType::kFloat32, Shape{}));
  const int fed = m.Node("Pad", {x, m.Const("pads", Ints({1, 2, 0, 1})), value});
  const int constant =
      m.Node("Pad", {x, m.Const("pads2", Ints({0, 0, 2, 2})), m.Const("c", Tensor::Scalar(DType::kFloat32, -7.5))});
  m.g.outputs = {fed, constant};
  PrepareGraph(m.g);
  std::mt19937 rng(31);
  std::vector<Feeds> runs;
  for (double v : {0.5, -3.0, 1e3, 0.0, 2.25})
    runs.push_back({{"x", Random({3, 5}, rng)}, {"value", Tensor::Scalar(DType::kFloat32, v)}});
  ExpectCapturedAndSame(m, runs, 0, "Pad");
}

// Trilu's k from a feed (changing every run), upper and lower, and Trilu without k.
TEST(CudaSession, TriluKIsReadOnTheDeviceAndCaptured) {
  OF_REQUIRE_CUDA_DEVICE();
  Model m;
  const int x = m.Input("x", TensorType::Of(DType::kFloat32, Shape{2, 4, 6}));
  const int k = m.Input("k", TensorType::Of(DType::kInt64, Shape{}));
  AttrMap lower;
  lower.set("upper", Attribute::Int(0));
  m.g.outputs = {m.Node("Trilu", {x, k}), m.Node("Trilu", {x, k}, lower), m.Node("Trilu", {x})};
  PrepareGraph(m.g);
  std::mt19937 rng(37);
  std::vector<Feeds> runs;
  for (int64_t kv : {0, 1, -2, 3, -1})
    runs.push_back({{"x", Random({2, 4, 6}, rng)}, {"k", Tensor::Scalar(DType::kInt64, static_cast<double>(kv))}});
  ExpectCapturedAndSame(m, runs, 0, "Trilu");
}

// CumSum with constant axes (a scalar and a 1-element tensor): read once, on the host, when the
// kernel is created; nothing is read back at run time.
TEST(CudaSession, CumSumWithConstantAxisIsCaptured) {
  OF_REQUIRE_CUDA_DEVICE();
  Model m;
  const int x = m.Input("x", TensorType::Of(DType::kFloat32, Shape{3, 4, 5}));
  AttrMap rev;
  rev.set("exclusive", Attribute::Int(1));
  rev.set("reverse", Attribute::Int(1));
  m.g.outputs = {m.Node("CumSum", {x, m.Const("axis", Tensor::Scalar(DType::kInt64, 1))}),
                 m.Node("CumSum", {x, m.Const("last", Ints({-1}))}, rev)};
  PrepareGraph(m.g);
  std::mt19937 rng(39);
  std::vector<Feeds> runs;
  for (int r = 0; r < 5; ++r) runs.push_back({{"x", Random({3, 4, 5}, rng)}});
  ExpectCapturedAndSame(m, runs, 0, "CumSum");  // the same additions in the same order as the CPU
}

// The cross-entropy loss (mean and sum) stays on the device; a bad label is still an error — read
// after the run, also after a replay — and a good run afterwards is fine again.
TEST(CudaSession, CrossEntropyLossIsCapturedAndBadLabelsStillFail) {
  OF_REQUIRE_CUDA_DEVICE();
  Model m;
  const int scores = m.Input("scores", TensorType::Of(DType::kFloat32, Shape{6, 5}));
  const int labels = m.Input("labels", TensorType::Of(DType::kInt64, Shape{6}));
  AttrMap sum;
  sum.set("reduction", Attribute::String("sum"));
  m.g.outputs = {m.Node("SoftmaxCrossEntropyLoss", {scores, labels}),
                 m.Node("SoftmaxCrossEntropyLoss", {scores, labels}, sum)};
  PrepareGraph(m.g);
  std::mt19937 rng(53);
  std::uniform_int_distribution<int64_t> label(0, 4);
  auto feeds = [&](bool bad) {
    Tensor l(DType::kInt64, Shape{6});
    for (int64_t i = 0; i < 6; ++i) l.data<int64_t>()[i] = label(rng);
    if (bad) l.data<int64_t>()[3] = 5;  // C = 5
    return Feeds{{"scores", Random({6, 5}, rng, 3.0f)}, {"labels", l}};
  };
  std::vector<Feeds> runs;
  for (int r = 0; r < 5; ++r) runs.push_back(feeds(false));
  ExpectCapturedAndSame(m, runs, 1e-5, "SoftmaxCrossEntropyLoss");

  for (CudaGraphMode mode : {CudaGraphMode::kOn, CudaGraphMode::kOff}) {
    Session gpu(m.g, Options(DeviceType::kCuda, mode));
    Session cpu(m.g, Options(DeviceType::kCpu));
    for (int r = 0; r < 3; ++r) gpu.Run(feeds(false), {});  // eager, capture, replay
    try {
      gpu.Run(feeds(true), {});
      ADD_FAILURE() << "a label out of range was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find("label"), std::string::npos) << e.what();
    }
    const Feeds good = feeds(false);
    auto got = gpu.Run(good, {});
    auto want = cpu.Run(good, {});
    for (size_t i = 0; i < got.size(); ++i)
      ExpectElementwise(got[i].second, want[i].second, 1e-5, "after the bad label");
    if (mode == CudaGraphMode::kOn) {
      EXPECT_EQ(gpu.executor().cuda_graphs_captured(), 1u);
    }
  }
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
