// A session: an optimized graph plus its executor. Created from a loaded model; runs inference.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/executor.h"
#include "graph/graph.h"
#include "graph/prepare.h"

namespace oneflow {

struct SessionOptions {
  int intra_op_threads = 0;    // 0 = one per core
  int optimization_level = 2;  // 0: none; 1: constant folding + dead code; 2: also fusions
  // Where the session runs (docs/cuda.md "Executor integration"); kCuda needs a CUDA build and device.
  DeviceType device = DeviceType::kCpu;
  int device_index = 0;
  CudaGraphMode cuda_graphs = CudaGraphMode::kAuto;  // device sessions only
  // Device sessions: a CUDA kernel that declines its node at run time is an error naming the node
  // (false, the default) or makes the node run on the CPU from then on, counted in
  // executor().cuda_fallbacks() (true; ONEFLOW_CUDA_ALLOW_FALLBACK=1 does the same). Nodes without
  // a CUDA kernel run on the CPU either way (planned fallbacks, counted too).
  bool cuda_allow_runtime_fallback = false;
  // The intra-op threads: a pool shared with other sessions (the C ABI's oneflow_env_t), or, when
  // null, a pool of `intra_op_threads` of the session's own. Parallel regions of sessions sharing a
  // pool take turns (ThreadPool serializes them), so the process never runs more compute threads
  // than the pool has, however many sessions run at once.
  std::shared_ptr<ThreadPool> pool = nullptr;
};

// Applies the optimization pipeline (passes/pipeline.h) of `level` to a prepared graph, for the
// device it will run on: the channels-last layout pass serves the CPU's conv kernels and is left
// out for CUDA (where it would turn Conv into CPU-only NHWC ops and add transposes); attention
// fusion runs for CUDA only (the flash kernel). Constant folding evaluates on the CPU kernels.
// `fuse_elementwise` off is for benchmarks and tests that compare against the unfused graph.
void OptimizeForDevice(Graph& g, int level, ThreadPool& pool, DeviceType device = DeviceType::kCpu,
                       bool fuse_elementwise = true);

// The range checks of the fields every session has (thread count, optimization level); inference
// and training sessions both apply them. Throws kInvalidArgument naming the field.
void CheckSessionOptions(const SessionOptions& options);

class Session {
 public:
  // `model` must be prepared (graph/prepare.h; loaded models are); the session optimizes its own copy.
  Session(const Graph& model, const SessionOptions& options);

  const Graph& model() const { return model_; }          // as loaded (for queries)
  const Graph& optimized() const { return *optimized_; }  // as executed
  const SessionOptions& options() const { return options_; }

  // Runs with named feeds; returns the requested outputs (all graph outputs when `fetches` is
  // empty) in the order asked. Validates names, dtypes, ranks and static dims of the feeds.
  std::vector<std::pair<std::string, Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                  const std::vector<std::string>& fetches) const;
  // The same for device sessions: feeds[i] is a device tensor on the session's device when
  // feed_on_device[i] (empty = all host tensors); with outputs_on_device the results are device
  // tensors (fresh memory, the stream synchronized). A CPU session refuses device tensors.
  std::vector<std::pair<std::string, Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                  const std::vector<std::string>& fetches,
                                                  const std::vector<char>& feed_on_device, bool outputs_on_device) const;

  size_t planned_peak_bytes() const { return executor_->planned_peak_bytes(); }
  const Executor& executor() const { return *executor_; }

 private:
  Graph model_;
  SessionOptions options_;
  std::shared_ptr<Graph> optimized_;
  std::unique_ptr<Executor> executor_;
};

}  // namespace oneflow
