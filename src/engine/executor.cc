// The executor: one run loop for every device (the host, or a device with memory of its own
// through device/run_device.h); CUDA graph capture and replay are in executor_cuda.cc.
#include "engine/executor.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/trace.h"
#include "kernels/op_profile.h"

namespace oneflow {

Executor::Executor(std::shared_ptr<const Graph> graph, int num_threads)
    : Executor(std::move(graph), std::make_shared<ThreadPool>(num_threads)) {}

Executor::Executor(std::shared_ptr<const Graph> graph, std::shared_ptr<ThreadPool> pool)
    : Executor(std::move(graph), std::move(pool), ExecutorDevice{}) {}

Executor::Executor(std::shared_ptr<const Graph> graph, int num_threads, const ExecutorDevice& device)
    : Executor(std::move(graph), std::make_shared<ThreadPool>(num_threads), device) {}

Executor::Executor(std::shared_ptr<const Graph> graph, std::shared_ptr<ThreadPool> pool, const ExecutorDevice& device)
    : graph_(std::move(graph)), pool_(std::move(pool)), device_(device),
      run_device_(OpenRunDevice(device.type, device.index)) {
  if (run_device_->separate_memory()) {
    InitDevice();  // places the nodes, then BuildSteps with the device kernels
    InitCudaGraphs();
  } else {
    std::vector<std::unique_ptr<NodeRunner>> no_device_runners;
    BuildSteps(no_device_runners);
  }
}

// `device_runners` (by node index; empty for a CPU executor) holds the device kernels of the nodes
// placement_ puts on the device; every other node gets its CPU kernel.
void Executor::BuildSteps(std::vector<std::unique_ptr<NodeRunner>>& device_runners) {
  const Graph& g = *graph_;
  const size_t nv = g.values.size();
  root_.resize(nv);
  for (size_t v = 0; v < nv; ++v) root_[v] = static_cast<int>(v);
  def_step_.assign(nv, -1);
  last_step_.assign(nv, -1);
  is_output_.assign(nv, 0);
  for (int v : g.outputs) is_output_[static_cast<size_t>(v)] = 1;

  std::vector<int> order = g.TopologicalOrder();
  for (size_t s = 0; s < order.size(); ++s) {
    const Node& n = g.nodes[static_cast<size_t>(order[s])];
    Step step;
    const size_t ni = static_cast<size_t>(order[s]);
    if (!device_runners.empty() && placement_.node_device[ni] != DeviceType::kCpu) step.runner = std::move(device_runners[ni]);
    else step.runner = std::make_unique<NodeRunner>(g, n, DeviceType::kCpu, pool_);
    for (int v : n.inputs)
      if (v != kNoValue) last_step_[static_cast<size_t>(root_[static_cast<size_t>(v)])] = static_cast<int>(s);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      int v = n.outputs[i];
      if (v == kNoValue) continue;
      def_step_[static_cast<size_t>(v)] = static_cast<int>(s);
      if (i == 0 && step.runner->kind() == KernelKind::kView) root_[static_cast<size_t>(v)] = root_[static_cast<size_t>(n.inputs[0])];
    }
    steps_.push_back(std::move(step));
  }
  // Outputs that nobody reads still need a slot for the step that writes them.
  for (size_t v = 0; v < nv; ++v) {
    int r = root_[v];
    if (def_step_[v] >= 0) last_step_[static_cast<size_t>(r)] = std::max(last_step_[static_cast<size_t>(r)], def_step_[v]);
  }
  // Drop references to dead tensors as soon as possible (matters when running without a plan).
  for (size_t v = 0; v < nv; ++v) {
    if (root_[v] != static_cast<int>(v) || last_step_[v] < 0 || is_output_[v] || g.values[v].constant.defined()) continue;
    steps_[static_cast<size_t>(last_step_[v])].free_after.push_back(static_cast<int>(v));
  }
  last_plan_ = StaticPlan();
}

std::shared_ptr<const Executor::Plan> Executor::BuildPlan(const std::vector<size_t>& value_bytes) const {
  const Graph& g = *graph_;
  auto plan = std::make_shared<Plan>();
  plan->offset.assign(g.values.size(), -1);
  plan->bytes.assign(g.values.size(), 0);
  std::vector<BufferRequest> requests;
  std::vector<int> request_value;
  for (size_t v = 0; v < g.values.size(); ++v) {
    // Only computed intermediates that own their bytes live in the arena; graph outputs are
    // handed to the caller and so get memory of their own.
    if (def_step_[v] < 0 || root_[v] != static_cast<int>(v) || is_output_[v]) continue;
    if (!not_in_arena_.empty() && not_in_arena_[v]) continue;  // host values of a device run
    bool aliased_by_output = false;
    for (int o : g.outputs) aliased_by_output |= root_[static_cast<size_t>(o)] == static_cast<int>(v);
    if (aliased_by_output) continue;
    requests.push_back({value_bytes[v], def_step_[v], last_step_[v]});
    request_value.push_back(static_cast<int>(v));
  }
  MemoryPlan mp = PlanMemory(requests);
  for (size_t r = 0; r < requests.size(); ++r) {
    plan->offset[static_cast<size_t>(request_value[r])] = static_cast<int64_t>(mp.offsets[r]);
    plan->bytes[static_cast<size_t>(request_value[r])] = requests[r].bytes;
  }
  plan->arena_bytes = mp.arena_bytes;
  return plan;
}

std::shared_ptr<const Executor::Plan> Executor::StaticPlan() const {
  const Graph& g = *graph_;
  std::vector<size_t> bytes(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (def_step_[v] < 0) continue;
    const TensorType& t = g.values[v].type;
    if (!t.fully_known() || t.dtype == DType::kUndefined) return nullptr;
    if (t.dtype != DType::kString) bytes[v] = static_cast<size_t>(NumElements(t.ToShape())) * DTypeSize(t.dtype);
  }
  std::vector<Shape> key;
  for (int in : g.inputs) {
    // Every intermediate can be static while an input is not (e.g. a scalar loss of a symbolic batch).
    if (!g.values[static_cast<size_t>(in)].type.fully_known()) return nullptr;
    key.push_back(g.values[static_cast<size_t>(in)].type.ToShape());
  }
  auto plan = BuildPlan(bytes);
  plans_[key] = plan;
  return plan;
}

size_t Executor::planned_peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_plan_ ? last_plan_->arena_bytes : 0;
}

Executor::~Executor() = default;

// ---- A device with memory of its own ----------------------------------------------------------

struct Executor::DeviceState {
  std::vector<Tensor> device_constants;  // per value: the uploaded constant, for device readers
  std::mutex mu;
  std::vector<std::unique_ptr<RunStream>> free_streams;  // one per concurrent run, reused
  // Device nodes whose kernel refused a run (kUnsupported: a dtype its factory did not check) run
  // on the CPU from then on: per step, the CPU kernel (null until needed), owned by `cpu_kernels`.
  std::unique_ptr<std::atomic<const NodeRunner*>[]> cpu_instead;
  std::vector<std::unique_ptr<NodeRunner>> cpu_kernels;
  std::atomic<bool> any_cpu_instead{false};
  bool allow_runtime_fallback = false;  // ExecutorDevice::allow_runtime_fallback or ONEFLOW_CUDA_ALLOW_FALLBACK=1
  CudaFallbackStats fallbacks;          // guarded by mu (planned: set once at construction)
};

void Executor::InitDevice() {
  const Graph& g = *graph_;
  RunDevice& dev = *run_device_;
  device_state_ = std::make_shared<DeviceState>();
  DeviceState& ds = *device_state_;
  ds.allow_runtime_fallback = device_.allow_runtime_fallback || RuntimeFallbackAllowedByEnv();

  std::unique_ptr<RunStream> stream = dev.NewStream();
  {
    const auto scope = dev.EnterRun(*stream);  // the device is current while kernels are created
    // Device kernels where they exist; a factory refusing the node (a dtype, an attribute) means
    // CPU. A failed device call in a factory is the machine's or the build's problem, never a fallback.
    std::vector<std::unique_ptr<NodeRunner>> device_runners(g.nodes.size());
    for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
      try {
        device_runners[ni] = std::make_unique<NodeRunner>(g, g.nodes[ni], dev.type());
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported || dev.IsDeviceFailure(e)) throw;
      }
    }
    placement_ = PlaceGraph(g, [&](const Node& n) { return device_runners[static_cast<size_t>(&n - g.nodes.data())] != nullptr; });
    not_in_arena_.assign(g.values.size(), 0);
    for (size_t v = 0; v < g.values.size(); ++v) not_in_arena_[v] = !placement_.produced_on_device[v];
    BuildSteps(device_runners);
    // Planned fallbacks: counted for the session's stats and, when profiling, listed per op type.
    ds.fallbacks.planned = static_cast<size_t>(placement_.num_planned_fallbacks());
    if (OpProfilingEnabled())
      for (size_t ni = 0; ni < g.nodes.size(); ++ni)
        if (placement_.no_device_kernel[ni]) RecordCudaFallback(g.nodes[ni].op_type, g.nodes[ni].Describe(), true, "");
    ds.cpu_instead = std::make_unique<std::atomic<const NodeRunner*>[]>(steps_.size());
    for (size_t st = 0; st < steps_.size(); ++st) ds.cpu_instead[st].store(nullptr);

    // Constants (folded on the CPU by the optimizer) are uploaded once, for their device readers.
    ds.device_constants.resize(g.values.size());
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].constant.defined() && placement_.needed_on_device[v])
        ds.device_constants[v] = dev.ToDevice(g.values[v].constant, *stream);
    dev.Synchronize(*stream);
  }
  ds.free_streams.push_back(std::move(stream));
}

bool Executor::AnyRuntimeFallback() const { return device_state_ && device_state_->any_cpu_instead.load(); }

CudaFallbackStats Executor::cuda_fallbacks() const {
  if (!device_state_) return {};
  std::lock_guard<std::mutex> lock(device_state_->mu);
  return device_state_->fallbacks;
}

// ---- The run loop -------------------------------------------------------------------------------

namespace {

// Synchronizes a run's stream on scope exit, also when the run throws: its memory (arena, pooled
// blocks) must not be reused while queued device work may still touch it. A no-op on the host.
class SyncOnExit {
 public:
  SyncOnExit(RunDevice& dev, RunStream& stream) : dev_(dev), stream_(stream) {}
  ~SyncOnExit() { dev_.SynchronizeNoThrow(stream_); }
  SyncOnExit(const SyncOnExit&) = delete;
  SyncOnExit& operator=(const SyncOnExit&) = delete;

 private:
  RunDevice& dev_;
  RunStream& stream_;
};

}  // namespace

void Executor::InitSlots(Slots& slots) const {
  const Graph& g = *graph_;
  slots.host.assign(g.values.size(), Tensor());
  if (device_state_) slots.dev.assign(g.values.size(), Tensor());
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!g.values[v].constant.defined()) continue;
    slots.host[v] = g.values[v].constant;
    if (device_state_) slots.dev[v] = device_state_->device_constants[v];
  }
}

void Executor::RunSteps(Slots& slots, const Plan* plan, const std::shared_ptr<Storage>& arena, RunStream& stream,
                        std::vector<size_t>* observed, bool capturing) const {
  const Graph& g = *graph_;
  RunDevice& dev = *run_device_;
  DeviceState* ds = device_state_.get();  // null on the host: every value lives in slots.host
  std::vector<const Tensor*> inputs, infer_values;
  std::vector<Tensor> outputs;
  // Value v on the host (or the device), copied over when it is only on the other side.
  auto on_side = [&](size_t v, bool host) -> const Tensor* {
    if (!ds) return slots.host[v].defined() ? &slots.host[v] : nullptr;
    Tensor& to = host ? slots.host[v] : slots.dev[v];
    if (!to.defined()) {
      const Tensor& from = host ? slots.dev[v] : slots.host[v];
      if (!from.defined()) return nullptr;
      to = host ? dev.ToHost(from, stream) : dev.ToDevice(from, stream);
    }
    return &to;
  };
  // What the output allocator reads, behind one pointer: a lambda of at most two pointers fits in
  // std::function's inline buffer, so building the allocator allocates nothing.
  struct AllocState {
    const Node* node;
    bool on_host_instead;  // a step of a device run that runs on the CPU: host memory, no arena slot
    const Plan* plan;
    const std::shared_ptr<Storage>* arena;
    std::vector<size_t>* observed;
    RunDevice* dev;
    RunStream* stream;
  } st{nullptr, false, plan, &arena, observed, &dev, &stream};
  const OutputAllocator alloc = [s = &st](size_t i, DType dtype, const Shape& shape) -> Tensor {
    // Strings are constructed objects with their own storage, never an arena slot.
    if (s->on_host_instead || dtype == DType::kString) return Tensor::Uninitialized(dtype, shape);
    const size_t v = static_cast<size_t>(s->node->outputs[i]);
    const size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
    if (s->observed) (*s->observed)[v] = bytes;
    else if (s->plan && s->plan->offset[v] >= 0 && bytes <= s->plan->bytes[v])
      return Tensor(dtype, shape, *s->arena, static_cast<size_t>(s->plan->offset[v]));
    return s->dev->Empty(dtype, shape, *s->stream);
  };

  for (size_t step_index = 0; step_index < steps_.size(); ++step_index) {
    const Step& step = steps_[step_index];
    const Node& n = step.runner->node();
    const NodeRunner* runner = step.runner.get();
    if (ds) {
      if (const NodeRunner* cpu = ds->cpu_instead[step_index].load(std::memory_order_acquire)) runner = cpu;
      // The placement's copies for this step (a device feed or an earlier copy may make one moot).
      for (const DeviceCopy& t : placement_.transfers[step_index]) on_side(static_cast<size_t>(t.value), t.to_host);
    }
    // On the run's device (every step of a host run), or on the CPU instead (a device run's fallback).
    bool on_device = !ds || runner->device() != DeviceType::kCpu;
    const size_t ni = ds ? static_cast<size_t>(placement_.order[step_index]) : 0;
    auto gather = [&]() {
      inputs.assign(n.inputs.size(), nullptr);
      infer_values.assign(n.inputs.size(), nullptr);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (!n.has_input(i)) continue;
        const size_t v = static_cast<size_t>(n.inputs[i]);
        if (!ds) {
          inputs[i] = on_side(v, true);
        } else if (placement_.data_free_input[ni][i]) {  // only its shape is read
          inputs[i] = slots.dev[v].defined() ? &slots.dev[v] : slots.host[v].defined() ? &slots.host[v] : nullptr;
        } else {
          inputs[i] = on_side(v, !on_device || placement_.host_read_input[ni][i]);
        }
        // Inference reads values on the host only.
        infer_values[i] = !ds ? inputs[i] : slots.host[v].defined() ? &slots.host[v] : nullptr;
        OF_CHECK(inputs[i] != nullptr, kInternal, n.Describe(), ": input '", g.values[v].name, "' was not computed");
      }
    };
    gather();
    st.node = &n;
    st.on_host_instead = !on_device;
    try {
      runner->Run(inputs, infer_values, outputs, *pool_, alloc);
    } catch (const Error& e) {
      if (!ds || !on_device) throw;
      switch (ClassifyRunFailure(e.code(), dev.IsDeviceFailure(e), capturing, ds->allow_runtime_fallback)) {
        case RunFailureAction::kRethrow: throw;
        case RunFailureAction::kRefuse: throw RuntimeFallbackError(n, e.what());
        case RunFailureAction::kFallBack: break;
      }
      // The device kernel declined this node at run time and fallback is allowed: run its CPU
      // kernel, now and from now on (counted once per node).
      {
        std::lock_guard<std::mutex> lock(ds->mu);
        if (ds->cpu_instead[step_index].load() == nullptr) {
          ds->cpu_kernels.push_back(std::make_unique<NodeRunner>(g, n, DeviceType::kCpu, pool_));
          ds->cpu_instead[step_index].store(ds->cpu_kernels.back().get(), std::memory_order_release);
          ds->any_cpu_instead.store(true);
          ++ds->fallbacks.runtime;
          if (OpProfilingEnabled()) RecordCudaFallback(n.op_type, n.Describe(), false, e.what());
        }
        runner = ds->cpu_instead[step_index].load();
      }
      on_device = false;
      st.on_host_instead = true;
      gather();
      runner->Run(inputs, infer_values, outputs, *pool_, alloc);
    }
    // Results go to the side they were computed on; a stale copy on the other side is dropped.
    const bool to_dev = ds && on_device;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (n.outputs[i] == kNoValue) continue;
      const size_t v = static_cast<size_t>(n.outputs[i]);
      (to_dev ? slots.dev : slots.host)[v] = std::move(outputs[i]);
      if (ds) (to_dev ? slots.host : slots.dev)[v] = Tensor();
    }
    for (int v : step.free_after) {
      slots.host[static_cast<size_t>(v)] = Tensor();
      if (ds) slots.dev[static_cast<size_t>(v)] = Tensor();
    }
  }
}

std::vector<Tensor> Executor::Run(const std::vector<Tensor>& feeds) const { return Run(feeds, RunIo{}); }

std::vector<Tensor> Executor::Run(const std::vector<Tensor>& feeds, const RunIo& io) const {
  const Graph& g = *graph_;
  TraceScope trace("session", "run");  // the node slices of this run nest in it
  trace.Arg("graph", g.name).Arg("steps", steps_.size());
  OF_ASSERT(feeds.size() == g.inputs.size());
  RunDevice& dev = *run_device_;
  DeviceState* ds = device_state_.get();
  if (ds) {
    OF_REQUIRE(io.feed_on_device.empty() || io.feed_on_device.size() == feeds.size(),
               "feed_on_device has ", io.feed_on_device.size(), " entries for ", feeds.size(), " feeds");
  } else {
    bool device_feed = false;
    for (char d : io.feed_on_device) device_feed |= d != 0;
    OF_REQUIRE(!device_feed && !io.outputs_on_device,
               "device tensors were given to a session that runs on the CPU; create it on the CUDA device");
  }
  auto is_device_feed = [&](size_t i) { return !io.feed_on_device.empty() && io.feed_on_device[i] != 0; };

  std::vector<Shape> key;
  key.reserve(feeds.size());
  for (const Tensor& t : feeds) key.push_back(t.shape());

  std::vector<Tensor> results;
  if (cuda_graphs_ && RunCudaGraph(feeds, io, key, results)) {
    trace.Arg("cuda_graph", "replayed");  // one launch: no node slices
    return results;
  }

  // The run's stream (reused across runs) and its scope on the device.
  std::unique_ptr<RunStream> stream;
  if (ds) {
    std::lock_guard<std::mutex> lock(ds->mu);
    if (!ds->free_streams.empty()) {
      stream = std::move(ds->free_streams.back());
      ds->free_streams.pop_back();
    }
  }
  if (!stream) stream = dev.NewStream();
  const std::unique_ptr<RunDevice::RunScope> scope = dev.EnterRun(*stream);

  // The memory plan of these input shapes, once a run has measured them, and an arena for it.
  std::shared_ptr<const Plan> plan;
  std::shared_ptr<Storage> arena;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      plan = it->second;
      last_plan_ = plan;
      for (size_t i = 0; i < free_arenas_.size(); ++i) {
        if (free_arenas_[i]->bytes() >= plan->arena_bytes) {
          arena = free_arenas_[i];
          free_arenas_.erase(free_arenas_.begin() + static_cast<long>(i));
          break;
        }
      }
    }
  }
  if (plan && !arena) arena = dev.AllocateArena(plan->arena_bytes, *stream);

  std::vector<size_t> observed;  // recorded on a run without a plan, to build one
  if (!plan) observed.assign(g.values.size(), 0);
  {
    Slots slots;
    SyncOnExit sync(dev, *stream);  // destroyed before the slots and the arena are let go
    InitSlots(slots);
    for (size_t i = 0; i < feeds.size(); ++i) {
      const size_t v = static_cast<size_t>(g.inputs[i]);
      if (is_device_feed(i)) {
        slots.dev[v] = feeds[i];
        // DevicePlacement assumes host feeds; a device feed that the host reads is copied now.
        if (placement_.needed_on_host[v]) slots.host[v] = dev.ToHost(feeds[i], *stream);
      } else {
        slots.host[v] = feeds[i];
      }
    }
    RunSteps(slots, plan.get(), arena, *stream, plan ? nullptr : &observed, false);

    results.reserve(g.outputs.size());
    for (int ov : g.outputs) {
      const size_t v = static_cast<size_t>(ov);
      static const Tensor kNone;
      const Tensor& d = ds ? slots.dev[v] : kNone;
      const Tensor& h = slots.host[v];
      OF_CHECK(d.defined() || h.defined(), kInternal, "output '", g.values[v].name, "' was not computed");
      // Never hand out engine memory (arena slots, constants) or the caller's feeds (an output
      // that is a view of an input must not change when the caller reuses the input): clone those.
      const bool from_device = io.outputs_on_device ? d.defined() : !h.defined();
      const Tensor& src = from_device ? d : h;
      bool engine_owned = (arena && src.storage() == arena) ||
                          g.values[static_cast<size_t>(root_[v])].constant.defined();
      for (const Tensor& f : feeds) engine_owned |= SameStorage(src, f);
      if (from_device) {
        if (!io.outputs_on_device) results.push_back(dev.ToHost(d, *stream));
        else results.push_back(engine_owned ? dev.CopyOnDevice(d, *stream) : d);
      } else {
        if (io.outputs_on_device) results.push_back(dev.ToDevice(h, *stream));
        else results.push_back(engine_owned ? h.Clone() : h);
      }
    }
  }
  dev.VerifyRun(*scope, *stream);  // kernels' checks of device data, once the stream is done

  std::lock_guard<std::mutex> lock(mutex_);
  if (!plan) {
    auto built = BuildPlan(observed);
    // Dynamic shapes could grow the cache without bound; keep the most useful few.
    if (plans_.size() >= kMaxCachedPlans) plans_.erase(plans_.begin());
    plans_[key] = built;
    last_plan_ = built;
  } else if (arena) {
    free_arenas_.push_back(std::move(arena));
  }
  if (ds) {
    std::lock_guard<std::mutex> stream_lock(ds->mu);
    ds->free_streams.push_back(std::move(stream));
  }
  return results;
}

}  // namespace oneflow
