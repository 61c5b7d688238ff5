// The executor: runs an optimized graph in topological order with one kernel instance per node,
// placing intermediates in a per-run arena laid out by a memory plan cached per input signature.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/device_placement.h"
#include "device/run_device.h"
#include "engine/memory_plan.h"
#include "kernels/node_runner.h"

namespace oneflow {

// CUDA graph capture of device runs (docs/cuda.md, "CUDA graphs").
enum class CudaGraphMode {
  kAuto,  // on when every input dim is static (and the run is capturable)
  kOn,    // on for every shape set of a capturable run (one graph per set of input shapes)
  kOff,
};

// Where an executor runs. kCpu is the plain CPU executor; kCuda places nodes with
// device_placement.h and keeps intermediates in device memory.
struct ExecutorDevice {
  DeviceType type = DeviceType::kCpu;
  int index = 0;
  CudaGraphMode cuda_graphs = CudaGraphMode::kAuto;
  // A CUDA kernel that declines its node at run time (kUnsupported from Compute): false (default)
  // makes that an error naming the node; true runs the node on the CPU from then on, counted in
  // cuda_fallbacks(). ONEFLOW_CUDA_ALLOW_FALLBACK=1 in the environment also allows it.
  bool allow_runtime_fallback = false;
};

// The nodes of a device executor that run on the CPU instead (docs/cuda.md, "Run-time fallbacks
// and host reads").
struct CudaFallbackStats {
  size_t planned = 0;  // placed on the CPU at creation: no CUDA kernel, or its factory declined the node
  size_t runtime = 0;  // moved to the CPU when their CUDA kernel declined a run (fallback allowed)
};

// Where one run's feeds and results live (device executors only): feeds flagged here are device
// tensors on the executor's device (used in place, no copy); with outputs_on_device the results
// stay in device memory (new allocations, never engine memory).
struct RunIo {
  std::vector<char> feed_on_device;  // empty = all on the host
  bool outputs_on_device = false;
};

class Executor {
 public:
  // `graph` must have schemas resolved and shapes inferred. Creates every kernel up front so that
  // missing kernels are reported at session creation, not in the middle of a run.
  Executor(std::shared_ptr<const Graph> graph, int num_threads);
  // The same, running kernels on a pool shared with other executors (a training session's forward
  // and backward graphs): one set of spinning workers instead of one per graph.
  Executor(std::shared_ptr<const Graph> graph, std::shared_ptr<ThreadPool> pool);
  // On a device (kCuda: throws kUnsupported "no CUDA device: ..." without one).
  Executor(std::shared_ptr<const Graph> graph, int num_threads, const ExecutorDevice& device);
  // On a device with a shared pool (a training session's graphs on CUDA; the pool runs CPU fallbacks).
  Executor(std::shared_ptr<const Graph> graph, std::shared_ptr<ThreadPool> pool, const ExecutorDevice& device);
  ~Executor();

  // Runs the graph. `feeds[i]` is the tensor for graph input i (already validated by the caller).
  // Returns the graph outputs in declaration order; they never alias engine-owned memory.
  // Safe to call from several threads at once.
  std::vector<Tensor> Run(const std::vector<Tensor>& feeds) const;
  // The same with device feeds or results (a CPU executor refuses device tensors).
  std::vector<Tensor> Run(const std::vector<Tensor>& feeds, const RunIo& io) const;

  const ExecutorDevice& device() const { return device_; }
  // The device placement (empty for a CPU executor).
  const DevicePlacement& placement() const { return placement_; }
  // Number of CUDA graphs captured so far (0 for a CPU executor or with graphs off).
  size_t cuda_graphs_captured() const;
  // CPU fallbacks so far (zeros for a CPU executor).
  CudaFallbackStats cuda_fallbacks() const;

  // Bytes of the arena of the most recently built plan (0 when no plan exists yet).
  size_t planned_peak_bytes() const;
  int num_threads() const { return pool_->num_threads(); }

 private:
  struct Step {
    std::unique_ptr<NodeRunner> runner;
    std::vector<int> free_after;  // values whose last reader is this step
  };
  struct Plan {
    std::vector<int64_t> offset;  // per value; -1 = not in the arena
    std::vector<size_t> bytes;    // per value: planned size
    size_t arena_bytes = 0;
  };

  // Dynamic shapes could grow the plan cache without bound; it keeps the most useful few.
  static constexpr size_t kMaxCachedPlans = 16;

  std::shared_ptr<const Plan> BuildPlan(const std::vector<size_t>& value_bytes) const;
  std::shared_ptr<const Plan> StaticPlan() const;  // from static shapes, when all are known
  void BuildSteps(std::vector<std::unique_ptr<NodeRunner>>& device_runners);

  // One run's value slots: every value's host tensor and, on a device with memory of its own,
  // its device tensor (a value may have both: a copy made for a reader on the other side).
  struct Slots {
    std::vector<Tensor> host, dev;
  };
  // Constants in `slots` (their device copies too on a device with memory of its own).
  void InitSlots(Slots& slots) const;
  // The run loop, for every device: runs the steps in order with `slots` prepared, outputs of the
  // device's steps from `arena` where planned (else fresh device memory on `stream`), copies
  // between host and device where the placement says, kernels declining a node at run time
  // handled by the fallback policy. Records each value's bytes in `observed` when there is no
  // plan. While `capturing` (a CUDA graph), nothing may wait on the device. The caller has
  // entered the run (RunDevice::EnterRun) on `stream`.
  void RunSteps(Slots& slots, const Plan* plan, const std::shared_ptr<Storage>& arena, RunStream& stream,
                std::vector<size_t>* observed, bool capturing) const;

  // A device with memory of its own: kernels placed, constants uploaded (executor.cc).
  struct DeviceState;
  void InitDevice();
  bool AnyRuntimeFallback() const;  // some device node has fallen back to the CPU at run time
  // CUDA graphs (executor_cuda.cc): set up when the runs allow capture; a run of a shape set that
  // has (or now gets) a captured graph replays it and returns true with `results` set.
  struct CudaGraphs;
  void InitCudaGraphs();
  bool RunCudaGraph(const std::vector<Tensor>& feeds, const RunIo& io, const std::vector<Shape>& key,
                    std::vector<Tensor>& results) const;

  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<Step> steps_;
  std::vector<int> root_;        // value -> the value owning its bytes (views alias their input)
  std::vector<int> def_step_;    // value -> step that produces it (-1 for inputs/constants)
  std::vector<int> last_step_;   // value -> last step that reads it or any of its views
  std::vector<char> is_output_;  // value -> is a graph output
  ExecutorDevice device_;
  std::unique_ptr<RunDevice> run_device_;  // what runs need of the device (device/run_device.h)
  DevicePlacement placement_;       // device executors: which node runs where, which copies go where
  std::vector<char> not_in_arena_;  // device executors: values computed on the host (no arena slot)
  std::shared_ptr<DeviceState> device_state_;  // device executors
  std::shared_ptr<CudaGraphs> cuda_graphs_;     // when runs are captured; complete only in executor_cuda.cc

  mutable std::mutex mutex_;
  mutable std::map<std::vector<Shape>, std::shared_ptr<const Plan>> plans_;  // by input shapes
  mutable std::shared_ptr<const Plan> last_plan_;
  mutable std::vector<std::shared_ptr<Storage>> free_arenas_;  // of finished runs, in the device's memory
};

}  // namespace oneflow
