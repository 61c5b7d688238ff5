// DistributedSession: compiles a plan into per-device executors and runs them on threads.
#include "engine/distributed_session.h"

#include <algorithm>
#include <atomic>

#include "base/error.h"
#include "base/file_pages.h"

namespace oneflow {

void CheckSameModel(Communicator& comm, uint64_t graph_hash, const std::vector<int>& group) {
  std::vector<uint64_t> all(group.size());
  comm.AllGather(&graph_hash, all.data(), std::vector<size_t>(group.size(), sizeof(uint64_t)), group);
  std::string differ;
  for (size_t i = 1; i < group.size(); ++i)
    if (all[i] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(group[i]);
  OF_REQUIRE(differ.empty(), "rank(s) ", differ, " planned a different model than rank ", group[0],
             " (graph hashes differ): every rank must load the same model and weights, with the same placement and plan "
             "mode");
}

// The devices this process runs (all of them in-process; its own rank with Gloo), per slot.
struct DistributedSession::Compiled {
  std::shared_ptr<Plan> plan;
  LocalDevices devices;
  std::vector<std::string> keys;                     // registry keys, per slot
  std::vector<std::unique_ptr<Executor>> executors;  // per slot
  std::vector<std::shared_ptr<Graph>> graphs;        // per slot
  std::mutex run_mutex;
  bool checked = false;
  ~Compiled() {
    executors.clear();
    for (const std::string& k : keys) UnregisterCommunicator(k);
  }
};

static int DevicesNeeded(const Placement& p) { return *std::max_element(p.devices.begin(), p.devices.end()) + 1; }

std::shared_ptr<ThreadPool> DevicePool(const DistributedOptions& dist, size_t local_devices) {
  if (dist.shared_pool && local_devices == 1) return dist.shared_pool;
  return std::make_shared<ThreadPool>(dist.threads_per_device);
}

std::shared_ptr<Communicator> ResolveDistributedOptions(DistributedOptions& dist) {
  const Placement& P = dist.plan.placement;
  OF_REQUIRE(!P.empty(), "a distributed session needs a placement");
  OF_REQUIRE(P.device == "cpu", "CPU devices only so far; placement '", P.ToString(), "' asks for ", P.device);
  OF_REQUIRE(dist.backend == "in-process" || dist.backend == "gloo", "unknown communication backend '",
             dist.backend, "' (in-process or gloo)");
  std::shared_ptr<Communicator> process_comm;
  if (dist.backend == "gloo") {
    process_comm = CreateGlooCommunicatorFromEnv(dist.timeout_ms);
    dist.num_devices = process_comm->world_size();
    OF_REQUIRE(std::find(P.devices.begin(), P.devices.end(), process_comm->rank()) != P.devices.end(), "rank ",
               process_comm->rank(), " is not in placement ", P.ToString(), "; every rank must hold a device of it");
  }
  if (dist.num_devices == 0) dist.num_devices = DevicesNeeded(P);
  OF_REQUIRE(dist.num_devices >= 1 && dist.num_devices <= 4096, "num_devices must be in [1, 4096], got ",
             dist.num_devices);
  P.CheckDevicesExist(dist.num_devices);
  dist.plan.available_devices = dist.num_devices;
  OF_REQUIRE(dist.threads_per_device >= 1 && dist.threads_per_device <= 256,
             "threads_per_device must be in [1, 256], got ", dist.threads_per_device);
  return process_comm;
}

DistributedSession::DistributedSession(const Graph& model, const SessionOptions& options, DistributedOptions dist)
    : model_(model), options_(options), dist_(std::move(dist)) {
  process_comm_ = ResolveDistributedOptions(dist_);
  static std::atomic<uint64_t> counter{0};
  id_ = "session" + std::to_string(counter++);
}

DistributedSession::~DistributedSession() = default;

namespace {

// The byte ranges of every tensor `g` holds (constants and tensor attributes).
void CollectTensorRanges(const Graph& g, std::vector<std::pair<uintptr_t, uintptr_t>>& out) {
  auto add = [&](const Tensor& t) {
    if (t.defined() && t.nbytes() > 0) {
      auto p = reinterpret_cast<uintptr_t>(t.raw());
      out.emplace_back(p, p + t.nbytes());
    }
  };
  for (const Value& v : g.values) add(v.constant);
  for (const Node& n : g.nodes)
    for (const auto& [name, a] : n.attrs.all()) {
      if (a.kind == AttrKind::kTensor) add(a.t);
      if (a.kind == AttrKind::kGraph && a.graph) CollectTensorRanges(*a.graph, out);  // a subgraph's constants
    }
}

// Gives back the file-mapped pages of `sources`' tensors that none of `kept`'s tensors view.
size_t ReleaseUnusedWeightPages(const std::vector<const Graph*>& sources, const std::vector<const Graph*>& kept) {
  std::vector<std::pair<uintptr_t, uintptr_t>> in_use, candidates;
  for (const Graph* g : kept) CollectTensorRanges(*g, in_use);
  for (const Graph* g : sources) CollectTensorRanges(*g, candidates);
  size_t released = 0;
  for (const auto& [begin, end] : candidates) {
    bool viewed = false;
    for (const auto& [b, e] : in_use) viewed = viewed || (b < end && begin < e);
    if (!viewed) released += ReleaseFilePages(reinterpret_cast<const void*>(begin), end - begin);
  }
  return released;
}

}  // namespace

std::shared_ptr<DistributedSession::Compiled> DistributedSession::Compile(
    const std::map<std::string, Shape>& input_shapes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache_.find(input_shapes);
  if (it != cache_.end()) return it->second;
  auto c = std::make_shared<Compiled>();
  PlanOptions po = dist_.plan;
  po.input_shapes = input_shapes;
  c->plan = std::make_shared<Plan>(MakePlan(model_, po));
  const Placement& P = po.placement;
  std::string plan_id = id_ + "/plan" + std::to_string(cache_.size());
  c->devices = MakeLocalDevices(P, dist_.num_devices, dist_.timeout_ms, process_comm_);
  for (size_t slot = 0; slot < c->devices.size(); ++slot) {
    c->keys.push_back(plan_id + "/rank" + std::to_string(c->devices.rank(slot)));
    RegisterCommunicator(c->keys.back(), c->devices.comms[slot]);
  }
  ThreadPool fold_pool(1);
  for (size_t slot = 0; slot < c->devices.size(); ++slot) {
    auto g = std::make_shared<Graph>(BuildPhysicalGraph(*c->plan, c->devices.positions[slot], c->keys[slot]));
    OptimizeForDevice(*g, options_.optimization_level, fold_pool);
    c->graphs.push_back(g);
    c->executors.push_back(std::make_unique<Executor>(g, DevicePool(dist_, c->devices.size())));
  }
  if (dist_.release_model_pages) {
    // Shard-on-read: the devices hold their own slices now (BuildPhysicalGraph copies them), so
    // the model's file-mapped weights are only read again to plan other input shapes.
    std::vector<const Graph*> kept;
    for (const auto& g : c->graphs) kept.push_back(g.get());
    ReleaseUnusedWeightPages({&model_, &c->plan->logical}, kept);
  }
  if (cache_.size() < 16) cache_[input_shapes] = c;
  return c;
}

std::shared_ptr<const Plan> DistributedSession::PlanFor(const std::map<std::string, Shape>& input_shapes) const {
  return Compile(input_shapes)->plan;
}

std::vector<std::pair<std::string, Tensor>> DistributedSession::Run(
    const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches) const {
  const Graph& g = model_;
  std::vector<Tensor> ordered(g.inputs.size());
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : feeds) {
    size_t slot = g.inputs.size();
    for (size_t i = 0; i < g.inputs.size(); ++i)
      if (g.values[static_cast<size_t>(g.inputs[i])].name == name) slot = i;
    OF_CHECK(slot < g.inputs.size(), kNotFound, "the model has no input named '", name, "'");
    OF_REQUIRE(t.defined(), "input '", name, "' is an empty tensor handle");
    const TensorType& decl = g.values[static_cast<size_t>(g.inputs[slot])].type;
    OF_REQUIRE(decl.dtype == DType::kUndefined || decl.dtype == t.dtype(), "input '", name, "' has dtype ",
               DTypeName(t.dtype()), ", the model expects ", DTypeName(decl.dtype));
    ordered[slot] = t;
    shapes[name] = t.shape();
  }
  for (size_t i = 0; i < g.inputs.size(); ++i)
    OF_REQUIRE(ordered[i].defined(), "input '", g.values[static_cast<size_t>(g.inputs[i])].name, "' was not fed");
  std::shared_ptr<Compiled> c = Compile(shapes);
  const Plan& plan = *c->plan;

  std::lock_guard<std::mutex> lock(c->run_mutex);
  std::vector<std::vector<Tensor>> results(c->devices.size());
  std::vector<int> group = plan.options.placement.devices;
  const bool check = !c->checked;
  try {
    RunOnDevices(c->devices, [&](size_t slot) {
      if (check) CheckSameModel(*c->devices.comms[slot], plan.graph_hash, group);
      std::vector<Tensor> local;
      for (size_t i = 0; i < ordered.size(); ++i)
        local.push_back(LocalFeed(plan, i, c->devices.positions[slot], ordered[i]));
      results[slot] = c->executors[slot]->Run(local);
    });
  } catch (...) {
    // A failed run leaves the in-process group aborted: drop this compilation so the next run starts fresh.
    std::lock_guard<std::mutex> cache_lock(mutex_);
    cache_.erase(shapes);
    throw;
  }
  c->checked = true;

  std::vector<std::pair<std::string, Tensor>> out;
  const Graph& pg = *c->graphs[0];
  auto fetch = [&](size_t i) {
    out.emplace_back(pg.values[static_cast<size_t>(pg.outputs[i])].name, results[0][i]);
  };
  if (fetches.empty()) {
    for (size_t i = 0; i < pg.outputs.size(); ++i) fetch(i);
  } else {
    for (const std::string& name : fetches) {
      size_t i = 0;
      while (i < pg.outputs.size() && pg.values[static_cast<size_t>(pg.outputs[i])].name != name) ++i;
      OF_CHECK(i < pg.outputs.size(), kNotFound, "the model has no output named '", name, "'");
      fetch(i);
    }
  }
  return out;
}

}  // namespace oneflow
