// CUDA graphs for the executor (docs/cuda.md, "CUDA graphs"): a run whose host never waits on the
// device is captured on the second run of a shape set (the first is eager: module loading,
// cuBLASLt setup, the memory plan) and replayed from then on, with fixed input, output and arena
// memory. The eager run itself is the executor's one run loop (executor.cc). Without
// ONEFLOW_HAVE_CUDA there is nothing to capture.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "engine/executor.h"

#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_run_device.h"
#endif

namespace oneflow {

#ifndef ONEFLOW_HAVE_CUDA

struct Executor::CudaGraphs {};

void Executor::InitCudaGraphs() {}

bool Executor::RunCudaGraph(const std::vector<Tensor>&, const RunIo&, const std::vector<Shape>&,
                            std::vector<Tensor>&) const {
  return false;
}

size_t Executor::cuda_graphs_captured() const { return 0; }

#else  // ONEFLOW_HAVE_CUDA

namespace {

constexpr size_t kMaxCudaGraphs = 16;  // shape sets with a captured graph, per executor

// One shape set's CUDA graph and the fixed memory it reads and writes. Replays are serialized by
// `mu` (the buffers are the graph's); each ends with its stream synchronized.
struct CapturedRun {
  std::mutex mu;
  bool warmed_up = false;  // the first run of a shape set is eager (module loading, cuBLASLt setup, plan)
  bool failed = false;     // capture failed once: this shape set runs eagerly
  std::unique_ptr<RunStream> stream;  // a cuda::CudaRunStream
  std::vector<Tensor> inputs;     // per graph input: the device buffer the graph reads
  std::vector<Tensor> pinned_in;  // per graph input: pinned staging for host feeds
  std::vector<Tensor> outputs;    // per graph output: where the graph leaves it
  std::vector<char> output_on_host;  // per graph output: a host constant no device node reads
  std::shared_ptr<Storage> arena;
  std::vector<std::shared_ptr<Storage>> keep_alive;  // every device allocation made while capturing
  std::vector<cuda::DeferredDeviceCheck> checks;     // device-data checks of the graph, read after each replay
  cudaGraphExec_t exec = nullptr;

  ~CapturedRun() {
    if (stream) (void)cudaStreamSynchronize(cuda::StreamOf(*stream));
    if (exec) (void)cudaGraphExecDestroy(exec);
  }
};

// Synchronizes a stream on scope exit, also when a run throws: the run's memory (arena, pooled
// blocks) must not be reused while kernels queued on the stream may still touch it.
class SyncOnExit {
 public:
  explicit SyncOnExit(cudaStream_t s) : s_(s) {}
  ~SyncOnExit() {
    if (cudaStreamSynchronize(s_) != cudaSuccess) (void)cudaGetLastError();
  }
  SyncOnExit(const SyncOnExit&) = delete;
  SyncOnExit& operator=(const SyncOnExit&) = delete;

 private:
  cudaStream_t s_;
};

// Copies the feeds into a captured run's fixed input buffers (host feeds through pinned staging).
void CopyFeedsIn(CapturedRun& r, const std::vector<Tensor>& feeds, const RunIo& io) {
  const cudaStream_t s = cuda::StreamOf(*r.stream);
  for (size_t i = 0; i < feeds.size(); ++i) {
    if (!io.feed_on_device.empty() && io.feed_on_device[i]) {
      cuda::CopyAsync(r.inputs[i], feeds[i], s);
    } else if (feeds[i].nbytes() > 0) {
      std::memcpy(r.pinned_in[i].raw(), feeds[i].raw(), feeds[i].nbytes());
      cuda::CopyAsync(r.inputs[i], r.pinned_in[i], s);
    }
  }
}

// A graph output handed to the caller: fresh memory, on the side asked for.
Tensor CopyOut(const Tensor& t, bool to_device, int device, cudaStream_t s) {
  if (!to_device) return cuda::ToHost(t, s);
  Tensor out = cuda::EmptyDeviceTensor(t.dtype(), t.shape(), device, s);
  cuda::CopyAsync(out, t, s);
  return out;
}

}  // namespace

struct Executor::CudaGraphs {
  std::mutex mu;
  std::map<std::vector<Shape>, std::shared_ptr<CapturedRun>> graphs;
  size_t captured = 0;
};

void Executor::InitCudaGraphs() {
  if (run_device_->type() != DeviceType::kCuda) return;
  const Graph& g = *graph_;
  // A run can be captured when the host never waits on the device in the middle of it.
  const bool capturable = placement_.num_fallback_nodes() == 0 && !placement_.host_reads_computed_values(g);
  bool static_inputs = true;
  for (int in : g.inputs) static_inputs &= g.values[static_cast<size_t>(in)].type.fully_known();
  if (capturable && (device_.cuda_graphs == CudaGraphMode::kOn ||
                     (device_.cuda_graphs == CudaGraphMode::kAuto && static_inputs)))
    cuda_graphs_ = std::make_shared<CudaGraphs>();
}

size_t Executor::cuda_graphs_captured() const {
  if (!cuda_graphs_) return 0;
  std::lock_guard<std::mutex> lock(cuda_graphs_->mu);
  return cuda_graphs_->captured;
}

bool Executor::RunCudaGraph(const std::vector<Tensor>& feeds, const RunIo& io, const std::vector<Shape>& key,
                            std::vector<Tensor>& results) const {
  const Graph& g = *graph_;
  RunDevice& dev = *run_device_;
  const int device = device_.index;
  cuda::DeviceGuard guard(device);
  CudaGraphs& cg = *cuda_graphs_;
  // Replay, or capture on the second run of a shape set.
  std::shared_ptr<CapturedRun> captured;
  {
    std::lock_guard<std::mutex> lock(cg.mu);
    auto it = cg.graphs.find(key);
    if (it != cg.graphs.end()) captured = it->second;
    else if (cg.graphs.size() < kMaxCudaGraphs) captured = cg.graphs[key] = std::make_shared<CapturedRun>();
  }
  if (!captured) return false;
  {
    std::unique_lock<std::mutex> lock(captured->mu);
    CapturedRun& r = *captured;
    std::shared_ptr<const Plan> plan;
    // A node that fell back to the CPU at run time makes the run uncapturable.
    if (!r.exec && r.warmed_up && !r.failed && !AnyRuntimeFallback()) {
      std::lock_guard<std::mutex> plan_lock(mutex_);
      auto it = plans_.find(key);
      if (it != plans_.end()) plan = it->second;
    }
    if (!r.exec && plan) {
      try {
        r.stream = dev.NewStream();
        const cudaStream_t s = cuda::StreamOf(*r.stream);
        const auto run_scope = dev.EnterRun(*r.stream);  // device and stream current for the kernels
        r.arena = dev.AllocateArena(plan->arena_bytes, *r.stream);
        for (const Tensor& f : feeds) {
          r.inputs.push_back(dev.Empty(f.dtype(), f.shape(), *r.stream));
          r.pinned_in.push_back(cuda::EmptyPinnedTensor(f.dtype(), f.shape()));
        }
        Slots slots;
        InitSlots(slots);
        for (size_t i = 0; i < feeds.size(); ++i) slots.dev[static_cast<size_t>(g.inputs[i])] = r.inputs[i];
        cudaGraph_t graph = nullptr;
        {
          // Nothing goes back to the device (cudaFree synchronizes) from before the capture begins
          // until it ended (docs/cuda.md, "Device memory: pools, streams and the caller's contract").
          cuda::CaptureScope capture_scope(device);
          // Relaxed: kernels may allocate (workspaces) while this thread captures.
          OF_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
          try {
            cuda::KeepAllocations keep(&r.keep_alive);
            cuda::DeviceCheckScope checks;  // their flags are graph memory: read after every replay
            RunSteps(slots, plan.get(), r.arena, *r.stream, nullptr, true);
            r.checks = std::move(checks.checks());
          } catch (...) {
            (void)cudaStreamEndCapture(s, &graph);
            if (graph) (void)cudaGraphDestroy(graph);
            (void)cudaGetLastError();
            throw;
          }
          OF_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
        }
        const cudaError_t inst = cudaGraphInstantiate(&r.exec, graph, 0);
        (void)cudaGraphDestroy(graph);
        OF_CUDA_CHECK(inst);
        for (int v : g.outputs) {
          const bool on_host = !slots.dev[static_cast<size_t>(v)].defined();
          r.outputs.push_back(on_host ? slots.host[static_cast<size_t>(v)] : slots.dev[static_cast<size_t>(v)]);
          r.output_on_host.push_back(on_host);
          OF_CHECK(r.outputs.back().defined(), kInternal, "output '", g.values[static_cast<size_t>(v)].name,
                   "' was not computed");
        }
        std::lock_guard<std::mutex> count_lock(cg.mu);
        ++cg.captured;
      } catch (const Error&) {
        // Not capturable after all (a kernel that synchronizes, or memory): run this shape set
        // eagerly from now on; a real error in the run shows up again below.
        if (r.stream) dev.SynchronizeNoThrow(*r.stream);
        (void)cudaGetLastError();
        if (r.exec) (void)cudaGraphExecDestroy(r.exec);
        r.exec = nullptr;
        r.inputs.clear();
        r.pinned_in.clear();
        r.outputs.clear();
        r.output_on_host.clear();
        r.arena.reset();
        r.keep_alive.clear();
        r.checks.clear();
        r.failed = true;
      }
    }
    if (r.exec) {
      const cudaStream_t s = cuda::StreamOf(*r.stream);
      SyncOnExit sync(s);
      CopyFeedsIn(r, feeds, io);
      OF_CUDA_CHECK(cudaGraphLaunch(r.exec, s));
      results.clear();
      for (size_t j = 0; j < r.outputs.size(); ++j) {
        const Tensor& t = r.outputs[j];
        if (!r.output_on_host[j]) results.push_back(CopyOut(t, io.outputs_on_device, device, s));
        else results.push_back(io.outputs_on_device ? cuda::ToDevice(t, device, s) : t.Clone());
      }
      OF_CUDA_CHECK(cudaStreamSynchronize(s));
      cuda::DeviceCheckScope::VerifyDeviceChecks(r.checks, s);  // after the wait: no extra mid-run sync
      return true;
    }
    r.warmed_up = true;  // this run is the eager one (executor.cc)
  }
  return false;
}


#endif  // ONEFLOW_HAVE_CUDA

}  // namespace oneflow
