// Executor implementation.
#include "engine/executor.h"

#include <algorithm>
#include <cstring>

namespace oneflow {

Executor::Executor(std::shared_ptr<const Graph> graph, int num_threads)
    : Executor(std::move(graph), std::make_shared<ThreadPool>(num_threads)) {}

Executor::Executor(std::shared_ptr<const Graph> graph, std::shared_ptr<ThreadPool> pool)
    : Executor(std::move(graph), std::move(pool), ExecutorDevice{}) {}

Executor::Executor(std::shared_ptr<const Graph> graph, int num_threads, const ExecutorDevice& device)
    : Executor(std::move(graph), std::make_shared<ThreadPool>(num_threads), device) {}

Executor::Executor(std::shared_ptr<const Graph> graph, std::shared_ptr<ThreadPool> pool, const ExecutorDevice& device)
    : graph_(std::move(graph)), pool_(std::move(pool)), device_(device) {
  if (device.type == DeviceType::kCpu) {
    OF_REQUIRE(device.index == 0, "CPU device index must be 0, got ", device.index);
    std::vector<std::unique_ptr<NodeRunner>> no_device_runners;
    BuildSteps(no_device_runners);
  } else {
    InitCuda();  // places the nodes, then BuildSteps with the device kernels
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
    else step.runner = std::make_unique<NodeRunner>(g, n);
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
    bytes[v] = static_cast<size_t>(NumElements(t.ToShape())) * DTypeSize(t.dtype);
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

std::vector<Tensor> Executor::Run(const std::vector<Tensor>& feeds, const RunIo& io) const {
  if (cuda_) return RunCuda(feeds, io);
  bool device_feed = false;
  for (char d : io.feed_on_device) device_feed |= d != 0;
  OF_REQUIRE(!device_feed && !io.outputs_on_device,
             "device tensors were given to a session that runs on the CPU; create it on the CUDA device");
  return Run(feeds);
}

std::vector<Tensor> Executor::Run(const std::vector<Tensor>& feeds) const {
  if (cuda_) return RunCuda(feeds, RunIo{});
  const Graph& g = *graph_;
  OF_ASSERT(feeds.size() == g.inputs.size());
  std::vector<Shape> key;
  key.reserve(feeds.size());
  for (const Tensor& t : feeds) key.push_back(t.shape());

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
  if (plan && !arena) arena = Storage::AllocateUninitialized(plan->arena_bytes);

  std::vector<Tensor> slots(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant.defined()) slots[v] = g.values[v].constant;
  for (size_t i = 0; i < feeds.size(); ++i) slots[static_cast<size_t>(g.inputs[i])] = feeds[i];

  std::vector<size_t> observed_bytes;  // recorded on a run without a plan, to build one
  if (!plan) observed_bytes.assign(g.values.size(), 0);

  std::vector<const Tensor*> inputs;
  std::vector<Tensor> outputs;
  // What the output allocator reads, behind one pointer: a lambda of at most two pointers fits in
  // std::function's inline buffer, so building one per step allocates nothing.
  struct AllocState {
    const Node* node;
    const Plan* plan;
    const std::shared_ptr<Storage>* arena;
    std::vector<size_t>* observed_bytes;
  } st{nullptr, plan.get(), &arena, &observed_bytes};
  const OutputAllocator alloc = [s = &st](size_t i, DType dtype, const Shape& shape) -> Tensor {
    size_t v = static_cast<size_t>(s->node->outputs[i]);
    size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
    if (!s->plan) (*s->observed_bytes)[v] = bytes;
    else if (s->plan->offset[v] >= 0 && bytes <= s->plan->bytes[v])
      return Tensor(dtype, shape, *s->arena, static_cast<size_t>(s->plan->offset[v]));
    return Tensor::Uninitialized(dtype, shape);
  };
  for (const Step& step : steps_) {
    const Node& n = step.runner->node();
    st.node = &n;
    inputs.clear();
    for (int v : n.inputs) {
      if (v == kNoValue) { inputs.push_back(nullptr); continue; }
      const Tensor& t = slots[static_cast<size_t>(v)];
      OF_CHECK(t.defined(), kInternal, n.Describe(), ": input '", g.values[static_cast<size_t>(v)].name,
               "' was not computed");
      inputs.push_back(&t);
    }
    step.runner->Run(inputs, outputs, *pool_, alloc);
    for (size_t i = 0; i < n.outputs.size(); ++i)
      if (n.outputs[i] != kNoValue) slots[static_cast<size_t>(n.outputs[i])] = std::move(outputs[i]);
    for (int v : step.free_after) slots[static_cast<size_t>(v)] = Tensor();
  }

  std::vector<Tensor> results;
  results.reserve(g.outputs.size());
  for (int v : g.outputs) {
    Tensor t = slots[static_cast<size_t>(v)];
    OF_CHECK(t.defined(), kInternal, "output '", g.values[static_cast<size_t>(v)].name, "' was not computed");
    // Never hand out engine-owned bytes: constants and arena slots are cloned, inputs too
    // (an output that is a view of an input must not change when the caller reuses the input).
    bool engine_owned = (arena && t.storage() == arena) || g.values[static_cast<size_t>(root_[static_cast<size_t>(v)])].constant.defined();
    for (const Tensor& f : feeds) engine_owned |= t.storage() == f.storage();
    results.push_back(engine_owned ? t.Clone() : t);
  }

  std::lock_guard<std::mutex> lock(mutex_);
  if (!plan) {
    auto built = BuildPlan(observed_bytes);
    // Dynamic shapes could grow the cache without bound; keep the most useful few.
    if (plans_.size() >= kMaxCachedPlans) plans_.erase(plans_.begin());
    plans_[key] = built;
    last_plan_ = built;
  } else if (arena) {
    free_arenas_.push_back(std::move(arena));
  }
  return results;
}

}  // namespace oneflow
