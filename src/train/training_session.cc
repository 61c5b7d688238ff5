// TrainingSession: graph preparation (parameters become inputs, loss, gradients, split), the
// forward/backward/step state machine and parameter access. Checkpoints: training_checkpoint.cc.
#include "train/training_session.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "base/trace.h"
#include "engine/session.h"
#include "train/graph_split.h"
#include "train/training_graph.h"
#include "train/training_impl.h"

namespace oneflow::train {

namespace {

void CheckOptions(const TrainingOptions& o) {
  CheckSessionOptions(o.session);
  // cuDNN's heuristics may pick algorithms that add with atomics (the backward filter ones), and
  // the choice depends on the GPU: bit-identical runs cannot be promised there.
  OF_CHECK(o.session.device != DeviceType::kCuda || !o.deterministic, kUnsupported,
           "deterministic mode is not supported for training on a CUDA device (bit-identical results are "
           "promised on the CPU only); turn it off or train on the CPU");
  OF_REQUIRE(!o.deterministic || o.session.intra_op_threads > 0,
             "deterministic mode needs an explicit intra_op_threads (results are bit-identical for a given "
             "thread count; 0 would mean the core count of whichever machine runs it)");
  OF_REQUIRE(o.nonfinite == NonFinitePolicy::kSkip || o.nonfinite == NonFinitePolicy::kRefuse,
             "unknown NaN/Inf policy ", static_cast<int>(o.nonfinite));
  OF_REQUIRE(std::isfinite(o.max_grad_norm), "max_grad_norm must be finite");
  OF_REQUIRE(o.precision == Precision::kFloat32 || o.precision == Precision::kBFloat16 ||
                 o.precision == Precision::kFloat16,
             "unknown precision ", static_cast<int>(o.precision));
  if (o.precision == Precision::kFloat16 && o.loss_scale.enabled) ValidateLossScaleConfig(o.loss_scale);
  const bool appended = o.appended_loss != AppendedLoss::kNone;
  OF_REQUIRE(appended != !o.loss_output.empty(),
             appended ? "give either loss_output or an appended loss, not both"
                      : "training needs a loss: name the model's loss output or append a loss to a logits output");
  if (appended) {
    OF_REQUIRE(!o.logits_output.empty(), "an appended loss needs logits_output");
    OF_REQUIRE(!o.labels_input.empty(), "an appended loss needs a labels_input name");
  }
  ValidateOptimizerConfig(o.optimizer);
  ValidateLrSchedule(o.schedule);
}

// Checks a feed against its declaration: dtype, rank, static dims.
void CheckFeed(const Value& decl, const Tensor& t) {
  OF_REQUIRE(t.defined(), "input '", decl.name, "' is an empty tensor handle");
  OF_REQUIRE(decl.type.dtype == DType::kUndefined || t.dtype() == decl.type.dtype, "input '", decl.name,
             "' has dtype ", DTypeName(t.dtype()), ", the model expects ", DTypeName(decl.type.dtype));
  if (!decl.type.has_rank) return;
  OF_REQUIRE(t.rank() == decl.type.rank(), "input '", decl.name, "' has shape ", ShapeToString(t.shape()),
             ", the model expects ", decl.type.ToString());
  for (size_t i = 0; i < decl.type.dims.size(); ++i)
    OF_REQUIRE(!decl.type.dims[i].known() || decl.type.dims[i].value == t.shape()[i], "input '", decl.name,
               "' has shape ", ShapeToString(t.shape()), ", the model expects ", decl.type.ToString());
}

}  // namespace

std::unique_ptr<Part> CompilePart(Graph g, int level, const std::shared_ptr<ThreadPool>& pool,
                                  const ExecutorDevice& device) {
  auto part = std::make_unique<Part>();
  {
    ThreadPool fold_pool(1);
    OptimizeForDevice(g, level, fold_pool, device.type);
  }
  part->graph = std::make_shared<Graph>(std::move(g));
  part->executor = std::make_unique<Executor>(part->graph, pool, device);
  return part;
}

std::vector<Tensor> Part::Run(const std::map<std::string, Tensor>& named, const std::set<std::string>& device_feeds,
                              bool outputs_on_device) const {
  std::vector<Tensor> feeds;
  RunIo io;
  io.outputs_on_device = outputs_on_device;
  for (int v : graph->inputs) {
    const std::string& name = graph->values[static_cast<size_t>(v)].name;
    auto it = named.find(name);
    OF_CHECK(it != named.end(), kInvalidArgument, "input '", name, "' is missing");
    feeds.push_back(it->second);
    io.feed_on_device.push_back(device_feeds.count(name) ? 1 : 0);
  }
  if (device_feeds.empty() && !outputs_on_device) return executor->Run(feeds);
  return executor->Run(feeds, io);
}

TrainingSession::TrainingSession(const Graph& model, const TrainingOptions& options)
    : impl_(std::make_unique<Impl>()), options_(options) {
  CheckOptions(options);
  Impl& s = *impl_;
  // First, so a missing device fails before the graphs are built.
  if (options.session.device == DeviceType::kCuda)
    s.device = std::make_unique<TrainingDevice>(options.session.device_index, options.optimizer);
  s.model = model;
  TrainingGraph t = BuildTrainingGraph(model, options);
  const Graph& g = t.graph;
  for (size_t i = 0; i < t.params.size(); ++i) {
    ParamState p;
    p.name = t.name(t.params[i]);
    // Zero gradient and state, in device memory on a device session (uploaded once).
    const Tensor zeros(DType::kFloat32, t.initial[i].shape());
    p.slot.value = s.device ? s.device->Upload(t.initial[i]) : t.initial[i].Clone();
    p.slot.grad = s.device ? s.device->Upload(zeros) : zeros.Clone();
    for (size_t k = 0; k < OptimizerStateNames(options.optimizer).size(); ++k)
      p.slot.state.push_back(s.device ? s.device->Upload(zeros) : zeros.Clone());
    param_names_.push_back(p.name);
    s.params.push_back(std::move(p));
  }
  s.loss_name = t.name(t.loss);

  SplitRequest req;
  req.first_backward_node = t.info.first_backward_node;
  req.data_inputs = t.data_inputs;
  req.params = t.params;
  req.user_outputs = t.user_outputs;
  req.loss = t.loss;
  req.gradients = t.gradients;
  req.checkpointing = options.activation_checkpointing;
  if (t.loss_scale != kNoValue) {
    // Fed by Backward from the scaler, never by the caller (so not in the interface).
    s.loss_scale_name = t.name(t.loss_scale);
    s.scaler = std::make_unique<DynamicLossScale>(options.loss_scale);
    req.data_inputs.push_back(t.loss_scale);
  }
  TrainingGraphs graphs = SplitForTraining(g, req);
  s.saved_names = graphs.saved;
  s.checkpoints = graphs.checkpoints;
  s.recomputed_nodes = graphs.recomputed_nodes;
  interface_ = t.interface;

  s.pool = options.session.pool ? options.session.pool : std::make_shared<ThreadPool>(options.session.intra_op_threads);
  const ExecutorDevice where{options.session.device, options.session.device_index, options.session.cuda_graphs};
  s.forward = CompilePart(std::move(graphs.forward), options.session.optimization_level, s.pool, where);
  s.backward = CompilePart(std::move(graphs.backward), options.session.optimization_level, s.pool, where);
  s.eval = CompilePart(std::move(graphs.eval), options.session.optimization_level, s.pool, where);
  s.backward_reads_inputs.clear();
  for (int v : s.backward->graph->inputs) {
    const std::string& name = s.backward->graph->values[static_cast<size_t>(v)].name;
    for (int d : t.data_inputs)
      if (t.name(d) == name) s.backward_reads_inputs.insert(name);
  }
}

TrainingSession::~TrainingSession() = default;

std::vector<std::pair<std::string, Tensor>> TrainingSession::Run(
    const std::vector<std::pair<std::string, Tensor>>& feeds, const std::vector<std::string>& fetches, RunMode mode) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  TraceScope trace("train", mode == RunMode::kTrain ? "forward" : "eval");
  Impl& s = *impl_;
  trace.Arg("step", s.step);
  std::map<std::string, Tensor> named;
  for (const auto& [name, t] : feeds) {
    int decl = interface_.FindValue(name);
    bool is_input = false;
    for (int v : interface_.inputs) is_input |= v == decl;
    if (!is_input) {
      std::string names;
      for (int v : interface_.inputs) names += (names.empty() ? "" : ", ") + interface_.values[static_cast<size_t>(v)].name;
      Fail(ErrorCode::kNotFound, "the training session has no input named '", name, "' (inputs: ", names, ")");
    }
    OF_REQUIRE(named.count(name) == 0, "input '", name, "' is given twice");
    CheckFeed(interface_.values[static_cast<size_t>(decl)], t);
    named[name] = t;
  }
  if (mode == RunMode::kTrain) {
    for (int v : interface_.inputs) {
      const std::string& name = interface_.values[static_cast<size_t>(v)].name;
      OF_REQUIRE(named.count(name), "input '", name, "' is missing (a train-mode run needs every input, the labels too)");
    }
  }
  const Part& part = mode == RunMode::kTrain ? *s.forward : *s.eval;
  std::set<std::string> device_feeds;  // parameters, on a device session
  for (int v : part.graph->inputs) {
    const std::string& name = part.graph->values[static_cast<size_t>(v)].name;
    if (named.count(name)) continue;
    if (const ParamState* p = s.Find(name)) {
      named[name] = p->slot.value;
      if (s.device) device_feeds.insert(name);
      continue;
    }
    if (s.scaler && name == s.loss_scale_name) {
      named[name] = Tensor::Scalar(DType::kFloat32, s.scaler->scale());
      continue;
    }
    Fail(ErrorCode::kInvalidArgument, "input '", name, "' is missing",
         mode == RunMode::kTrain ? " (a train-mode run needs every input, the labels too)" : "");
  }
  // On a device, a train-mode run keeps its results in device memory: backward reads the kept
  // activations there; what the caller fetches (and the loss) is copied to the host below.
  const bool outputs_on_device = s.device && mode == RunMode::kTrain;
  std::vector<Tensor> results = part.Run(named, device_feeds, outputs_on_device);

  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < results.size(); ++i)
    by_name[part.graph->values[static_cast<size_t>(part.graph->outputs[i])].name] = results[i];
  std::map<std::string, Tensor> host_results;
  auto on_host = [&](const std::string& name) -> Tensor {
    if (!outputs_on_device) return by_name.at(name);
    auto it = host_results.find(name);
    if (it == host_results.end()) it = host_results.emplace(name, s.device->Download(by_name.at(name))).first;
    return it->second;
  };
  if (mode == RunMode::kTrain) {
    s.pending.clear();
    s.saved_bytes = 0;
    std::set<const Storage*> counted;
    for (const std::string& name : s.saved_names) {
      Tensor t = by_name.at(name);
      if (t.storage() && counted.insert(t.storage().get()).second) s.saved_bytes += t.storage()->bytes();
      s.pending[name] = std::move(t);
    }
    // Backward reads these inputs after the caller may have reused their buffers: keep copies.
    for (const std::string& name : s.backward_reads_inputs) {
      s.pending[name] = named.at(name).Clone();
      s.saved_bytes += s.pending[name].nbytes();
    }
    const Tensor loss = on_host(s.loss_name);
    s.last_loss = loss.numel() == 1 ? loss.GetAsDouble(0) : std::numeric_limits<double>::quiet_NaN();
    s.has_pending = true;
  }

  std::vector<std::pair<std::string, Tensor>> out;
  if (fetches.empty()) {
    for (int v : interface_.outputs) {
      const std::string& name = interface_.values[static_cast<size_t>(v)].name;
      if (by_name.count(name)) out.emplace_back(name, on_host(name));
    }
    return out;
  }
  for (const std::string& name : fetches) {
    auto it = by_name.find(name);
    if (it == by_name.end() || interface_.FindValue(name) == kNoValue) {
      OF_CHECK(!(name == s.loss_name && mode == RunMode::kEval), kInvalidArgument, "the loss '", name,
               "' is not computed in eval mode");
      Fail(ErrorCode::kNotFound, "the training session has no output named '", name, "'");
    }
    out.emplace_back(name, on_host(name));
  }
  return out;
}

void TrainingSession::Backward() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  TraceScope trace("train", "backward");
  Impl& s = *impl_;
  trace.Arg("step", s.step);
  OF_REQUIRE(s.has_pending, "backward needs a train-mode run first (every backward consumes the activations of "
                            "one run)");
  std::map<std::string, Tensor> named = s.pending;
  for (const ParamState& p : s.params) named[p.name] = p.slot.value;
  if (s.scaler) named[s.loss_scale_name] = Tensor::Scalar(DType::kFloat32, s.scaler->scale());
  // On a device the kept activations and the parameters are device tensors, and so are the
  // gradients it returns (the labels copy stays on the host).
  std::set<std::string> device_feeds;
  if (s.device) {
    device_feeds.insert(s.saved_names.begin(), s.saved_names.end());
    for (const ParamState& p : s.params) device_feeds.insert(p.name);
  }
  std::vector<Tensor> grads = s.backward->Run(named, device_feeds, s.device != nullptr);
  s.pending.clear();
  s.has_pending = false;
  if (!std::isfinite(s.last_loss)) s.nonfinite_loss = true;
  std::set<const Storage*> taken;
  for (size_t i = 0; i < s.params.size(); ++i) {
    ParamSlot& slot = s.params[i].slot;
    Tensor& g = grads[i];
    OF_CHECK(g.dtype() == DType::kFloat32 && g.numel() == slot.value.numel(), kInternal, "gradient of '",
             s.params[i].name, "' has dtype ", DTypeName(g.dtype()), " shape ", ShapeToString(g.shape()));
    if (!s.params[i].has_grad) {
      // Gradients are fresh tensors no one else holds: adopt them unless two share bytes.
      if (taken.insert(g.storage().get()).second) slot.grad = g.Reshaped(slot.value.shape());
      else slot.grad = (s.device ? s.device->Clone(g) : g.Clone()).Reshaped(slot.value.shape());
      s.params[i].has_grad = true;
    } else if (s.device) {
      s.device->Accumulate(slot.grad, g);
    } else {
      float* acc = slot.grad.data<float>();
      const float* add = g.data<float>();
      s.pool->ParallelFor(g.numel(), 1.0, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j) acc[j] += add[j];
      });
    }
  }
  // The gradients of this run were allocated on the backward executor's stream: the device copies
  // and additions reading them must be done before `grads` lets them go back to its pool.
  if (s.device) s.device->Synchronize();
  ++s.backward_count;
}

StepOutcome TrainingSession::Step() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  TraceScope trace("train", "step");
  Impl& s = *impl_;
  trace.Arg("step", s.step);
  OF_REQUIRE(s.backward_count > 0, "step needs gradients: run backward after a train-mode run first");
  std::vector<ParamSlot*> slots;
  for (ParamState& p : s.params) slots.push_back(&p.slot);
  GradientNorm norm = s.device ? s.device->Norm(slots) : GlobalGradientNorm(slots, *s.pool);
  // With loss scaling the gradients are scale x the true ones.
  const float loss_scale = s.scaler ? s.scaler->scale() : 1.0f;
  norm.norm /= loss_scale;
  s.last_grad_norm = norm.norm;
  if (s.scaler && !norm.finite && !s.nonfinite_loss) {
    // The scaled f16 gradients overflowed (the loss itself is finite): the expected signal to
    // back off, so the step is skipped whatever the NaN/Inf policy says.
    s.scaler->Update(true);
    s.ZeroGradients();
    ++s.skipped;
    trace.Arg("outcome", "skipped");
    return StepOutcome::kSkipped;
  }
  if (!norm.finite || s.nonfinite_loss) {
    if (options_.nonfinite == NonFinitePolicy::kSkip) {
      s.ZeroGradients();
      ++s.skipped;
      trace.Arg("outcome", "skipped");
      return StepOutcome::kSkipped;
    }
    std::string where = s.nonfinite_loss ? StrCat("the loss is ", s.last_loss) : "";
    for (const ParamState& p : s.params) {
      if (!where.empty()) break;
      const Tensor grad = s.HostView(p.slot.grad);
      const float* g = grad.data<float>();
      for (int64_t j = 0; j < grad.numel() && where.empty(); ++j)
        if (!std::isfinite(g[j])) where = StrCat("the gradient of '", p.name, "' holds ", g[j], " at element ", j);
    }
    Fail(ErrorCode::kRuntime, "step refused: ", where,
         "; parameters are unchanged and the gradients kept (zero them to go on)");
  }
  float lr = LearningRate(options_.schedule, options_.optimizer.lr, s.step);
  const float grad_scale = ClipScale(norm.norm, options_.max_grad_norm) / loss_scale;
  if (s.device) {
    s.device->Update(slots, lr, grad_scale, s.step);
    s.device->Synchronize();  // the next run's executor reads the parameters from its own stream
  } else {
    ApplyUpdate(options_.optimizer, slots, lr, grad_scale, s.step, *s.pool);
  }
  if (s.scaler) s.scaler->Update(false);
  ++s.step;
  s.ZeroGradients();
  trace.Arg("outcome", "applied");
  return StepOutcome::kApplied;
}

void TrainingSession::Impl::ZeroGradients() {
  // slot.grad keeps its bytes for the next accumulation; has_grad = false means "zero".
  for (ParamState& p : params) p.has_grad = false;
  backward_count = 0;
  nonfinite_loss = false;
}

void TrainingSession::ZeroGradients() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->ZeroGradients();
}

const ParamState* TrainingSession::Impl::Find(const std::string& name) const {
  for (const ParamState& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

const ParamState& TrainingSession::Impl::Get(const std::string& name) const {
  const ParamState* p = Find(name);
  if (!p) {
    const Value* v = nullptr;
    int id = model.FindValue(name);
    if (id != kNoValue) v = &model.values[static_cast<size_t>(id)];
    Fail(ErrorCode::kNotFound, "'", name, "' is not a trained parameter",
         v && v->is_parameter ? " (it is frozen or not float32)" : " of the model");
  }
  return *p;
}

Tensor TrainingSession::GetParameter(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->HostCopy(impl_->Get(name).slot.value);
}

void TrainingSession::SetParameter(const std::string& name, const Tensor& value) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  ParamState& p = const_cast<ParamState&>(impl_->Get(name));
  OF_REQUIRE(value.defined() && value.dtype() == DType::kFloat32 && value.shape() == p.slot.value.shape(),
             "parameter '", name, "' is float32", ShapeToString(p.slot.value.shape()), ", the new value is ",
             value.defined() ? DTypeName(value.dtype()) : "undefined", ShapeToString(value.shape()));
  impl_->Assign(p.slot.value, value);
}

void TrainingSession::Impl::Assign(const Tensor& dst, const Tensor& src) const {
  if (device) device->Overwrite(dst, src);
  else std::memcpy(dst.raw(), src.raw(), src.nbytes());
}

Tensor TrainingSession::GetGradient(const std::string& name) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const ParamState& p = impl_->Get(name);
  return p.has_grad ? impl_->HostCopy(p.slot.grad) : Tensor(DType::kFloat32, p.slot.value.shape());
}

int64_t TrainingSession::step() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->step;
}
int64_t TrainingSession::skipped_steps() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->skipped;
}
float TrainingSession::learning_rate() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return LearningRate(options_.schedule, options_.optimizer.lr, impl_->step);
}
double TrainingSession::last_loss() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last_loss;
}
double TrainingSession::last_grad_norm() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last_grad_norm;
}

float TrainingSession::loss_scale() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->scaler ? impl_->scaler->scale() : 1.0f;
}

size_t TrainingSession::DefaultFetchCount(RunMode mode) const {
  return mode == RunMode::kTrain ? interface_.outputs.size() : impl_->eval->graph->outputs.size();
}

TrainingMemory TrainingSession::memory() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const Impl& s = *impl_;
  TrainingMemory m;
  m.forward_arena = s.forward->executor->planned_peak_bytes();
  m.backward_arena = s.backward->executor->planned_peak_bytes();
  m.eval_arena = s.eval->executor->planned_peak_bytes();
  m.saved_bytes = s.saved_bytes;
  return m;
}

size_t TrainingSession::cuda_graphs_captured() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const Impl& s = *impl_;
  return s.forward->executor->cuda_graphs_captured() + s.backward->executor->cuda_graphs_captured() +
         s.eval->executor->cuda_graphs_captured();
}

Graph TrainingSession::ExportModel() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Graph g = impl_->model;
  for (const ParamState& p : impl_->params)
    g.values[static_cast<size_t>(g.FindValue(p.name))].constant = impl_->HostCopy(p.slot.value);
  return g;
}

}  // namespace oneflow::train
