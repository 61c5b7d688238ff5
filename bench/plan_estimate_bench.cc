// oneflow_plan_estimate_bench: the planner's cost model against measured runs. For each placement,
// a data-parallel DistributedSession of a bench model (bench/make_models.py; the transformer by
// default, input [4, 16, 256]) on in-process CPU devices, one intra-op thread per device: the plan's
// estimated step time beside the median of measured runs, and their ratio measured/estimated.
// Nothing is asserted on the times (they depend on the machine and its load): the figures are for
// reading; a ratio far from 1 (say beyond 10x either way) suggests the cost model's defaults no
// longer describe this kind of machine. Exit status 1 only on errors (bad arguments, a failed run).
//
//   oneflow_plan_estimate_bench MODELS_DIR [--model transformer] [--input input=4x16x256] [--runs 5]
//                               [--threads-per-device 1] [--mode data|auto] [PLACEMENT ...]
//
// PLACEMENTs default to cpu:0 cpu:0-1 cpu:0-3 (the in-process devices share this machine's cores,
// so a placement with more devices than cores also measures the oversubscription).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/distributed_session.h"
#include "serialize/onnx_import.h"

using namespace oneflow;

namespace {

void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s MODELS_DIR [--model NAME] [--input NAME=DxDxD] [--runs N] [--threads-per-device N]\n"
               "       [--mode data|auto] [PLACEMENT ...]\n"
               "  MODELS_DIR holds NAME.onnx (python3 bench/make_models.py --models transformer --out DIR)\n",
               argv0);
}

Shape ParseShape(const std::string& text) {
  Shape s;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t x = text.find('x', at);
    const std::string dim = text.substr(at, x == std::string::npos ? std::string::npos : x - at);
    char* end = nullptr;
    const long long v = std::strtoll(dim.c_str(), &end, 10);
    if (dim.empty() || *end != '\0' || v < 0) throw std::runtime_error("bad shape '" + text + "'");
    s.push_back(v);
    if (x == std::string::npos) break;
    at = x + 1;
  }
  return s;
}

Tensor Random(const Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    Usage(argv[0]);
    return argc < 2 ? 2 : 0;
  }
  std::string dir = argv[1], model = "transformer", input_name = "input", mode = "data";
  Shape input_shape = {4, 16, 256};
  int runs = 5, threads = 1;
  std::vector<std::string> placements;
  try {
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
        return argv[++i];
      };
      if (a == "--model") {
        model = value();
      } else if (a == "--input") {
        const std::string v = value();
        const size_t eq = v.find('=');
        if (eq == std::string::npos) throw std::runtime_error("--input wants NAME=DxDxD, got '" + v + "'");
        input_name = v.substr(0, eq);
        input_shape = ParseShape(v.substr(eq + 1));
      } else if (a == "--runs") {
        runs = std::max(1, std::atoi(value().c_str()));
      } else if (a == "--threads-per-device") {
        threads = std::max(1, std::atoi(value().c_str()));
      } else if (a == "--mode") {
        mode = value();
      } else if (!a.empty() && a[0] == '-') {
        throw std::runtime_error("unknown option " + a);
      } else {
        placements.push_back(a);
      }
    }
    if (placements.empty()) placements = {"cpu:0", "cpu:0-1", "cpu:0-3"};

    Graph g = LoadOnnxFile(dir + "/" + model + ".onnx");
    PrepareGraph(g);
    const Tensor x = Random(input_shape, 9);
    SessionOptions so;
    so.intra_op_threads = threads;
    std::printf("%s, %s %s, %s plans, %d thread(s) per device, median of %d timed runs after 1 untimed\n",
                model.c_str(), input_name.c_str(), ShapeToString(input_shape).c_str(), mode.c_str(), threads, runs);
    std::printf("%-12s %14s %14s %20s\n", "placement", "estimated ms", "measured ms", "measured/estimated");
    for (const std::string& placement : placements) {
      DistributedOptions d;
      d.plan.placement = Placement::Parse(placement);
      d.plan.mode = ParsePlanMode(mode);
      d.threads_per_device = threads;
      DistributedSession ds(g, so, d);
      const std::vector<std::pair<std::string, Tensor>> feeds = {{input_name, x}};
      ds.Run(feeds, {});  // plans, compiles and warms up
      std::vector<double> ms;
      for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        ds.Run(feeds, {});
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      const double measured = ms[ms.size() / 2];
      const double estimated = ds.PlanFor({{input_name, x.shape()}})->step_seconds * 1e3;
      std::printf("%-12s %14.3f %14.3f %20.2f\n", placement.c_str(), estimated, measured, measured / estimated);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneflow_plan_estimate_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
