// The server's model configuration and scheduler (src/serve), without the network: config.pbtxt
// parsing and completion from the model, request validation, dynamic batching (one execution for
// requests that arrive together, preferred sizes), timeouts, cancellation and the drain. Outputs
// are checked against the model's formula, y = x * 2 + 1, computed here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "../graph_builder.h"
#include "serve/model_config.h"
#include "serve/scheduler.h"

namespace oneflow::serve {
namespace {

using test_util::GraphBuilder;

// y = x * 2 + 1 over float32[N, 3] (N symbolic: a batchable model).
Graph AffineModel() {
  GraphBuilder b;
  int x = b.Input("x", TensorType::Of(DType::kFloat32, {Dim::Symbol("N"), Dim::Known(3)}));
  int two = b.Const(Tensor::Scalar(DType::kFloat32, 2));
  int one = b.Const(Tensor::Scalar(DType::kFloat32, 1));
  int m = b.Op("Mul", {x, two}, "m");
  return b.Done(b.Op("Add", {m, one}, "y"));
}

Tensor Rows(int64_t rows, float start) {
  Tensor t(DType::kFloat32, {rows, 3});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

InferRequest Request(Tensor x, uint64_t timeout_us = 0) {
  InferRequest r;
  r.inputs.emplace_back("x", std::move(x));
  r.timeout_us = timeout_us;
  return r;
}

// Collects outcomes; Wait blocks until `n` arrived.
struct Outcomes {
  std::mutex m;
  std::condition_variable cv;
  std::vector<InferOutcome> all;
  InferCallback Callback() {
    return [this](InferOutcome o) {
      std::lock_guard<std::mutex> lock(m);
      all.push_back(std::move(o));
      cv.notify_all();
    };
  }
  void Wait(size_t n) {
    std::unique_lock<std::mutex> lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return all.size() >= n; }));
  }
};

void ExpectAffine(const Tensor& x, const InferOutcome& o) {
  ASSERT_EQ(o.code, StatusCode::kOk) << o.message;
  ASSERT_EQ(o.outputs.size(), 1u);
  const Tensor& y = o.outputs[0].second;
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y.data<float>()[i], x.data<float>()[i] * 2 + 1);
}

ModelSettings Settings(const std::string& config_text) {
  ModelConfigFile f = ParseModelConfigText(config_text, "config.pbtxt");
  return ResolveModelSettings(f.config, true, "affine", AffineModel(), "oneflow_onnx");
}

TEST(ServeConfig, DerivedFromTheModel) {
  ModelSettings s = ResolveModelSettings({}, false, "affine", AffineModel(), "oneflow_onnx");
  EXPECT_EQ(s.max_batch_size, kDefaultMaxBatchSize);
  EXPECT_TRUE(s.dynamic_batching);
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].name, "x");
  EXPECT_EQ(s.inputs[0].dims, std::vector<int64_t>({3}));
  EXPECT_EQ(s.outputs[0].name, "y");
  EXPECT_EQ(s.resolved.platform(), "oneflow_onnx");
  EXPECT_EQ(s.resolved.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_CPU);
}

TEST(ServeConfig, TritonTextFormatWithUnknownFieldsAsWarnings) {
  ModelConfigFile f = ParseModelConfigText(R"(
    name: "affine"
    platform: "onnxruntime_onnx"
    max_batch_size: 8
    input [ { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } ]
    dynamic_batching { preferred_batch_size: [ 4, 2 ] max_queue_delay_microseconds: 100 }
    instance_group [ { count: 2 kind: KIND_CPU } ]
    optimization { execution_accelerators { cpu_execution_accelerator: [ { name: "openvino" } ] } }
    parameters { key: "intra_op_threads" value { string_value: "1" } }
  )", "config.pbtxt");
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_NE(f.warnings[0].find("optimization"), std::string::npos) << f.warnings[0];
  ModelSettings s = ResolveModelSettings(f.config, true, "affine", AffineModel(), "oneflow_onnx");
  EXPECT_EQ(s.max_batch_size, 8);
  EXPECT_EQ(s.preferred_batch_sizes, std::vector<int>({2, 4}));
  EXPECT_EQ(s.max_queue_delay_us, 100u);
  EXPECT_EQ(s.instance_count, 2);
  EXPECT_EQ(s.intra_op_threads, 1);
  EXPECT_EQ(s.resolved.platform(), "onnxruntime_onnx");
}

TEST(ServeConfig, ErrorsNameTheProblem) {
  auto message = [](const std::string& text) {
    try {
      Settings(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("max_batch_size: 8\ninput [ { name: \"x\" data_type: TYPE_FP64 dims: [3] } ]").find(
                "config input 'x' is TYPE_FP64 but the model's is TYPE_FP32"),
            std::string::npos);
  EXPECT_NE(message("max_batch_size: 8\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [4] } ]").find(
                "has dims [4] but the model's are [3]"),
            std::string::npos);
  EXPECT_NE(message("max_batch_size: 0\ninput [ { name: \"x\" data_type: TYPE_FP32 dims: [3] } ]").find(
                "dims [3] but the model's are [-1,3]"),
            std::string::npos);
  EXPECT_NE(message("input [ { name: \"q\" data_type: TYPE_FP32 } ]").find("config input 'q' is not an input"),
            std::string::npos);
  EXPECT_NE(message("max_batch_size: 4\ndynamic_batching { preferred_batch_size: [ 8 ] }").find(
                "preferred_batch_size 8 is outside [1, max_batch_size = 4]"),
            std::string::npos);
  EXPECT_NE(message("parameters { key: \"intra_op_threads\" value { string_value: \"many\" } }").find(
                "'intra_op_threads' is 'many'"),
            std::string::npos);
  EXPECT_NE(message("instance_group [ { kind: KIND_GPU } ]").find("KIND_GPU"), std::string::npos);
  std::string syntax = message("max_batch_size: 8\ninput [ { name: \"x\" ");
  EXPECT_NE(syntax.find("config.pbtxt:"), std::string::npos) << syntax;  // names file, line and column
}

// model_warmup: zero, random and file data, repeated to the batch size; the scheduler runs every
// sample on every instance before it takes requests; a bad sample names the problem.
TEST(ServeConfig, WarmupSamples) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("oneflow-warmup-" + std::to_string(getpid()));
  fs::create_directories(dir / "warmup");
  {
    std::ofstream f(dir / "warmup" / "x.bin", std::ios::binary);
    const float row[3] = {1.5f, -2.0f, 4.0f};
    f.write(reinterpret_cast<const char*>(row), sizeof row);
  }
  const std::string base = "max_batch_size: 8\ninstance_group [ { count: 2 } ]\n";
  auto settings = [&](const std::string& warmup) {
    ModelConfigFile f = ParseModelConfigText(base + warmup, "config.pbtxt");
    EXPECT_TRUE(f.warnings.empty()) << f.warnings[0];
    return ResolveModelSettings(f.config, true, "affine", AffineModel(), "oneflow_onnx", dir.string());
  };
  ModelSettings s = settings(R"(
    model_warmup [
      { name: "zeros" batch_size: 4 count: 2 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true } } },
      { name: "random" batch_size: 1 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] random_data: true } } },
      { name: "file" batch_size: 2 inputs { key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] input_data_file: "x.bin" } } }
    ])");
  ASSERT_EQ(s.warmup.size(), 3u);
  EXPECT_EQ(s.warmup[0].count, 2);
  EXPECT_EQ(s.warmup[1].count, 1);  // 0: once
  const Tensor& zeros = s.warmup[0].inputs.at(0).second;
  EXPECT_EQ(zeros.shape(), (Shape{4, 3}));
  for (int64_t i = 0; i < zeros.numel(); ++i) EXPECT_EQ(zeros.data<float>()[i], 0.0f);
  const Tensor& random = s.warmup[1].inputs.at(0).second;
  EXPECT_EQ(random.shape(), (Shape{1, 3}));
  for (int64_t i = 0; i < random.numel(); ++i) EXPECT_TRUE(random.data<float>()[i] >= 0 && random.data<float>()[i] < 1);
  const Tensor& file = s.warmup[2].inputs.at(0).second;
  EXPECT_EQ(file.shape(), (Shape{2, 3}));
  EXPECT_EQ(std::vector<float>(file.data<float>(), file.data<float>() + 6),
            (std::vector<float>{1.5f, -2.0f, 4.0f, 1.5f, -2.0f, 4.0f}));  // the row, repeated
  ModelScheduler scheduler("affine", 1, s, AffineModel(), 2);
  EXPECT_NE(scheduler.warmup_report().find("'zeros' 2x on 2 instance(s)"), std::string::npos)
      << scheduler.warmup_report();
  EXPECT_NE(scheduler.warmup_report().find("'file' 1x on 2 instance(s)"), std::string::npos);

  auto message = [&](const std::string& warmup) {
    try {
      settings(warmup);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidModel) << e.what();
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto sample = [](const std::string& batch, const std::string& input) {
    return "model_warmup [ { name: \"w\" batch_size: " + batch + " inputs { " + input + " } } ]";
  };
  const std::string x = R"(key: "x" value { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true })";
  EXPECT_NE(message(sample("9", x)).find("model_warmup 'w' has batch_size 9, outside [1, max_batch_size = 8]"),
            std::string::npos);
  EXPECT_NE(message(sample("1", R"(key: "q" value { dims: [ 3 ] })")).find(
                "gives data for 'q', which is not an input of the model"), std::string::npos);
  EXPECT_NE(message("model_warmup [ { name: \"w\" batch_size: 1 } ]").find("gives no data for the input 'x'"),
            std::string::npos);
  EXPECT_NE(message(sample("1", R"(key: "x" value { data_type: TYPE_INT64 dims: [ 3 ] })")).find(
                "input 'x' has data_type TYPE_INT64; the model's input is float32"), std::string::npos);
  EXPECT_NE(message(sample("1", R"(key: "x" value { data_type: TYPE_FP32 dims: [ 4 ] })")).find(
                "has dims [4]; the input's are [3]"), std::string::npos);
  EXPECT_NE(message(sample("1", R"(key: "x" value { dims: [ 3 ] input_data_file: "missing.bin" })")).find(
                "cannot read input_data_file"), std::string::npos);
  EXPECT_NE(message(sample("1", R"(key: "x" value { dims: [ 3 ] input_data_file: "../x.bin" })")).find(
                "a relative path without '..'"), std::string::npos);
  {
    std::ofstream f(dir / "warmup" / "short.bin", std::ios::binary);
    f.write("abcd", 4);
  }
  EXPECT_NE(message(sample("1", R"(key: "x" value { dims: [ 3 ] input_data_file: "short.bin" })")).find(
                "holds 4 bytes; the sample needs 12"), std::string::npos);
  {  // a link out of the directory, and a directory: neither is read
    std::ofstream f(dir / "outside.bin", std::ios::binary);
    f.write("abcdefghijkl", 12);
  }
  fs::create_symlink(dir / "outside.bin", dir / "warmup" / "link.bin");
  fs::create_directory(dir / "warmup" / "sub.bin");
  EXPECT_NE(message(sample("1", R"(key: "x" value { dims: [ 3 ] input_data_file: "link.bin" })")).find(
                "leads outside the model's 'warmup' directory"), std::string::npos);
  EXPECT_NE(message(sample("1", R"(key: "x" value { dims: [ 3 ] input_data_file: "sub.bin" })")).find(
                "not a regular file"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ServeConfig, VersionPolicies) {
  const std::vector<int64_t> available = {1, 2, 5};
  auto select = [&](const std::string& text) {
    return SelectVersions(ParseModelConfigText(text, "c").config, available);
  };
  EXPECT_EQ(select(""), std::vector<int64_t>({5}));
  EXPECT_EQ(select("version_policy { latest { num_versions: 2 } }"), std::vector<int64_t>({2, 5}));
  EXPECT_EQ(select("version_policy { all {} }"), available);
  EXPECT_EQ(select("version_policy { specific { versions: [5, 1] } }"), std::vector<int64_t>({1, 5}));
  EXPECT_THROW(select("version_policy { specific { versions: [3] } }"), Error);
}

TEST(ServeScheduler, ValidatesRequestsBeforeQueueing) {
  ModelScheduler s("affine", 1, Settings("max_batch_size: 4"), AffineModel(), 1);
  auto refusal = [&](InferRequest r) {
    try {
      s.Submit(std::move(r), [](InferOutcome) { ADD_FAILURE() << "a refused request must not be answered"; });
    } catch (const ServeError& e) {
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal(Request(Rows(5, 0))).find("batch size 5; model 'affine' takes 1 to 4"), std::string::npos);
  EXPECT_NE(refusal(Request(Tensor(DType::kFloat32, {2, 4}))).find("has shape [2,4] but model 'affine' expects [-1,3]"),
            std::string::npos);
  EXPECT_NE(refusal(Request(Tensor(DType::kFloat64, {2, 3}))).find("datatype FP64 but model 'affine' expects FP32"),
            std::string::npos);
  InferRequest missing;
  EXPECT_NE(refusal(std::move(missing)).find("input 'x' of model 'affine' is missing"), std::string::npos);
  InferRequest unknown = Request(Rows(1, 0));
  unknown.inputs.emplace_back("z", Rows(1, 0));
  EXPECT_NE(refusal(std::move(unknown)).find("unexpected input 'z'"), std::string::npos);
  InferRequest bad_output = Request(Rows(1, 0));
  bad_output.outputs = {"nope"};
  EXPECT_NE(refusal(std::move(bad_output)).find("has no output 'nope'"), std::string::npos);
}

TEST(ServeScheduler, RequestsArrivingTogetherRunAsOneBatch) {
  // One instance; the first request waits up to 2 s for company unless the batch reaches 4.
  ModelScheduler s("affine", 1,
                   Settings("max_batch_size: 8\ndynamic_batching { preferred_batch_size: [4] "
                            "max_queue_delay_microseconds: 2000000 }"),
                   AffineModel(), 1);
  Outcomes out;
  std::vector<Tensor> xs = {Rows(1, 0), Rows(2, 100), Rows(1, 200)};
  for (const Tensor& x : xs) s.Submit(Request(x), out.Callback());
  out.Wait(3);
  ASSERT_EQ(out.all.size(), 3u);
  // Answers arrive in request order within the batch; each gets its own rows.
  for (size_t i = 0; i < xs.size(); ++i) ExpectAffine(xs[i], out.all[i]);
  EXPECT_EQ(s.metrics()->exec_count.load(), 1u);
  EXPECT_EQ(s.metrics()->inference_count.load(), 4u);
  EXPECT_EQ(s.metrics()->request_success.load(), 3u);
}

TEST(ServeScheduler, WithoutDynamicBatchingEachRequestRunsAlone) {
  ModelScheduler s("affine", 1, Settings("max_batch_size: 8"), AffineModel(), 1);
  Outcomes out;
  for (int i = 0; i < 5; ++i) s.Submit(Request(Rows(2, 10.0f * i)), out.Callback());
  out.Wait(5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out.all[static_cast<size_t>(i)].code, StatusCode::kOk);
  EXPECT_EQ(s.metrics()->exec_count.load(), 5u);
}

TEST(ServeScheduler, TimedOutAndCancelledRequestsAreAnsweredNotRun) {
  ModelScheduler s("affine", 1,
                   Settings("max_batch_size: 8\ndynamic_batching { preferred_batch_size: [8] "
                            "max_queue_delay_microseconds: 100000 }"),
                   AffineModel(), 1);
  Outcomes out;
  s.Submit(Request(Rows(1, 0), /*timeout_us=*/1000), out.Callback());  // waits 100 ms in the batcher
  InferRequest cancelled = Request(Rows(1, 0));
  cancelled.cancelled = std::make_shared<std::atomic<bool>>(true);
  s.Submit(std::move(cancelled), out.Callback());
  out.Wait(2);
  EXPECT_EQ(out.all[0].code, StatusCode::kDeadlineExceeded);
  EXPECT_NE(out.all[0].message.find("timed out"), std::string::npos) << out.all[0].message;
  EXPECT_EQ(out.all[1].code, StatusCode::kCancelled);
  EXPECT_EQ(s.metrics()->exec_count.load(), 0u);
  EXPECT_EQ(s.metrics()->request_failure.load(), 2u);
}

TEST(ServeScheduler, DrainFinishesAcceptedWorkThenRefuses) {
  ModelScheduler s("affine", 1, Settings("max_batch_size: 8\ndynamic_batching {}"), AffineModel(), 1);
  Outcomes out;
  std::vector<Tensor> xs;
  for (int i = 0; i < 20; ++i) xs.push_back(Rows(1 + i % 3, static_cast<float>(i)));
  for (const Tensor& x : xs) s.Submit(Request(x), out.Callback());
  s.Drain(Clock::now() + std::chrono::seconds(30));
  ASSERT_EQ(out.all.size(), xs.size());  // every accepted request answered before Drain returned
  for (const InferOutcome& o : out.all) EXPECT_EQ(o.code, StatusCode::kOk) << o.message;
  try {
    s.Submit(Request(Rows(1, 0)), out.Callback());
    ADD_FAILURE() << "a drained scheduler accepted a request";
  } catch (const ServeError& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnavailable);
  }
}

TEST(ServeScheduler, FullQueueRefusesWithUnavailable) {
  // The batcher holds the first request for 2 s (its batch never fills), so the queue behind it is
  // deterministic: max_queue_size 2 takes two more and refuses the fourth.
  ModelScheduler s("affine", 1,
                   Settings("max_batch_size: 2\ndynamic_batching { preferred_batch_size: [2] "
                            "max_queue_delay_microseconds: 2000000 default_queue_policy { max_queue_size: 2 } }"),
                   AffineModel(), 1);
  Outcomes out;
  s.Submit(Request(Rows(1, 0)), out.Callback());
  // Wait until the instance took the first request into its batch (the queue is then empty).
  for (int i = 0; i < 1000 && s.metrics()->pending_requests.load() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Requests of 2 rows cannot join a batch of 1 with max 2: they stay queued.
  s.Submit(Request(Rows(2, 0)), out.Callback());
  s.Submit(Request(Rows(2, 0)), out.Callback());
  try {
    s.Submit(Request(Rows(2, 0)), out.Callback());
    ADD_FAILURE() << "a full queue accepted a request";
  } catch (const ServeError& e) {
    EXPECT_EQ(e.code(), StatusCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("the queue is full"), std::string::npos) << e.what();
  }
  out.Wait(3);
  for (const InferOutcome& o : out.all) EXPECT_EQ(o.code, StatusCode::kOk) << o.message;
}

}  // namespace
}  // namespace oneflow::serve
