// oneflow_fused_elementwise_bench: what elementwise fusion does to a model. Prints the fused nodes
// the CPU and the CUDA pass orders make (FusedElementwise count, nodes before/after), then times the
// CPU executor with the pass off and on in the same process, alternating blocks so that load from
// other processes hits both alike; the headline is the median of per-block medians and their ratio.
//
//   oneflow_fused_elementwise_bench MODEL.onnx [NAME=VALUE ...] [--threads N] [--iters N] [--blocks N]
//
// NAME=VALUE sets a symbolic input dim (e.g. batch=8 seq=128); unnamed unknown dims are 1.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/session.h"
#include "serialize/model_io.h"

using namespace oneflow;
using Clock = std::chrono::steady_clock;

namespace {

int Count(const Graph& g, const char* op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op;
  return n;
}

std::shared_ptr<Graph> Optimize(const Graph& model, DeviceType device, bool fuse) {
  auto g = std::make_shared<Graph>(model);
  ThreadPool pool(1);
  OptimizeForDevice(*g, 2, pool, device, fuse);
  return g;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx [NAME=VALUE ...] [--threads N] [--iters N] [--blocks N]\n", argv[0]);
    return 2;
  }
  std::map<std::string, int64_t> dims;
  int threads = 1, iters = 20, blocks = 10;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--threads" || a == "--iters" || a == "--blocks") && i + 1 < argc) {
      const int v = std::atoi(argv[++i]);
      (a == "--threads" ? threads : a == "--iters" ? iters : blocks) = std::max(1, v);
    } else if (a.find('=') != std::string::npos) {
      dims[a.substr(0, a.find('='))] = std::atoll(a.c_str() + a.find('=') + 1);
    } else {
      std::fprintf(stderr, "unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  try {
    Graph model = LoadModelFile(argv[1]);
    PrepareGraph(model);
    const auto off = Optimize(model, DeviceType::kCpu, false);
    const auto on = Optimize(model, DeviceType::kCpu, true);
    const auto cuda = Optimize(model, DeviceType::kCuda, true);
    std::printf("%s\n  CPU order:  %d FusedElementwise, nodes %zu -> %zu\n", argv[1], Count(*on, "FusedElementwise"),
                off->nodes.size(), on->nodes.size());
    std::printf("  CUDA order: %d FusedElementwise, %d FusedAttention, %zu nodes\n", Count(*cuda, "FusedElementwise"),
                Count(*cuda, "FusedAttention"), cuda->nodes.size());

    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    std::vector<Tensor> feeds;
    for (int v : model.inputs) {
      const TensorType& t = model.values[static_cast<size_t>(v)].type;
      Shape s;
      for (const Dim& d : t.dims) s.push_back(d.known() ? d.value : (dims.count(d.symbol) ? dims[d.symbol] : 1));
      Tensor x(DType::kFloat32, s);
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = normal(rng);
      feeds.push_back(x);
    }
    Executor ex_off(off, threads), ex_on(on, threads);
    std::vector<double> med_off, med_on;
    auto block = [&](const Executor& ex, std::vector<double>& meds) {
      ex.Run(feeds);  // back to steady state after the other engine's block
      std::vector<double> t;
      for (int i = 0; i < iters; ++i) {
        const auto t0 = Clock::now();
        ex.Run(feeds);
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
      meds.push_back(Median(t));
    };
    for (int b = 0; b < blocks; ++b) {
      if (b % 2 == 0) {
        block(ex_off, med_off);
        block(ex_on, med_on);
      } else {
        block(ex_on, med_on);
        block(ex_off, med_off);
      }
    }
    const double a = Median(med_off), b = Median(med_on);
    std::printf("  CPU, %d thread(s): pass off %.3f ms, on %.3f ms, ratio on/off %.3f (%d blocks x %d runs)\n", threads,
                a, b, b / a, blocks, iters);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
