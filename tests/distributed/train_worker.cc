// One rank of the multi-process training runs over Gloo (started by gloo_train_test.py or
// bench/dist_train_bench.py with RANK / WORLD_SIZE set, or through `oneflow launch`).
//   check MODELS_DIR MODEL STEPS STRATEGY...  trains the case (train_cases.h) with each strategy on
//                                             the 4 ranks; rank 0 compares with its single-device
//                                             run (<= 1e-5 relative) and exits 1 on a mismatch
//   bench MODEL.onnx BATCH STEPS [ZERO]       MLP data-parallel training over every rank, 1 thread
//                                             each (ZeRO stage ZERO, default 0); rank 0 prints one
//                                             JSON line (samples per second)
//   bench MODEL.onnx BATCH STEPS STAGES MICRO  the same as a pipeline of STAGES stages, MICRO micro-batches
//   single MODEL.onnx BATCH STEPS             the same on one process and one thread (the baseline)
//   mismatch MODELS_DIR                       rank 3 starts from other weights: every rank must refuse
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.h"
#include "train_cases.h"

using namespace oneflow;
using namespace oneflow::train;
using namespace oneflow::train::testing;

namespace {

// This process's CPU time (every thread): with other work on the machine, CPU time per step shows
// the work a configuration costs even when wall time mostly shows who got a core.
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int Rank() {
  const char* r = std::getenv("RANK");
  return r ? std::atoi(r) : 0;
}

int Check(const std::string& dir, const std::string& model, int steps, const std::vector<std::string>& strategies) {
  Case c = MakeCase(dir, model, steps);
  std::vector<std::pair<std::string, Trained>> runs;
  for (const std::string& s : strategies) {
    DistributedTrainingOptions d = Strategy(c, s);
    d.dist.backend = "gloo";
    std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(c.model, d);
    runs.emplace_back(s, Train(c, *t));
  }
  if (Rank() != 0) return 0;
  RunReference(c);
  int failed = 0;
  for (const auto& [s, got] : runs) {
    Comparison r = Compare(c, got);
    const bool ok = r.loss <= 1e-5 && r.params <= 1e-5 && r.eval <= 1e-5;
    std::printf("%-12s %-8s loss %.2e  params %.2e (%s)  eval %.2e  %s\n", model.c_str(), s.c_str(), r.loss, r.params,
                r.worst_param.c_str(), r.eval, ok ? "ok" : "MISMATCH");
    failed += !ok;
  }
  return failed ? 1 : 0;
}

// Ranks that disagree: rank 3 trains the MLP from different initial weights (one element of one
// weight changed). Every rank's first step must refuse, naming rank 3, before any collective of
// the plan runs; exits 0 when it did.
int Mismatch(const std::string& dir) {
  Case c = MakeCase(dir, "mlp", 1);
  if (Rank() == 3) {
    for (Value& v : c.model.values)
      if (v.is_parameter) {
        v.constant = v.constant.Clone();
        v.constant.data<float>()[0] += 1.0f;
        break;
      }
  }
  DistributedTrainingOptions d = Strategy(c, "data");
  d.dist.backend = "gloo";
  std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(c.model, d);
  try {
    t->TrainStep(c.batches[0]);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidArgument && std::string(e.what()).find("rank(s) 3 planned a different model") !=
                                                         std::string::npos) {
      std::printf("rank %d refused: %s\n", Rank(), e.what());
      return 0;
    }
    throw;
  }
  std::fprintf(stderr, "rank %d: a step ran although rank 3's weights differ\n", Rank());
  return 1;
}

// Fixed MLP batches: the same on every rank (each takes its block).
std::vector<Feeds> MlpBatches(int batch, int count) {
  std::vector<Feeds> b;
  for (int i = 0; i < count; ++i) b.push_back({{"input", Normal({batch, 784}, 10 + i)}, {"labels", Classes(batch, 20 + i)}});
  return b;
}

TrainingOptions MlpOptions() {
  TrainingOptions o;
  o.appended_loss = AppendedLoss::kSoftmaxCrossEntropy;
  o.logits_output = "logits";
  o.optimizer.kind = OptimizerKind::kSgd;
  o.optimizer.lr = 0.01f;
  o.optimizer.momentum = 0.9f;
  o.session.intra_op_threads = 1;
  return o;
}

int Bench(const std::string& path, int batch, int steps, bool single, int zero_stage = 0, int stages = 1,
          int micro_batches = 1) {
  Graph g = LoadOnnxFile(path);
  PrepareGraph(g);
  std::vector<Feeds> batches = MlpBatches(batch, 4);
  const int warmup = 3;
  double seconds = 0, last_loss = 0, estimated = 0, cpu_start = 0;
  int world = 1;
  if (single) {
    TrainingSession s(g, MlpOptions());
    for (int i = 0; i < warmup + steps; ++i) {
      if (i == warmup) cpu_start = CpuSeconds();
      auto t0 = std::chrono::steady_clock::now();
      s.Run(batches[static_cast<size_t>(i) % batches.size()], {}, RunMode::kTrain);
      s.Backward();
      s.Step();
      if (i >= warmup) seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    last_loss = s.last_loss();
  } else {
    DistributedTrainingOptions d;
    d.training = MlpOptions();
    d.dist.backend = "gloo";
    world = std::atoi(std::getenv("WORLD_SIZE") ? std::getenv("WORLD_SIZE") : "1");
    d.dist.plan.placement = Placement::Parse("cpu:0-" + std::to_string(world - 1));
    d.dist.threads_per_device = 1;
    d.zero_stage = zero_stage;
    d.pipeline_stages = stages;
    d.micro_batches = micro_batches;
    std::unique_ptr<DistributedTrainer> t = DistributedTrainer::Create(g, d);
    for (int i = 0; i < warmup + steps; ++i) {
      if (i == warmup) cpu_start = CpuSeconds();
      auto t0 = std::chrono::steady_clock::now();
      last_loss = t->TrainStep(batches[static_cast<size_t>(i) % batches.size()]).loss;
      if (i >= warmup) seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    const std::string json = t->Explain(true);
    const size_t at = json.find("\"estimated_step_seconds\":");
    if (at != std::string::npos) estimated = std::atof(json.c_str() + at + std::strlen("\"estimated_step_seconds\":"));
  }
  const double cpu_ms = (CpuSeconds() - cpu_start) / steps * 1e3;
  if (Rank() == 0)
    std::printf("{\"processes\":%d,\"batch\":%d,\"steps\":%d,\"step_ms\":%.3f,\"cpu_ms_per_step\":%.3f,"
                "\"estimated_step_ms\":%.3f,\"samples_per_s\":%.1f,\"loss\":%.6f,\"zero_stage\":%d}\n",
                world, batch, steps, seconds / steps * 1e3, cpu_ms, estimated * 1e3, batch * steps / seconds, last_loss,
                single ? 0 : zero_stage);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "check" && argc >= 6) {
      std::vector<std::string> strategies(argv + 5, argv + argc);
      return Check(argv[2], argv[3], std::atoi(argv[4]), strategies);
    }
    if (mode == "mismatch" && argc == 3) return Mismatch(argv[2]);
    if ((mode == "bench" && (argc == 5 || argc == 6)) || (mode == "single" && argc == 5))
      return Bench(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), mode == "single", argc == 6 ? std::atoi(argv[5]) : 0);
    if (mode == "bench" && argc == 7)
      return Bench(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), false, 0, std::atoi(argv[5]), std::atoi(argv[6]));
    std::fprintf(stderr, "usage: %s check MODELS_DIR MODEL STEPS STRATEGY... | mismatch MODELS_DIR | bench|single MODEL.onnx BATCH STEPS [ZERO] "
                 "| bench MODEL.onnx BATCH STEPS STAGES MICRO_BATCHES\n",
                 argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", Rank(), e.what());
    return 1;
  }
}
