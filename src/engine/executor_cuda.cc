// The executor's CUDA path: device placement at construction (constants uploaded once), runs on a
// stream of their own with intermediates in a device arena, CPU fallback with copies around it, and
// CUDA graph capture/replay of static runs. Without ONEFLOW_HAVE_CUDA it only reports so.
// Fallbacks and deferred device checks: docs/cuda.md, "Run-time fallbacks and host reads".
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "engine/executor.h"
#include "kernels/op_profile.h"

#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#endif

namespace oneflow {

#ifndef ONEFLOW_HAVE_CUDA

struct Executor::CudaState {};

void Executor::InitCuda() {
  Fail(ErrorCode::kUnsupported, "no CUDA device: liboneflow was built without CUDA (ONEFLOW_WITH_CUDA=OFF)");
}

std::vector<Tensor> Executor::RunCuda(const std::vector<Tensor>&, const RunIo&) const {
  Fail(ErrorCode::kInternal, "a CUDA run in a build without CUDA");
}

size_t Executor::cuda_graphs_captured() const { return 0; }

CudaFallbackStats Executor::cuda_fallbacks() const { return {}; }

#else  // ONEFLOW_HAVE_CUDA

namespace {

constexpr size_t kMaxCudaGraphs = 16;  // shape sets with a captured graph, per executor

// One shape set's CUDA graph and the fixed memory it reads and writes. Replays are serialized by
// `mu` (the buffers are the graph's); each ends with its stream synchronized.
struct CapturedRun {
  std::mutex mu;
  bool warmed_up = false;  // the first run of a shape set is eager (module loading, cuBLASLt setup, plan)
  bool failed = false;     // capture failed once: this shape set runs eagerly
  std::unique_ptr<cuda::Stream> stream;
  std::vector<Tensor> inputs;     // per graph input: the device buffer the graph reads
  std::vector<Tensor> pinned_in;  // per graph input: pinned staging for host feeds
  std::vector<Tensor> outputs;    // per graph output: where the graph leaves it
  std::vector<char> output_on_host;  // per graph output: a host constant no device node reads
  std::shared_ptr<Storage> arena;
  std::vector<std::shared_ptr<Storage>> keep_alive;  // every device allocation made while capturing
  std::vector<cuda::DeferredDeviceCheck> checks;     // device-data checks of the graph, read after each replay
  cudaGraphExec_t exec = nullptr;

  ~CapturedRun() {
    if (stream) (void)cudaStreamSynchronize(stream->get());
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

bool SameStorage(const Tensor& a, const Tensor& b) { return a.defined() && b.defined() && a.storage() == b.storage(); }

}  // namespace

struct Executor::CudaState {
  std::vector<Tensor> device_constants;  // per value: the uploaded constant, for device readers
  bool graphs_enabled = false;
  std::mutex mu;
  std::vector<std::unique_ptr<cuda::Stream>> free_streams;  // one per concurrent run, reused
  std::vector<std::shared_ptr<Storage>> free_arenas;        // device arenas of finished runs
  std::map<std::vector<Shape>, std::shared_ptr<CapturedRun>> graphs;
  size_t captured = 0;
  // Device nodes whose CUDA kernel refused a run (kUnsupported: a dtype its factory did not check)
  // run on the CPU from then on: per step, the CPU kernel (null until needed), owned by `cpu_kernels`.
  std::unique_ptr<std::atomic<const NodeRunner*>[]> cpu_instead;
  std::vector<std::unique_ptr<NodeRunner>> cpu_kernels;
  std::atomic<bool> any_cpu_instead{false};
  bool allow_runtime_fallback = false;  // ExecutorDevice::allow_runtime_fallback or ONEFLOW_CUDA_ALLOW_FALLBACK=1
  CudaFallbackStats fallbacks;          // guarded by mu (planned: set once at construction)
};

void Executor::InitCuda() {
  const Graph& g = *graph_;
  cuda::RequireDevice(device_.index);
  cuda::DeviceGuard guard(device_.index);
  cuda_ = std::make_shared<CudaState>();

  cuda_->allow_runtime_fallback = device_.allow_runtime_fallback || RuntimeFallbackAllowedByEnv();

  // Device kernels where they exist; a factory refusing the node (a dtype, an attribute) means CPU.
  // A failed CUDA call in a factory is the machine's or the build's problem, never a fallback.
  std::vector<std::unique_ptr<NodeRunner>> device_runners(g.nodes.size());
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    try {
      device_runners[ni] = std::make_unique<NodeRunner>(g, g.nodes[ni], DeviceType::kCuda);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported || cuda::IsCudaStatusError(e)) throw;
    }
  }
  placement_ = PlaceGraph(g, [&](const Node& n) { return device_runners[static_cast<size_t>(&n - g.nodes.data())] != nullptr; });
  not_in_arena_.assign(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v) not_in_arena_[v] = !placement_.produced_on_device[v];
  BuildSteps(device_runners);
  // Planned fallbacks: counted for the session's stats and, when profiling, listed per op type.
  cuda_->fallbacks.planned = static_cast<size_t>(placement_.num_planned_fallbacks());
  if (OpProfilingEnabled())
    for (size_t ni = 0; ni < g.nodes.size(); ++ni)
      if (placement_.no_device_kernel[ni]) RecordCudaFallback(g.nodes[ni].op_type, g.nodes[ni].Describe(), true, "");
  cuda_->cpu_instead = std::make_unique<std::atomic<const NodeRunner*>[]>(steps_.size());
  for (size_t st = 0; st < steps_.size(); ++st) cuda_->cpu_instead[st].store(nullptr);

  // Constants (folded on the CPU by the optimizer) are uploaded once, for their device readers.
  cuda_->device_constants.resize(g.values.size());
  cuda::Stream upload(device_.index);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant.defined() && placement_.needed_on_device[v])
      cuda_->device_constants[v] = cuda::ToDevice(g.values[v].constant, device_.index, upload.get());
  upload.Synchronize();

  // A run can be captured when the host never waits on the device in the middle of it.
  const bool capturable = placement_.num_fallback_nodes() == 0 && !placement_.host_reads_computed_values(g);
  bool static_inputs = true;
  for (int in : g.inputs) static_inputs &= g.values[static_cast<size_t>(in)].type.fully_known();
  cuda_->graphs_enabled = capturable && (device_.cuda_graphs == CudaGraphMode::kOn ||
                                         (device_.cuda_graphs == CudaGraphMode::kAuto && static_inputs));
}

size_t Executor::cuda_graphs_captured() const {
  if (!cuda_) return 0;
  std::lock_guard<std::mutex> lock(cuda_->mu);
  return cuda_->captured;
}

CudaFallbackStats Executor::cuda_fallbacks() const {
  if (!cuda_) return {};
  std::lock_guard<std::mutex> lock(cuda_->mu);
  return cuda_->fallbacks;
}

namespace {

// The value slots of one device run: each value may have a host copy, a device copy, or both.
struct Slots {
  std::vector<Tensor> host, dev;
};

// Copies the feeds into a captured run's fixed input buffers (host feeds through pinned staging).
void CopyFeedsIn(CapturedRun& r, const std::vector<Tensor>& feeds, const RunIo& io) {
  const cudaStream_t s = r.stream->get();
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

std::vector<Tensor> Executor::RunCuda(const std::vector<Tensor>& feeds, const RunIo& io) const {
  const Graph& g = *graph_;
  OF_ASSERT(feeds.size() == g.inputs.size());
  OF_REQUIRE(io.feed_on_device.empty() || io.feed_on_device.size() == feeds.size(),
             "feed_on_device has ", io.feed_on_device.size(), " entries for ", feeds.size(), " feeds");
  const int device = device_.index;
  cuda::DeviceGuard guard(device);
  CudaState& cs = *cuda_;
  auto is_device_feed = [&](size_t i) { return !io.feed_on_device.empty() && io.feed_on_device[i] != 0; };

  std::vector<Shape> key;
  key.reserve(feeds.size());
  for (const Tensor& t : feeds) key.push_back(t.shape());

  // Runs the steps with `slots` prepared (constants, feeds); outputs of device steps come from the
  // arena when planned, else from the stream's pool. Records byte sizes when there is no plan.
  // While `capturing`, nothing may wait on the device: a kernel refusing the run is an error then
  // (the capture fails and the shape set runs eagerly, where the fallback policy below applies).
  // The caller holds a cuda::DeviceCheckScope: kernels' checks of device data are read after the run.
  auto run_steps = [&](Slots& slots, const Plan* plan, const std::shared_ptr<Storage>& arena, cudaStream_t s,
                       std::vector<size_t>* observed, bool capturing) {
    cuda::StreamScope stream_scope(s);
    std::vector<const Tensor*> inputs, infer_values;
    std::vector<Tensor> outputs;
    // Value v on the host (or the device), copied over when it is only on the other side.
    auto on_side = [&](size_t v, bool host) -> const Tensor* {
      Tensor& to = host ? slots.host[v] : slots.dev[v];
      if (!to.defined()) {
        const Tensor& from = host ? slots.dev[v] : slots.host[v];
        if (!from.defined()) return nullptr;
        to = host ? cuda::ToHost(from, s) : cuda::ToDevice(from, device, s);
      }
      return &to;
    };
    for (size_t st = 0; st < steps_.size(); ++st) {
      const Step& step = steps_[st];
      const Node& n = step.runner->node();
      const size_t ni = static_cast<size_t>(placement_.order[st]);
      const NodeRunner* runner = step.runner.get();
      if (const NodeRunner* cpu = cs.cpu_instead[st].load(std::memory_order_acquire)) runner = cpu;
      bool on_device = runner->device() == DeviceType::kCuda;
      // The placement's copies for this step (a device feed or an earlier copy may make one moot).
      for (const DeviceCopy& t : placement_.transfers[st]) on_side(static_cast<size_t>(t.value), t.to_host);

      auto gather = [&]() {
        inputs.assign(n.inputs.size(), nullptr);
        infer_values.assign(n.inputs.size(), nullptr);
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          if (!n.has_input(i)) continue;
          const size_t v = static_cast<size_t>(n.inputs[i]);
          if (placement_.data_free_input[ni][i]) {  // only its shape is read
            inputs[i] = slots.dev[v].defined() ? &slots.dev[v] : slots.host[v].defined() ? &slots.host[v] : nullptr;
          } else {
            inputs[i] = on_side(v, !on_device || placement_.host_read_input[ni][i]);
          }
          infer_values[i] = slots.host[v].defined() ? &slots.host[v] : nullptr;
          OF_CHECK(inputs[i] != nullptr, kInternal, n.Describe(), ": input '", g.values[v].name, "' was not computed");
        }
      };
      OutputAllocator alloc = [&](size_t i, DType dtype, const Shape& shape) -> Tensor {
        if (!on_device) return Tensor::Uninitialized(dtype, shape);
        const size_t v = static_cast<size_t>(n.outputs[i]);
        const size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
        if (observed) (*observed)[v] = bytes;
        else if (plan && plan->offset[v] >= 0 && bytes <= plan->bytes[v])
          return Tensor(dtype, shape, arena, static_cast<size_t>(plan->offset[v]));
        return cuda::EmptyDeviceTensor(dtype, shape, device, s);
      };
      gather();
      try {
        runner->Run(inputs, infer_values, outputs, *pool_, alloc);
      } catch (const Error& e) {
        if (!on_device) throw;
        switch (ClassifyRunFailure(e.code(), cuda::IsCudaStatusError(e), capturing, cs.allow_runtime_fallback)) {
          case RunFailureAction::kRethrow: throw;
          case RunFailureAction::kRefuse: throw RuntimeFallbackError(n, e.what());
          case RunFailureAction::kFallBack: break;
        }
        // The CUDA kernel declined this node at run time and fallback is allowed: run its CPU
        // kernel, now and from now on (counted once per node).
        {
          std::lock_guard<std::mutex> lock(cs.mu);
          if (cs.cpu_instead[st].load() == nullptr) {
            cs.cpu_kernels.push_back(std::make_unique<NodeRunner>(g, n, DeviceType::kCpu));
            cs.cpu_instead[st].store(cs.cpu_kernels.back().get(), std::memory_order_release);
            cs.any_cpu_instead.store(true);
            ++cs.fallbacks.runtime;
            if (OpProfilingEnabled()) RecordCudaFallback(n.op_type, n.Describe(), false, e.what());
          }
          runner = cs.cpu_instead[st].load();
        }
        on_device = false;
        gather();
        runner->Run(inputs, infer_values, outputs, *pool_, alloc);
      }
      std::vector<Tensor>& side = on_device ? slots.dev : slots.host;
      std::vector<Tensor>& other = on_device ? slots.host : slots.dev;
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        if (n.outputs[i] == kNoValue) continue;
        side[static_cast<size_t>(n.outputs[i])] = std::move(outputs[i]);
        other[static_cast<size_t>(n.outputs[i])] = Tensor();
      }
      for (int v : step.free_after) {
        slots.host[static_cast<size_t>(v)] = Tensor();
        slots.dev[static_cast<size_t>(v)] = Tensor();
      }
    }
  };

  auto init_slots = [&](Slots& slots) {
    slots.host.assign(g.values.size(), Tensor());
    slots.dev.assign(g.values.size(), Tensor());
    for (size_t v = 0; v < g.values.size(); ++v) {
      if (!g.values[v].constant.defined()) continue;
      slots.host[v] = g.values[v].constant;
      slots.dev[v] = cs.device_constants[v];
    }
  };

  // ---- CUDA graphs: replay, or capture on the second run of a shape set.
  std::shared_ptr<CapturedRun> captured;
  if (cs.graphs_enabled) {
    std::lock_guard<std::mutex> lock(cs.mu);
    auto it = cs.graphs.find(key);
    if (it != cs.graphs.end()) captured = it->second;
    else if (cs.graphs.size() < kMaxCudaGraphs) captured = cs.graphs[key] = std::make_shared<CapturedRun>();
  }
  if (captured) {
    std::unique_lock<std::mutex> lock(captured->mu);
    CapturedRun& r = *captured;
    std::shared_ptr<const Plan> plan;
    // A node that fell back to the CPU at run time makes the run uncapturable.
    if (!r.exec && r.warmed_up && !r.failed && !cs.any_cpu_instead.load()) {
      std::lock_guard<std::mutex> plan_lock(mutex_);
      auto it = plans_.find(key);
      if (it != plans_.end()) plan = it->second;
    }
    if (!r.exec && plan) {
      try {
        r.stream = std::make_unique<cuda::Stream>(device);
        const cudaStream_t s = r.stream->get();
        r.arena = cuda::AllocateDeviceStorage(plan->arena_bytes, device, s);
        for (const Tensor& f : feeds) {
          r.inputs.push_back(cuda::EmptyDeviceTensor(f.dtype(), f.shape(), device, s));
          r.pinned_in.push_back(cuda::EmptyPinnedTensor(f.dtype(), f.shape()));
        }
        Slots slots;
        init_slots(slots);
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
            run_steps(slots, plan.get(), r.arena, s, nullptr, true);
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
        std::lock_guard<std::mutex> count_lock(cs.mu);
        ++cs.captured;
      } catch (const Error&) {
        // Not capturable after all (a kernel that synchronizes, or memory): run this shape set
        // eagerly from now on; a real error in the run shows up again below.
        if (r.stream) (void)cudaStreamSynchronize(r.stream->get());
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
      const cudaStream_t s = r.stream->get();
      SyncOnExit sync(s);
      CopyFeedsIn(r, feeds, io);
      OF_CUDA_CHECK(cudaGraphLaunch(r.exec, s));
      std::vector<Tensor> results;
      for (size_t j = 0; j < r.outputs.size(); ++j) {
        const Tensor& t = r.outputs[j];
        if (!r.output_on_host[j]) results.push_back(CopyOut(t, io.outputs_on_device, device, s));
        else results.push_back(io.outputs_on_device ? cuda::ToDevice(t, device, s) : t.Clone());
      }
      OF_CUDA_CHECK(cudaStreamSynchronize(s));
      cuda::DeviceCheckScope::VerifyDeviceChecks(r.checks, s);  // after the wait: no extra mid-run sync
      return results;
    }
    r.warmed_up = true;
  }

  // ---- Eager run on a stream of its own.
  std::unique_ptr<cuda::Stream> stream;
  std::shared_ptr<const Plan> plan;
  std::shared_ptr<Storage> arena;
  {
    std::lock_guard<std::mutex> lock(cs.mu);
    if (!cs.free_streams.empty()) {
      stream = std::move(cs.free_streams.back());
      cs.free_streams.pop_back();
    }
  }
  if (!stream) stream = std::make_unique<cuda::Stream>(device);
  const cudaStream_t s = stream->get();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      plan = it->second;
      last_plan_ = plan;
    }
  }
  if (plan) {
    std::lock_guard<std::mutex> lock(cs.mu);
    for (size_t i = 0; i < cs.free_arenas.size(); ++i) {
      if (cs.free_arenas[i]->bytes() >= plan->arena_bytes) {
        arena = cs.free_arenas[i];
        cs.free_arenas.erase(cs.free_arenas.begin() + static_cast<long>(i));
        break;
      }
    }
  }
  if (plan && !arena) arena = cuda::AllocateDeviceStorage(plan->arena_bytes, device, s);

  std::vector<Tensor> results;
  std::vector<size_t> observed;
  if (!plan) observed.assign(g.values.size(), 0);
  cuda::DeviceCheckScope checks;  // kernels' checks of device data, read once the stream is done
  {
    Slots slots;
    SyncOnExit sync(s);  // destroyed before the slots and the arena are let go
    init_slots(slots);
    for (size_t i = 0; i < feeds.size(); ++i) {
      const size_t v = static_cast<size_t>(g.inputs[i]);
      if (is_device_feed(i)) {
        slots.dev[v] = feeds[i];
        // DevicePlacement assumes host feeds; a device feed that the host reads is copied now.
        if (placement_.needed_on_host[v]) slots.host[v] = cuda::ToHost(feeds[i], s);
      } else {
        slots.host[v] = feeds[i];
      }
    }
    run_steps(slots, plan.get(), arena, s, plan ? nullptr : &observed, false);

    results.reserve(g.outputs.size());
    for (int ov : g.outputs) {
      const size_t v = static_cast<size_t>(ov);
      const Tensor& d = slots.dev[v];
      const Tensor& h = slots.host[v];
      OF_CHECK(d.defined() || h.defined(), kInternal, "output '", g.values[v].name, "' was not computed");
      // Engine memory (arena, constants) and the caller's feeds are never handed out.
      const Tensor& src = (io.outputs_on_device ? d.defined() : !h.defined()) ? d : h;
      bool engine_owned = (arena && src.storage() == arena) ||
                          g.values[static_cast<size_t>(root_[v])].constant.defined();
      for (size_t i = 0; i < feeds.size(); ++i) engine_owned |= SameStorage(src, feeds[i]);
      if (&src == &d) {
        if (!io.outputs_on_device) results.push_back(cuda::ToHost(d, s));
        else results.push_back(engine_owned ? CopyOut(d, true, device, s) : d);
      } else {
        if (io.outputs_on_device) results.push_back(cuda::ToDevice(h, device, s));
        else results.push_back(engine_owned ? h.Clone() : h);
      }
    }
  }
  checks.Verify(s);

  std::lock_guard<std::mutex> lock(mutex_);
  if (!plan) {
    auto built = BuildPlan(observed);
    if (plans_.size() >= kMaxCachedPlans) plans_.erase(plans_.begin());
    plans_[key] = built;
    last_plan_ = built;
  }
  std::lock_guard<std::mutex> cuda_lock(cs.mu);
  if (arena) cs.free_arenas.push_back(std::move(arena));
  cs.free_streams.push_back(std::move(stream));
  return results;
}

#endif  // ONEFLOW_HAVE_CUDA

Executor::~Executor() = default;

}  // namespace oneflow
