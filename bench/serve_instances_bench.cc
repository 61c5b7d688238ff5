// oneflow_serve_instances_bench MODEL [seconds] [batch]: how the server's model instances share
// the cores, in process (no network: the scheduler of src/serve driven by caller threads).
// Prints runs/s of the model at `batch` rows (default 64, random inputs) for:
//   session x1 (all threads), 1 caller    one Session, the engine's in-process figure
//   session x1 (all threads), 2 callers   two threads calling Run on one Session
//   scheduler: 1 instance x 1 thread      ModelScheduler, dynamic batching off
//   scheduler: 2 instances x 1 thread
//   scheduler: 1 instance x all threads
// with the two ratios the serving issue asks about (2 instances / 1 single-threaded instance, and
// 2 instances / the two-callers session). Blocks alternate, best of 3 kept; print the CPU too.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "engine/session.h"
#include "serialize/model_io.h"
#include "serve/scheduler.h"

using namespace oneflow;
using BenchClock = std::chrono::steady_clock;

namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU", flags;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU") model = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0 && flags.empty()) flags = line;
  }
  std::string isa = flags.find(" avx512f") != std::string::npos ? "AVX-512"
                    : flags.find(" avx2") != std::string::npos ? "AVX2" : "SSE";
  return model + ", " + isa;
}

// Calls `one_run` from `callers` threads for `seconds`; returns runs per second.
double RunsPerSecond(int callers, double seconds, const std::function<void()>& one_run) {
  std::atomic<bool> stop{false};
  std::atomic<long> runs{0};
  std::vector<std::thread> threads;
  auto start = BenchClock::now();
  for (int c = 0; c < callers; ++c)
    threads.emplace_back([&] {
      while (!stop.load()) {
        one_run();
        runs.fetch_add(1);
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  return runs.load() / std::chrono::duration<double>(BenchClock::now() - start).count();
}

// Submits a request and waits for its answer (one closed-loop client).
void SubmitAndWait(serve::ModelScheduler& scheduler, const serve::NamedTensors& feeds) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  serve::InferRequest r;
  r.inputs = feeds;
  scheduler.Submit(std::move(r), [&](serve::InferOutcome o) {
    if (o.code != serve::StatusCode::kOk) std::fprintf(stderr, "request failed: %s\n", o.message.c_str());
    std::lock_guard<std::mutex> lock(m);
    done = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return done; });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [seconds] [batch]\n", argv[0]);
    return 2;
  }
  double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
  int64_t batch = argc > 3 ? std::atoll(argv[3]) : 64;
  Graph model = LoadModelFile(argv[1]);
  const int cores = ThreadPool::DefaultThreadCount();
  // Random feeds of the model's inputs with the batch dimension set.
  serve::NamedTensors feeds;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int v : model.inputs) {
    const Value& value = model.values[static_cast<size_t>(v)];
    Shape shape;
    for (size_t i = 0; i < value.type.dims.size(); ++i)
      shape.push_back(value.type.dims[i].known() ? value.type.dims[i].value : (i == 0 ? batch : 1));
    Tensor t(value.type.dtype, shape);
    if (t.dtype() == DType::kFloat32)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
    feeds.emplace_back(value.name, t);
  }

  auto scheduler = [&](int instances, int threads) {
    serve::ModelSettings s = serve::ResolveModelSettings({}, false, "bench", model, "oneflow_onnx");
    s.dynamic_batching = false;  // one request, one run: the instances' scaling alone
    s.max_batch_size = static_cast<int>(std::max<int64_t>(batch, s.max_batch_size));
    s.instance_count = instances;
    s.intra_op_threads = threads;
    return std::make_unique<serve::ModelScheduler>("bench", 1, s, model, cores);
  };
  SessionOptions all_threads;
  all_threads.intra_op_threads = cores;
  Session session(model, all_threads);
  auto one_instance = scheduler(1, 1), two_instances = scheduler(2, 1), wide_instance = scheduler(1, cores);

  struct Row {
    const char* name;
    std::function<double()> measure;
    double best = 0;
  };
  std::vector<Row> rows = {
      {"session x1 (all threads), 1 caller", [&] { return RunsPerSecond(1, seconds, [&] { session.Run(feeds, {}); }); }},
      {"session x1 (all threads), 2 callers", [&] { return RunsPerSecond(2, seconds, [&] { session.Run(feeds, {}); }); }},
      {"scheduler: 1 instance x 1 thread",
       [&] { return RunsPerSecond(4, seconds, [&] { SubmitAndWait(*one_instance, feeds); }); }},
      {"scheduler: 2 instances x 1 thread",
       [&] { return RunsPerSecond(4, seconds, [&] { SubmitAndWait(*two_instances, feeds); }); }},
      {"scheduler: 1 instance x all threads",
       [&] { return RunsPerSecond(4, seconds, [&] { SubmitAndWait(*wide_instance, feeds); }); }},
  };
  for (int block = 0; block < 3; ++block)
    for (Row& r : rows) r.best = std::max(r.best, r.measure());
  std::printf("%s; %d cores; %s at batch %lld; best of 3 blocks of %.1f s\n", CpuModel().c_str(), cores, argv[1],
              static_cast<long long>(batch), seconds);
  for (const Row& r : rows) std::printf("  %-40s %9.1f runs/s\n", r.name, r.best);
  std::printf("2 instances / 1 single-threaded instance: %.2fx (target >= 1.8)\n", rows[3].best / rows[2].best);
  std::printf("2 instances / one session with 2 callers: %.2fx\n", rows[3].best / rows[1].best);
  std::printf("2 instances / one session with 1 caller:  %.2fx\n", rows[3].best / rows[0].best);
  return 0;
}
