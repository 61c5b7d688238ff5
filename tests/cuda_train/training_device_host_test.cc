// Host-side checks of TrainingOptions::device, in every build: a CUDA training session reports
// "built without CUDA" (no CUDA build) or "no CUDA device: <reason>" (no device) at creation, before
// any graph is compiled; bad device options and unsupported combinations are refused naming them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "engine/session.h"
#include "model_graph.h"
#include "train/training_session.h"
#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#endif

namespace oneflow::train {
namespace {

using train_test::AddOp;
using train_test::AddParam;

Graph TinyModel() {
  Graph g;
  g.opset_imports[""] = 17;
  const int x = g.AddValue("input", TensorType::Of(DType::kFloat32, {4, 3}));
  g.inputs.push_back(x);
  const int w = AddParam(g, "w", Tensor(DType::kFloat32, {3, 2}));
  g.outputs.push_back(AddOp(g, "MatMul", {x, w}, "logits"));
  PrepareGraph(g);
  return g;
}

TrainingOptions CudaOptions() {
  TrainingOptions o;
  o.session.intra_op_threads = 1;
  o.appended_loss = AppendedLoss::kMse;
  o.logits_output = "logits";
  o.session.device = DeviceType::kCuda;
  return o;
}

// The error of creating a session with `o` ("" when it succeeds).
std::string CreateError(const TrainingOptions& o, ErrorCode* code = nullptr) {
  try {
    TrainingSession s(TinyModel(), o);
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(TrainingDeviceHost, CudaWithoutCudaOrDeviceIsAClearError) {
  ErrorCode code = ErrorCode::kOk;
  const std::string err = CreateError(CudaOptions(), &code);
#ifndef ONEFLOW_HAVE_CUDA
  EXPECT_EQ(code, ErrorCode::kUnsupported);
  EXPECT_NE(err.find("built without CUDA"), std::string::npos) << err;
#else
  if (cuda::DeviceCount() > 0) GTEST_SKIP() << "this machine has a CUDA device (cuda_train_gpu trains on it)";
  EXPECT_EQ(code, ErrorCode::kUnsupported);
  EXPECT_NE(err.find("no CUDA device: "), std::string::npos) << err;
#endif
}

TEST(TrainingDeviceHost, BadDeviceOptionsAreNamed) {
  TrainingOptions o = CudaOptions();
  o.session.device_index = -1;
  ErrorCode code = ErrorCode::kOk;
  std::string err = CreateError(o, &code);
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
  EXPECT_NE(err.find("CUDA device index must be >= 0"), std::string::npos) << err;

  o = CudaOptions();
  o.session.device = DeviceType::kCpu;
  o.session.device_index = 1;
  err = CreateError(o, &code);
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
  EXPECT_NE(err.find("CPU device index must be 0"), std::string::npos) << err;

  o = CudaOptions();
  o.session.device = static_cast<DeviceType>(7);
  err = CreateError(o, &code);
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
  EXPECT_NE(err.find("unknown device 7"), std::string::npos) << err;

  o = CudaOptions();
  o.session.cuda_graphs = static_cast<CudaGraphMode>(9);
  err = CreateError(o, &code);
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
  EXPECT_NE(err.find("unknown CUDA graph mode 9"), std::string::npos) << err;
}

// Checked before the device is looked for, so the message is the same with or without one.
TEST(TrainingDeviceHost, DeterministicModeOnCudaIsUnsupported) {
  TrainingOptions o = CudaOptions();
  o.deterministic = true;
  ErrorCode code = ErrorCode::kOk;
  const std::string err = CreateError(o, &code);
  EXPECT_EQ(code, ErrorCode::kUnsupported);
  EXPECT_NE(err.find("deterministic mode is not supported for training on a CUDA device"), std::string::npos) << err;
}

// The CPU default is unchanged by the new fields.
TEST(TrainingDeviceHost, CpuSessionStillTrains) {
  TrainingOptions o = CudaOptions();
  o.session.device = DeviceType::kCpu;
  TrainingSession s(TinyModel(), o);
  Tensor x(DType::kFloat32, {4, 3}), y(DType::kFloat32, {4, 2});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 5) - 2.0f;
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = 1.0f;
  s.Run({{"input", x}, {"labels", y}}, {}, RunMode::kTrain);
  s.Backward();
  EXPECT_EQ(s.Step(), StepOutcome::kApplied);
  EXPECT_EQ(s.cuda_graphs_captured(), 0u);
  const Tensor w = s.GetParameter("w");
  double moved = 0;
  for (int64_t i = 0; i < w.numel(); ++i) moved += std::fabs(w.data<float>()[i]);
  EXPECT_GT(moved, 0.0) << "the step left the zero-initialized weight unchanged";
}

}  // namespace
}  // namespace oneflow::train
