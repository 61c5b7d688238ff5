// The planned training strategy: one plan of the whole forward + backward graph over the
// placement. Each weight has one SBP (B: data parallel; S: tensor parallel); its gradient leaves
// the physical graph as this device's partial sum and is all-reduced here in buckets over the
// devices that hold the same block (or, ZeRO-2, reduce-scattered); the optimizer then updates
// this device's block, or under ZeRO its 1/n slice, which is all-gathered back.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "base/hash.h"
#include "base/trace.h"
#include "engine/device_group.h"
#include "engine/session.h"
#include "train/auto_layouts.h"
#include "train/distributed_trainer.h"
#include "train/optimizer.h"
#include "train/step_estimate.h"
#include "train/tensor_parallel.h"
#include "train/training_graph.h"

namespace oneflow::train {

namespace {

// The ZeRO slice of a flat block of `n` elements held by member `r` of `m` (sbp.h's slice rule).
std::pair<int64_t, int64_t> FlatSlice(int64_t n, int64_t m, int64_t r) {
  const int64_t q = n / m, rem = n % m;
  return {r * q + std::min(r, rem), q + (r < rem ? 1 : 0)};
}

// The sum of squares in float lanes over blocks of 4096, the blocks added in double: vectorized,
// and a NaN or Inf anywhere makes it non-finite.
double SumOfSquares(const float* g, int64_t n) {
  double total = 0;
  for (int64_t b = 0; b < n; b += 4096) {
    const int64_t e = std::min(n, b + 4096);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = b;
    for (; i + 8 <= e; i += 8)
      for (int k = 0; k < 8; ++k) acc[k] += g[i + k] * g[i + k];
    float s = 0;
    for (int k = 0; k < 8; ++k) s += acc[k];
    for (; i < e; ++i) s += g[i] * g[i];
    total += s;
  }
  return total;
}

// One weight as one device holds it.
struct LocalParam {
  Tensor value;               // the device's block of the weight (its SBP's local shape)
  Tensor grad;                // the reduced gradient: the whole block, or the ZeRO-2 slice
  std::vector<Tensor> state;  // optimizer state: for the block, or for the ZeRO slice
  std::vector<int> group;     // ranks whose partial gradients this device adds (empty: none)
  int64_t slice_start = 0, slice_size = -1;  // the ZeRO slice of the flat block (-1: the whole block)
};

// A plan compiled for one set of input shapes: per slot, a physical graph and its executor.
struct Compiled {
  std::shared_ptr<Plan> plan;
  std::vector<std::shared_ptr<Graph>> graphs;
  std::vector<std::unique_ptr<Executor>> executors;
  // Per slot, per physical input: the logical input index it takes a block of, or -(k+1) for weight k.
  std::vector<std::vector<int>> sources;
  std::vector<std::vector<std::vector<int>>> groups;  // per slot, per weight: deferred reduce group (ranks)
};

class PlannedTrainer final : public DistributedTrainer {
 public:
  PlannedTrainer(const Graph& model, const DistributedTrainingOptions& options);
  ~PlannedTrainer() override {
    cache_.clear();
    eval_cache_.clear();
    for (const std::string& k : keys_) UnregisterCommunicator(k);
  }

  const Graph& interface_graph() const override { return t_.interface; }
  TrainStepResult TrainStep(const std::vector<std::pair<std::string, Tensor>>& feeds) override;
  std::vector<std::pair<std::string, Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                  const std::vector<std::string>& fetches) override;
  const std::vector<std::string>& parameter_names() const override { return names_; }
  Tensor GetParameter(const std::string& name) override;
  int64_t step() const override { return step_; }
  void Prepare(const std::map<std::string, Shape>& input_shapes) override {
    const Graph& I = t_.interface;
    for (int v : I.inputs)
      OF_REQUIRE(input_shapes.count(I.values[static_cast<size_t>(v)].name), "a shape for input '",
                 I.values[static_cast<size_t>(v)].name, "' is needed (the labels too)");
    for (const auto& [name, shape] : input_shapes) {
      int v = I.FindValue(name);
      OF_CHECK(v != kNoValue && std::find(I.inputs.begin(), I.inputs.end(), v) != I.inputs.end(), kNotFound,
               "the trainer has no input named '", name, "'");
    }
    Guarded([&] { last_ = Compile(input_shapes, true); });
  }
  std::string Explain(bool json) const override;
  // Auto mode, before the first step: every layout's estimate for these shapes; then one adopted.
  std::vector<LayoutCandidate> EvaluateLayouts(const std::map<std::string, Shape>& shapes);
  void AdoptLayout(size_t index, const std::map<std::string, Shape>& shapes, const std::string& report);

 private:
  std::map<std::string, Shape> CheckFeeds(const std::vector<std::pair<std::string, Tensor>>& feeds, bool train,
                                          std::map<std::string, Tensor>& named) const;
  PlanOptions Options(const std::map<std::string, Shape>& shapes, bool train) const;
  std::shared_ptr<Compiled> Compile(const std::map<std::string, Shape>& shapes, bool train);
  // Auto mode: a weight layout (with the inputs free or batch split) the search considers.
  struct Layout {
    std::string label;
    Placement placement;
    std::vector<NdSbp> weights;
    int tp_axis;  // -1: data parallel
    bool free_inputs = true;
  };
  void Configure(const Layout& l, const std::map<std::string, Shape>& shapes);
  double UpdateSeconds(const std::vector<NdSbp>& weights, const Placement& P) const;
  std::vector<NdSbp> ShardedAtRest(const Placement& P) const;  // ZeRO-3's weight layout
  void LayOutWeights();                          // each device's block of every weight, once
  void AssignReduceGroups(const Compiled& train);  // gradient groups, ZeRO slices, gradient and state tensors
  std::vector<Tensor> LocalInputs(const Compiled& c, size_t slot, const std::map<std::string, Tensor>& named) const;
  void ReduceGradients(size_t slot, std::vector<Tensor>& grads);
  template <typename F> void Guarded(F&& f);

  DistributedTrainingOptions opts_;
  TrainingGraph t_;
  Graph train_graph_, eval_graph_;  // logical: data inputs + weights -> loss + gradients / model outputs
  std::vector<std::string> names_;
  std::shared_ptr<Communicator> process_comm_;
  LocalDevices devices_;
  std::vector<std::string> keys_;
  std::vector<std::shared_ptr<ThreadPool>> pools_;
  std::vector<NdSbp> sbp_;  // per weight
  bool layout_decided_ = false;
  std::vector<Layout> layouts_;  // auto mode: as EvaluateLayouts listed them
  PlanOptions given_plan_;       // auto mode: the options as given, which each layout adjusts
  std::string layout_report_;
  std::vector<std::vector<LocalParam>> params_;  // per slot, per weight (empty until laid out)
  std::vector<std::vector<float>> buckets_;      // per slot: packs small gradients for one all-reduce
  bool groups_ready_ = false;                    // set by the first training compilation
  uint64_t weights_hash_ = 0;                    // of the initial weights, for CheckSameModel
  std::map<std::map<std::string, Shape>, std::shared_ptr<Compiled>> cache_, eval_cache_;
  std::shared_ptr<Compiled> last_;
  int64_t step_ = 0;
  bool broken_ = false;
  std::string broken_why_;
};

PlannedTrainer::PlannedTrainer(const Graph& model, const DistributedTrainingOptions& options) : opts_(options) {
  const TrainingOptions& to = opts_.training;
  OF_REQUIRE(!to.activation_checkpointing, "activation checkpointing is not supported by distributed training yet");
  OF_CHECK(!(to.precision == Precision::kFloat16 && to.loss_scale.enabled), kUnsupported,
           "f16 training with dynamic loss scaling is not supported by distributed training yet: use bf16, or "
           "disable loss scaling");
  OF_REQUIRE(opts_.zero_stage >= 0 && opts_.zero_stage <= 3, "zero_stage must be 0, 1, 2 or 3, got ", opts_.zero_stage);
  OF_REQUIRE(opts_.zero_stage != 3 || opts_.dist.plan.mode != PlanMode::kManual,
             "ZeRO-3 lays out the weights itself (sharded on dim 0, gathered where used): use plan mode data, or "
             "auto (which considers that layout); manual annotations choose tensor parallelism instead");
  OF_REQUIRE(opts_.bucket_bytes > 0, "bucket_bytes must be positive");
  OF_REQUIRE(opts_.max_states >= 1, "max_states must be positive");
  ValidateOptimizerConfig(to.optimizer);
  ValidateLrSchedule(to.schedule);
  OF_REQUIRE(std::isfinite(to.max_grad_norm), "max_grad_norm must be finite");
  t_ = BuildTrainingGraph(model, to);
  for (int v : t_.params) names_.push_back(t_.name(v));

  // The graph a step runs: the loss and every gradient (the model's outputs are not fetched).
  train_graph_ = t_.graph;
  train_graph_.outputs = {t_.loss};
  for (int v : t_.gradients) train_graph_.outputs.push_back(v);
  // The graph Run evaluates: the model with its weights as inputs.
  eval_graph_ = model;
  for (const std::string& n : names_) {
    int v = eval_graph_.FindValue(n);
    eval_graph_.values[static_cast<size_t>(v)].constant = Tensor();
    eval_graph_.inputs.push_back(v);
  }

  process_comm_ = ResolveDistributedOptions(opts_.dist);
  devices_ = MakeLocalDevices(opts_.dist.plan.placement, opts_.dist.num_devices, opts_.dist.timeout_ms, process_comm_);
  given_plan_ = opts_.dist.plan;
  static int counter = 0;
  const std::string id = "trainer" + std::to_string(counter++);
  for (size_t s = 0; s < devices_.size(); ++s) {
    keys_.push_back(id + "/rank" + std::to_string(devices_.rank(s)));
    RegisterCommunicator(keys_.back(), devices_.comms[s]);
    pools_.push_back(DevicePool(opts_.dist, devices_.size()));
  }
  buckets_.resize(devices_.size());

  const int nd = opts_.dist.plan.placement.ndim();
  if (opts_.dist.plan.mode != PlanMode::kAuto) {
    const std::vector<NdSbp> sharded = ShardedAtRest(opts_.dist.plan.placement);
    size_t shards = 0;
    for (size_t k = 0; k < names_.size(); ++k) {
      auto it = opts_.dist.plan.sbp.find(names_[k]);
      if (it != opts_.dist.plan.sbp.end()) sbp_.push_back(it->second);
      else sbp_.push_back(opts_.zero_stage == 3 ? sharded[k] : AllBroadcast(nd));
      shards += sbp_.back() != AllBroadcast(nd);
    }
    layout_decided_ = true;
    layout_report_ = opts_.dist.plan.mode == PlanMode::kManual ? "weights as annotated (B where not)"
                     : opts_.zero_stage == 3 ? "data parallel, weights sharded on dim 0 at rest and gathered where "
                                               "used: " + std::to_string(shards) + " of " + std::to_string(names_.size()) +
                                               (shards < names_.size() ? " weights (the rest B: dim 0 too small)" : " weights")
                                             : "data parallel: every weight B";
  }
}

// ZeRO-3's layout of every weight over `P`: split on dim 0 over every placement axis (nested) where
// that dim has a row for every device, else B. In data mode the plan reads weights as B, so each
// use all-gathers the shards, and each gradient, returned in its weight's SBP, is reduce-scattered.
std::vector<NdSbp> PlannedTrainer::ShardedAtRest(const Placement& P) const {
  std::vector<NdSbp> out;
  for (size_t k = 0; k < names_.size(); ++k) {
    NdSbp s(static_cast<size_t>(P.ndim()), Sbp::S(0));
    const Shape& shape = t_.initial[k].shape();
    if (shape.empty() || !SbpMisfit(shape, s, P.hierarchy).empty()) s = AllBroadcast(P.ndim());
    out.push_back(s);
  }
  return out;
}

template <typename F>
void PlannedTrainer::Guarded(F&& f) {
  OF_CHECK(!broken_, kRuntime, "the distributed trainer stopped after an earlier failure (", broken_why_,
           "); create a new one");
  try {
    f();
  } catch (const Error& e) {
    // A failure inside a step may leave devices at different points of a collective and weights
    // partly updated on some: nothing can continue consistently.
    broken_ = true;
    broken_why_ = e.what();
    throw;
  }
}

std::map<std::string, Shape> PlannedTrainer::CheckFeeds(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                        bool train, std::map<std::string, Tensor>& named) const {
  const Graph& I = t_.interface;
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : feeds) {
    int decl = I.FindValue(name);
    bool is_input = std::find(I.inputs.begin(), I.inputs.end(), decl) != I.inputs.end();
    OF_CHECK(is_input, kNotFound, "the trainer has no input named '", name, "'");
    OF_REQUIRE(!named.count(name), "input '", name, "' is given twice");
    OF_REQUIRE(t.defined(), "input '", name, "' is an empty tensor handle");
    const TensorType& type = I.values[static_cast<size_t>(decl)].type;
    OF_REQUIRE(type.dtype == DType::kUndefined || t.dtype() == type.dtype, "input '", name, "' has dtype ",
               DTypeName(t.dtype()), ", the model expects ", DTypeName(type.dtype));
    OF_REQUIRE(!type.has_rank || type.rank() == t.rank(), "input '", name, "' has shape ", ShapeToString(t.shape()),
               ", the model expects ", type.ToString());
    named[name] = t;
    shapes[name] = t.shape();
  }
  const Graph& g = train ? train_graph_ : eval_graph_;
  for (int v : g.inputs) {
    const std::string& name = g.values[static_cast<size_t>(v)].name;
    if (std::find(names_.begin(), names_.end(), name) != names_.end()) continue;
    OF_REQUIRE(named.count(name), "input '", name, "' is missing", train ? " (a training step needs every input, the labels too)" : "");
  }
  if (!train)  // eval plans only see the inputs the model reads
    for (auto it = shapes.begin(); it != shapes.end();)
      it = eval_graph_.FindValue(it->first) == kNoValue ? shapes.erase(it) : std::next(it);
  return shapes;
}

PlanOptions PlannedTrainer::Options(const std::map<std::string, Shape>& shapes, bool train) const {
  PlanOptions po = opts_.dist.plan;
  po.input_shapes = shapes;
  po.max_states = opts_.max_states;
  // Annotations of the labels (or other training-only values) do not apply to the eval graph.
  const Graph& g = train ? train_graph_ : eval_graph_;
  for (auto it = po.sbp.begin(); it != po.sbp.end();)
    it = g.FindValue(it->first) == kNoValue && t_.graph.FindValue(it->first) != kNoValue ? po.sbp.erase(it) : std::next(it);
  for (size_t k = 0; k < names_.size(); ++k) {
    po.sbp[names_[k]] = sbp_[k];
    if (train) {
      po.output_sbp[t_.name(t_.gradients[k])] = sbp_[k];
      po.reduce_outputs.insert(t_.name(t_.gradients[k]));
    }
  }
  if (train) {
    po.optimizer_states = static_cast<int>(OptimizerStateNames(opts_.training.optimizer).size());
    po.zero_stage = opts_.zero_stage;
  }
  return po;
}

// Auto mode: the weight layouts considered are data parallel and the column/row tensor-parallel
// layout on each placement axis (data parallel on the others), and for a 1-D placement of a
// composite device count also its 2-D views (data x tensor). Each is planned over the whole
// training graph twice, with the inputs free and with the hand plans' input layout (batch split
// on the data axes); the search chooses every activation's SBP and pays every collective, the
// gradients' included; the optimizer update is added (train/step_estimate.h). The auto trainer
// (auto_trainer.cc) compares them with pipeline layouts and adopts one.
std::vector<LayoutCandidate> PlannedTrainer::EvaluateLayouts(const std::map<std::string, Shape>& shapes) {
  const Placement given = opts_.dist.plan.placement;
  std::vector<Placement> views{given};
  if (given.ndim() == 1)
    for (int64_t a = 2; a * a <= given.size(); ++a)
      if (given.size() % a == 0) {
        Placement v = given;
        v.hierarchy = {a, given.size() / a};
        views.push_back(v);
      }
  const std::map<std::string, Sbp> tp = ColumnRowLayout(t_.graph);
  std::vector<Layout> weights;
  for (const Placement& P : views) {
    const int nd = P.ndim();
    const std::string where = " on " + P.ToString() + (P.ndim() > 1 ? " (as " + std::to_string(P.hierarchy[0]) + "x" +
                                                                       std::to_string(P.hierarchy[1]) + ")" : "");
    if (P.ndim() == 1) {
      weights.push_back({"data parallel" + where, P, std::vector<NdSbp>(names_.size(), AllBroadcast(nd)), -1});
      // ZeRO-3's storage: every weight split on dim 0 (B where too small); the search chooses
      // where each is gathered or used split.
      weights.push_back({"weights sharded on dim 0 (ZeRO-3)" + where, P, ShardedAtRest(P), -1});
    }
    for (int a = 0; a < nd && !tp.empty(); ++a) {
      std::vector<NdSbp> l(names_.size(), AllBroadcast(nd));
      for (size_t k = 0; k < names_.size(); ++k) {
        auto it = tp.find(names_[k]);
        if (it != tp.end()) l[k][static_cast<size_t>(a)] = it->second;
      }
      weights.push_back({"tensor parallel on placement axis " + std::to_string(a) + where, P, l, a});
    }
  }
  layouts_.clear();
  std::vector<LayoutCandidate> out;
  const PlanOptions saved = opts_.dist.plan;
  const std::vector<NdSbp> saved_sbp = sbp_;
  for (const Layout& w : weights) {
    bool fits = true;
    for (size_t k = 0; k < names_.size() && fits; ++k)
      fits = SbpMisfit(train_graph_.values[static_cast<size_t>(t_.params[k])].type.ToShape(), w.weights[k],
                       w.placement.hierarchy).empty();
    for (bool free_inputs : {true, false}) {
      Layout l = w;
      l.free_inputs = free_inputs;
      l.label += free_inputs ? ", inputs free" : ", batch split";
      LayoutCandidate c;
      c.label = l.label;
      layouts_.push_back(l);
      if (!fits) {
        c.error = "weights do not divide";
        out.push_back(c);
        continue;
      }
      sbp_ = l.weights;
      Configure(l, shapes);
      try {
        Plan plan = MakePlan(train_graph_, Options(shapes, true));
        c.step_seconds = plan.step_seconds + UpdateSeconds(l.weights, l.placement);
        c.memory_bytes = static_cast<double>(plan.param_bytes + plan.optimizer_bytes + plan.activation_bytes);
      } catch (const Error& e) {
        c.error = e.what();
      }
      out.push_back(c);
    }
  }
  opts_.dist.plan = saved;
  sbp_ = saved_sbp;
  return out;
}

// Sets the plan options for a layout: its placement and, unless the inputs stay free, the hand
// plans' inputs (the batch split on every data axis, whole on the tensor axis).
void PlannedTrainer::Configure(const Layout& l, const std::map<std::string, Shape>& shapes) {
  opts_.dist.plan = given_plan_;
  opts_.dist.plan.placement = l.placement;
  if (l.free_inputs) return;
  opts_.dist.plan.mode = PlanMode::kManual;
  for (int v : t_.data_inputs) {
    const std::string& name = train_graph_.values[static_cast<size_t>(v)].name;
    NdSbp split = AllBroadcast(l.placement.ndim());
    for (int a = 0; a < l.placement.ndim(); ++a)
      if (a != l.tp_axis) split[static_cast<size_t>(a)] = Sbp::S(0);
    auto sh = shapes.find(name);
    if (sh != shapes.end() && SbpMisfit(sh->second, split, l.placement.hierarchy).empty())
      opts_.dist.plan.sbp[name] = split;
  }
}

void PlannedTrainer::AdoptLayout(size_t index, const std::map<std::string, Shape>& shapes, const std::string& report) {
  OF_CHECK(!layout_decided_ && index < layouts_.size(), kInternal, "no auto layout ", index, " to adopt");
  const Layout& l = layouts_[index];
  sbp_ = l.weights;
  Configure(l, shapes);
  devices_.placement = l.placement;
  layout_report_ = report;
  layout_decided_ = true;
}

// Seconds of the optimizer update on the busiest device under a layout: each device updates its
// block of every weight, under ZeRO its 1/n slice of it (n: the block's replicas).
double PlannedTrainer::UpdateSeconds(const std::vector<NdSbp>& weights, const Placement& P) const {
  double elements = 0;
  for (size_t k = 0; k < names_.size(); ++k) {
    double n = static_cast<double>(NumElements(LocalShape(t_.initial[k].shape(), weights[k], P.hierarchy, P.Coord(0))));
    double replicas = 1;
    for (size_t a = 0; a < weights[k].size(); ++a)
      if (weights[k][a].is_broadcast()) replicas *= static_cast<double>(P.hierarchy[a]);
    if (opts_.zero_stage >= 1) n = std::ceil(n / replicas);
    elements += n;
  }
  return OptimizerUpdateSeconds(elements, static_cast<int>(OptimizerStateNames(opts_.training.optimizer).size()),
                                opts_.dist.plan.cost);
}

std::shared_ptr<Compiled> PlannedTrainer::Compile(const std::map<std::string, Shape>& shapes, bool train) {
  auto& cache = train ? cache_ : eval_cache_;
  auto it = cache.find(shapes);
  if (it != cache.end()) return it->second;
  OF_CHECK(layout_decided_, kInvalidArgument, "plan mode auto decides the layout among planned and pipeline ones: "
           "create the trainer with DistributedTrainer::Create");
  auto c = std::make_shared<Compiled>();
  c->plan = std::make_shared<Plan>(MakePlan(train ? train_graph_ : eval_graph_, Options(shapes, train)));
  const Plan& plan = *c->plan;
  if (process_comm_) {
    // Every rank of a Gloo job must run the same plan of the same model from the same weights: the
    // plan's hash (graph, placement, SBP, mode), the layout and the initial weights, compared
    // before any collective of the plan runs (a mismatch would hang or mix up results).
    if (!weights_hash_) {
      weights_hash_ = Fnv1a(nullptr, 0);
      for (const Tensor& w : t_.initial) weights_hash_ = Fnv1a(w.raw(), w.nbytes(), weights_hash_);
    }
    const uint64_t hash = Fnv1a(layout_report_.data(), layout_report_.size(), plan.graph_hash ^ weights_hash_);
    CheckSameModel(*process_comm_, hash, plan.options.placement.devices);
  }
  std::set<std::string> defer;
  if (train)
    for (int v : t_.gradients) defer.insert(t_.name(v));
  ThreadPool fold_pool(1);
  c->sources.resize(devices_.size());
  c->groups.resize(devices_.size());
  for (size_t s = 0; s < devices_.size(); ++s) {
    const int pos = devices_.positions[s];
    auto g = std::make_shared<Graph>(BuildPhysicalGraph(plan, pos, keys_[s], defer));
    OptimizeForDevice(*g, opts_.training.session.optimization_level, fold_pool);
    for (int v : g->inputs) {
      const std::string& name = g->values[static_cast<size_t>(v)].name;
      auto w = std::find(names_.begin(), names_.end(), name);
      if (w != names_.end()) {
        c->sources[s].push_back(-static_cast<int>(w - names_.begin()) - 1);
        continue;
      }
      int i = 0;
      while (i < static_cast<int>(plan.logical.inputs.size()) &&
             plan.logical.values[static_cast<size_t>(plan.logical.inputs[static_cast<size_t>(i)])].name != name)
        ++i;
      OF_CHECK(i < static_cast<int>(plan.logical.inputs.size()), kInternal, "physical input '", name, "' is not planned");
      c->sources[s].push_back(i);
    }
    if (train)
      for (size_t k = 0; k < names_.size(); ++k) {
        std::vector<int> ranks;
        if (IsDeferrableOutput(plan, k + 1))
          for (int q : DeferredReduceGroup(plan, k + 1, pos)) ranks.push_back(devices_.placement.devices[static_cast<size_t>(q)]);
        c->groups[s].push_back(ranks);
      }
    c->graphs.push_back(g);
    c->executors.push_back(std::make_unique<Executor>(g, pools_[s]));
  }
  if (train && !groups_ready_) AssignReduceGroups(*c);
  if (train)
    for (size_t s = 0; s < devices_.size(); ++s)
      for (size_t k = 0; k < names_.size(); ++k)
        OF_CHECK(c->groups[s][k] == params_[s][k].group, kUnsupported, "the plan for input shapes changed how the gradient of '",
                 names_[k], "' is reduced; train with one batch shape");
  if (cache.size() < 16) cache[shapes] = c;
  return c;
}

void PlannedTrainer::LayOutWeights() {
  if (!params_.empty()) return;
  const Placement& P = devices_.placement;
  params_.assign(devices_.size(), {});
  for (size_t s = 0; s < devices_.size(); ++s) {
    const std::vector<int64_t> coord = P.Coord(devices_.positions[s]);
    for (size_t k = 0; k < names_.size(); ++k) {
      const Tensor& init = t_.initial[k];
      LocalParam lp;
      std::vector<Range> block = LocalBlock(init.shape(), sbp_[k], P.hierarchy, coord);
      Shape shape;
      std::vector<int64_t> start;
      for (const Range& r : block) { shape.push_back(r.size); start.push_back(r.start); }
      lp.value = Tensor(DType::kFloat32, shape);
      CopyBlock(init, start, lp.value, std::vector<int64_t>(shape.size(), 0), shape);
      params_[s].push_back(std::move(lp));
    }
  }
}

void PlannedTrainer::AssignReduceGroups(const Compiled& train) {
  LayOutWeights();
  const size_t states = OptimizerStateNames(opts_.training.optimizer).size();
  for (size_t s = 0; s < devices_.size(); ++s)
    for (size_t k = 0; k < names_.size(); ++k) {
      LocalParam& lp = params_[s][k];
      lp.group = train.groups[s][k];
      int64_t held = lp.value.numel();
      if (opts_.zero_stage >= 1 && lp.group.size() > 1) {
        auto me = std::find(lp.group.begin(), lp.group.end(), devices_.rank(s)) - lp.group.begin();
        auto [st, n] = FlatSlice(lp.value.numel(), static_cast<int64_t>(lp.group.size()), me);
        lp.slice_start = st;
        lp.slice_size = n;
        held = n;
      }
      lp.grad = Tensor(DType::kFloat32, opts_.zero_stage >= 2 && lp.slice_size >= 0 ? Shape{held} : lp.value.shape());
      for (size_t i = 0; i < states; ++i) lp.state.push_back(Tensor(DType::kFloat32, Shape{held}));
    }
  groups_ready_ = true;
}

std::vector<Tensor> PlannedTrainer::LocalInputs(const Compiled& c, size_t slot,
                                                const std::map<std::string, Tensor>& named) const {
  std::vector<Tensor> local;
  const Plan& plan = *c.plan;
  for (int src : c.sources[slot]) {
    if (src < 0) {
      const Tensor& v = params_[slot][static_cast<size_t>(-src - 1)].value;
      local.push_back(v);
      continue;
    }
    const std::string& name = plan.logical.values[static_cast<size_t>(plan.logical.inputs[static_cast<size_t>(src)])].name;
    local.push_back(LocalFeed(plan, static_cast<size_t>(src), devices_.positions[slot], named.at(name)));
  }
  return local;
}

// Gradients whose plan ends in all-reduces arrive as partial sums: all-reduce them in buckets of
// about bucket_bytes per reduce group, last weights first (the order backward finishes them), or
// under ZeRO-2 reduce-scatter each into this device's slice. Reduced gradients land in the
// weights' own gradient tensors, allocated once: keeping the executor's fresh outputs across steps
// instead makes every step allocate (and page-fault) new ones.
void PlannedTrainer::ReduceGradients(size_t slot, std::vector<Tensor>& grads) {
  std::vector<LocalParam>& ps = params_[slot];
  Communicator& comm = *devices_.comms[slot];
  std::map<std::vector<int>, std::vector<size_t>> by_group;
  std::set<const Storage*> taken;
  // Gradients nobody reduces: adopt the executor's outputs (no copy) unless two share bytes.
  auto adopt = [&](size_t k) {
    Tensor& g = grads[k];
    if (taken.insert(g.storage().get()).second) ps[k].grad = g.Reshaped(ps[k].value.shape());
    else std::memcpy(ps[k].grad.raw(), g.raw(), g.nbytes());
  };
  for (size_t k = ps.size(); k-- > 0;) {
    LocalParam& lp = ps[k];
    Tensor& g = grads[k];
    OF_CHECK(g.dtype() == DType::kFloat32 && g.numel() == lp.value.numel(), kInternal, "gradient of '", names_[k],
             "' has dtype ", DTypeName(g.dtype()), " shape ", ShapeToString(g.shape()));
    if (lp.group.size() <= 1) {
      adopt(k);
    } else if (opts_.zero_stage < 2 && g.nbytes() * 4 >= static_cast<size_t>(opts_.bucket_bytes)) {
      // Large enough to be its own bucket: reduced in the gradient tensor, no packing.
      std::memcpy(lp.grad.raw(), g.raw(), g.nbytes());
      comm.AllReduceSum(lp.grad.raw(), lp.grad.numel(), DType::kFloat32, lp.group);
    } else if (opts_.zero_stage >= 2) {  // ZeRO-3: the weights left B (too small to shard)
      std::vector<int64_t> counts;
      for (size_t m = 0; m < lp.group.size(); ++m)
        counts.push_back(FlatSlice(g.numel(), static_cast<int64_t>(lp.group.size()), static_cast<int64_t>(m)).second);
      comm.ReduceScatterSum(g.raw(), lp.grad.raw(), counts, DType::kFloat32, lp.group);
    } else {
      by_group[lp.group].push_back(k);
    }
  }
  for (auto& [group, ks] : by_group) {
    size_t i = 0;
    while (i < ks.size()) {
      int64_t elems = 0;
      size_t j = i;
      while (j < ks.size() && (j == i || (elems + grads[ks[j]].numel()) * 4 <= opts_.bucket_bytes))
        elems += grads[ks[j++]].numel();
      std::vector<float>& bucket = buckets_[slot];
      if (bucket.size() < static_cast<size_t>(elems)) bucket.resize(static_cast<size_t>(elems));
      int64_t off = 0;
      for (size_t q = i; q < j; ++q) {
        std::memcpy(bucket.data() + off, grads[ks[q]].raw(), grads[ks[q]].nbytes());
        off += grads[ks[q]].numel();
      }
      comm.AllReduceSum(bucket.data(), elems, DType::kFloat32, group);
      off = 0;
      for (size_t q = i; q < j; ++q) {
        Tensor& g = ps[ks[q]].grad;
        std::memcpy(g.raw(), bucket.data() + off, g.nbytes());
        off += g.numel();
      }
      i = j;
    }
  }
}

TrainStepResult PlannedTrainer::TrainStep(const std::vector<std::pair<std::string, Tensor>>& feeds) {
  TraceScope trace("train", "train step");
  trace.Arg("step", step_);
  std::map<std::string, Tensor> named;
  std::map<std::string, Shape> shapes = CheckFeeds(feeds, true, named);
  TrainStepResult result;
  Guarded([&] {
    std::shared_ptr<Compiled> c = Compile(shapes, true);
    last_ = c;
    const Placement& P = devices_.placement;
    const float lr = LearningRate(opts_.training.schedule, opts_.training.optimizer.lr, step_);
    std::vector<double> losses(devices_.size());
    std::vector<double> norms(devices_.size());
    std::vector<char> skipped(devices_.size(), 0);
    RunOnDevices(devices_, [&](size_t s) {
      std::vector<Tensor> out;
      {
        TraceScope phase("train", "forward+backward");  // one graph: the loss and the gradients
        out = c->executors[s]->Run(LocalInputs(*c, s, named));
      }
      const double loss = out[0].GetAsDouble(0);
      std::vector<Tensor> grads(out.begin() + 1, out.end());
      {
        TraceScope phase("train", "reduce gradients");
        ReduceGradients(s, grads);
      }
      TraceScope phase("train", "step");
      // The global squared norm and a NaN/Inf count, summed over every device: a block held by
      // r devices (its B axes) counts 1/r on each.
      double stats[2] = {0, std::isfinite(loss) ? 0.0 : 1.0};
      std::vector<LocalParam>& ps = params_[s];
      for (size_t k = 0; k < ps.size(); ++k) {
        double replicas = 1;
        for (size_t a = 0; a < sbp_[k].size(); ++a)
          if (sbp_[k][a].is_broadcast()) replicas *= static_cast<double>(P.hierarchy[a]);
        if (opts_.zero_stage >= 2 && ps[k].slice_size >= 0) replicas /= static_cast<double>(ps[k].group.size());
        const float* g = ps[k].grad.data<float>();
        const int64_t n = ps[k].grad.numel();
        double sq = SumOfSquares(g, n);
        if (!std::isfinite(sq)) {  // NaN/Inf, or squares beyond float range: the exact check
          sq = 0;
          for (int64_t i = 0; i < n; ++i) {
            if (!std::isfinite(g[i])) stats[1] += 1;
            sq += static_cast<double>(g[i]) * g[i];
          }
        }
        stats[0] += sq / replicas;
      }
      devices_.comms[s]->AllReduceSum(stats, 2, DType::kFloat64, P.devices);
      losses[s] = loss;
      norms[s] = std::sqrt(stats[0]);
      if (stats[1] > 0) {
        OF_CHECK(opts_.training.nonfinite == NonFinitePolicy::kSkip, kRuntime, "step refused: the loss (", loss,
                 ") or a gradient holds NaN or Inf; parameters are unchanged");
        skipped[s] = 1;
        return;
      }
      std::vector<ParamSlot> slots(ps.size());
      std::vector<ParamSlot*> ptrs;
      for (size_t k = 0; k < ps.size(); ++k) {
        LocalParam& lp = ps[k];
        ParamSlot& slot = slots[k];
        if (lp.slice_size >= 0) {
          const size_t off = static_cast<size_t>(lp.slice_start) * 4;
          slot.value = Tensor(DType::kFloat32, {lp.slice_size}, lp.value.storage(), off);
          slot.grad = opts_.zero_stage >= 2 ? lp.grad : Tensor(DType::kFloat32, {lp.slice_size}, lp.grad.storage(), off);
        } else {
          slot.value = lp.value;
          slot.grad = lp.grad.Reshaped(lp.value.shape());
        }
        for (Tensor& st : lp.state) slot.state.push_back(lp.slice_size >= 0 ? st : st.Reshaped(lp.value.shape()));
        ptrs.push_back(&slot);
      }
      ApplyUpdate(opts_.training.optimizer, ptrs, lr, ClipScale(norms[s], opts_.training.max_grad_norm), step_,
                  *pools_[s]);
      // ZeRO: every device updated its slice; gather the whole block back, in place (the slice
      // already sits at its position in the block).
      for (LocalParam& lp : ps) {
        if (lp.slice_size < 0) continue;
        std::vector<size_t> sizes;
        for (size_t m = 0; m < lp.group.size(); ++m)
          sizes.push_back(static_cast<size_t>(
              FlatSlice(lp.value.numel(), static_cast<int64_t>(lp.group.size()), static_cast<int64_t>(m)).second * 4));
        devices_.comms[s]->AllGather(lp.value.data<float>() + lp.slice_start, lp.value.raw(), sizes, lp.group);
      }
    });
    result.loss = losses[0];
    result.grad_norm = norms[0];
    result.applied = !skipped[0];
    if (result.applied) ++step_;
  });
  return result;
}

std::vector<std::pair<std::string, Tensor>> PlannedTrainer::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                                const std::vector<std::string>& fetches) {
  std::map<std::string, Tensor> named;
  std::map<std::string, Shape> shapes = CheckFeeds(feeds, false, named);
  std::vector<std::pair<std::string, Tensor>> out;
  Guarded([&] {
    OF_CHECK(layout_decided_, kInvalidArgument,
             "auto mode decides the weights' layout at the first training step: run one first");
    LayOutWeights();
    std::shared_ptr<Compiled> c = Compile(shapes, false);
    std::vector<std::vector<Tensor>> results(devices_.size());
    RunOnDevices(devices_, [&](size_t s) { results[s] = c->executors[s]->Run(LocalInputs(*c, s, named)); });
    const Graph& pg = *c->graphs[0];
    auto name_of = [&](size_t i) { return pg.values[static_cast<size_t>(pg.outputs[i])].name; };
    if (fetches.empty()) {
      for (size_t i = 0; i < pg.outputs.size(); ++i) out.emplace_back(name_of(i), results[0][i]);
      return;
    }
    for (const std::string& f : fetches) {
      size_t i = 0;
      while (i < pg.outputs.size() && name_of(i) != f) ++i;
      OF_CHECK(i < pg.outputs.size(), kNotFound, "the model has no output named '", f, "'");
      out.emplace_back(f, results[0][i]);
    }
  });
  return out;
}

Tensor PlannedTrainer::GetParameter(const std::string& name) {
  auto w = std::find(names_.begin(), names_.end(), name);
  OF_CHECK(w != names_.end(), kNotFound, "'", name, "' is not a trained parameter");
  const size_t k = static_cast<size_t>(w - names_.begin());
  if (params_.empty()) return t_.initial[k].Clone();
  const Placement& P = devices_.placement;
  const Shape& shape = t_.initial[k].shape();
  Tensor whole(DType::kFloat32, shape);
  Guarded([&] {
    std::vector<size_t> sizes;
    for (int q = 0; q < P.size(); ++q)
      sizes.push_back(static_cast<size_t>(NumElements(LocalShape(shape, sbp_[k], P.hierarchy, P.Coord(q)))) * 4);
    std::vector<std::vector<float>> gathered(devices_.size());
    RunOnDevices(devices_, [&](size_t s) {
      gathered[s].resize(static_cast<size_t>(NumElements(shape)) * P.size());
      devices_.comms[s]->AllGather(params_[s][k].value.raw(), gathered[s].data(), sizes, P.devices);
    });
    size_t off = 0;
    for (int q = 0; q < P.size(); ++q) {
      std::vector<Range> block = LocalBlock(shape, sbp_[k], P.hierarchy, P.Coord(q));
      Shape bs;
      std::vector<int64_t> start;
      for (const Range& r : block) { bs.push_back(r.size); start.push_back(r.start); }
      Tensor piece(DType::kFloat32, bs);
      std::memcpy(piece.raw(), reinterpret_cast<const char*>(gathered[0].data()) + off, sizes[static_cast<size_t>(q)]);
      CopyBlock(piece, std::vector<int64_t>(bs.size(), 0), whole, start, bs);
      off += sizes[static_cast<size_t>(q)];
    }
  });
  return whole;
}

std::string PlannedTrainer::Explain(bool json) const {
  OF_CHECK(last_, kInvalidArgument, "no training plan yet: run a training step first (plans are made per batch shape)");
  const double update = UpdateSeconds(sbp_, devices_.placement);
  const double step = last_->plan->step_seconds + update;
  if (json) {
    std::string j = last_->plan->ToJson();
    std::string esc;
    for (char ch : layout_report_) esc += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
    char seconds[96];
    std::snprintf(seconds, sizeof seconds, "%.9g,\"optimizer_update_seconds\":%.9g", step, update);
    return "{\"strategy\":\"planned\",\"estimated_step_seconds\":" + std::string(seconds) +
           ",\"zero_stage\":" + std::to_string(opts_.zero_stage) + ",\"layout\":\"" + esc +
           "\",\"plan\":" + j + "}";
  }
  char total[160];
  std::snprintf(total, sizeof total, "estimated training step: %.6g us = the plan's %.6g us + optimizer update %.6g us\n",
                step * 1e6, last_->plan->step_seconds * 1e6, update * 1e6);
  return "training plan (" + layout_report_ + (opts_.zero_stage ? ", ZeRO-" + std::to_string(opts_.zero_stage) : "") +
         "; gradients returned in an SBP with B axes are all-reduced over them by the trainer, in buckets)\n" +
         last_->plan->ToText() + total;
}

}  // namespace

std::unique_ptr<DistributedTrainer> CreatePlannedTrainer(const Graph& model, const DistributedTrainingOptions& options) {
  return std::make_unique<PlannedTrainer>(model, options);
}

std::vector<LayoutCandidate> PlannedLayoutCandidates(DistributedTrainer& planned,
                                                     const std::map<std::string, Shape>& input_shapes) {
  auto* p = dynamic_cast<PlannedTrainer*>(&planned);
  OF_CHECK(p, kInternal, "PlannedLayoutCandidates needs a planned trainer");
  return p->EvaluateLayouts(input_shapes);
}

void AdoptPlannedLayout(DistributedTrainer& planned, size_t index, const std::map<std::string, Shape>& input_shapes,
                        const std::string& report) {
  auto* p = dynamic_cast<PlannedTrainer*>(&planned);
  OF_CHECK(p, kInternal, "AdoptPlannedLayout needs a planned trainer");
  p->AdoptLayout(index, input_shapes, report);
}

std::unique_ptr<DistributedTrainer> DistributedTrainer::Create(const Graph& model,
                                                               const DistributedTrainingOptions& options) {
  OF_REQUIRE(options.pipeline_stages >= 1, "pipeline_stages must be >= 1, got ", options.pipeline_stages);
  if (options.pipeline_stages > 1) return CreatePipelineTrainer(model, options);
  if (options.dist.plan.mode == PlanMode::kAuto) return CreateAutoTrainer(model, options);
  return CreatePlannedTrainer(model, options);
}

}  // namespace oneflow::train
