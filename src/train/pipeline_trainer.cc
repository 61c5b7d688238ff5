// PipelineTrainer: setup, the 1F1B training step, pipelined inference and parameter access
// (docs/pipeline.md). Explain is in pipeline_explain.cc.
#include "train/pipeline_trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/hash.h"
#include "base/trace.h"
#include "plan/plan.h"
#include "train/lr_schedule.h"
#include "train/training_graph.h"

namespace oneflow::train {

namespace {

constexpr size_t kMaxRank = 8;

// The slice rule of docs/distributed.md: piece i of n elements over p pieces.
struct Piece {
  int64_t start, rows;
};
Piece SliceRule(int64_t n, int64_t p, int64_t i) {
  const int64_t q = n / p, r = n % p;
  return {i * q + std::min(i, r), q + (i < r ? 1 : 0)};
}

// Rows [start, start + rows) of a batch-first tensor, as a view (no copy).
Tensor Rows(const Tensor& t, int64_t start, int64_t rows) {
  Shape s = t.shape();
  s[0] = rows;
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(t.dim(0));
  const size_t offset = static_cast<size_t>(static_cast<const char*>(t.raw()) -
                                            static_cast<const char*>(t.storage()->data()));
  return Tensor(t.dtype(), s, t.storage(), offset + static_cast<size_t>(start) * row_bytes);
}

// A float32 tensor whose shape the receiver does not know: a fixed-size header, then the bytes.
void SendTensor(Communicator& c, const Tensor& t, int peer) {
  OF_CHECK(t.dtype() == DType::kFloat32 && t.shape().size() <= kMaxRank, kUnsupported,
           "pipeline boundary values must be float32 of rank <= ", kMaxRank, ", got ", DTypeName(t.dtype()),
           ShapeToString(t.shape()));
  int64_t header[kMaxRank + 1] = {static_cast<int64_t>(t.shape().size())};
  for (size_t i = 0; i < t.shape().size(); ++i) header[i + 1] = t.shape()[i];
  c.Send(header, sizeof header, peer);
  c.Send(t.raw(), t.nbytes(), peer);
}
Tensor RecvTensor(Communicator& c, int peer) {
  int64_t header[kMaxRank + 1] = {0};
  c.Recv(header, sizeof header, peer);
  OF_CHECK(header[0] >= 0 && header[0] <= static_cast<int64_t>(kMaxRank), kRuntime, "bad tensor header from rank ", peer);
  Shape s(header + 1, header + 1 + header[0]);
  Tensor t = Tensor::Uninitialized(DType::kFloat32, s);
  c.Recv(t.raw(), t.nbytes(), peer);
  return t;
}

// Broadcasts a float32 tensor of a shape only the root knows from group member `root`.
Tensor BroadcastTensor(Communicator& c, const Tensor& t, int root, const std::vector<int>& group, bool is_root) {
  int64_t header[kMaxRank + 1] = {0};
  if (is_root) {
    OF_CHECK(t.dtype() == DType::kFloat32 && t.shape().size() <= kMaxRank, kUnsupported,
             "pipeline outputs must be float32 of rank <= ", kMaxRank);
    header[0] = static_cast<int64_t>(t.shape().size());
    for (size_t i = 0; i < t.shape().size(); ++i) header[i + 1] = t.shape()[i];
  }
  c.Broadcast(header, sizeof header, root, group);
  Tensor out = is_root ? t.Clone() : Tensor::Uninitialized(DType::kFloat32, Shape(header + 1, header + 1 + header[0]));
  c.Broadcast(out.raw(), out.nbytes(), root, group);
  return out;
}

bool Contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

}  // namespace

std::unique_ptr<DistributedTrainer> CreatePipelineTrainer(const Graph& model, const DistributedTrainingOptions& options) {
  return std::make_unique<PipelineTrainer>(model, options);
}

PipelineTrainer::PipelineTrainer(const Graph& model, const DistributedTrainingOptions& options) : options_(options) {
  const TrainingOptions& to = options.training;
  OF_REQUIRE(options.pipeline_stages >= 2, "a pipeline needs pipeline_stages >= 2, got ", options.pipeline_stages);
  OF_REQUIRE(options.micro_batches >= 1, "micro_batches must be >= 1, got ", options.micro_batches);
  OF_REQUIRE(options.zero_stage == 0, "ZeRO (zero_stage ", options.zero_stage,
             ") is not combined with pipeline stages: each stage keeps whole optimizer state");
  OF_REQUIRE(!to.activation_checkpointing, "activation checkpointing is not supported by distributed trainers");
  OF_REQUIRE(std::isfinite(to.max_grad_norm), "max_grad_norm must be finite");
  OF_REQUIRE(to.nonfinite == NonFinitePolicy::kSkip || to.nonfinite == NonFinitePolicy::kRefuse,
             "unknown NaN/Inf policy ", static_cast<int>(to.nonfinite));
  ValidateOptimizerConfig(to.optimizer);
  ValidateLrSchedule(to.schedule);
  OF_REQUIRE(options.dist.plan.mode == PlanMode::kDataParallel, "pipeline stages are data parallel inside; plan mode '",
             PlanModeName(options.dist.plan.mode), "' does not combine with pipeline_stages > 1");
  process_comm_ = ResolveDistributedOptions(options_.dist);
  const Placement& P = options_.dist.plan.placement;
  OF_REQUIRE(P.ndim() == 1, "pipeline stages need a 1-D placement, got ", P.ToString());
  num_stages_ = options.pipeline_stages;
  OF_REQUIRE(P.size() % num_stages_ == 0, "placement ", P.ToString(), " has ", P.size(), " device(s), which do not "
             "divide into ", num_stages_, " pipeline stages of equal size");
  dp_ = P.size() / num_stages_;

  TrainingGraph t = BuildTrainingGraph(model, to);
  stages_ = CutIntoStages(t, num_stages_);
  interface_ = t.interface;
  loss_name_ = t.name(t.loss);
  for (int v : t.data_inputs) data_inputs_.push_back(t.name(v));
  for (int v : t.user_outputs) model_outputs_.push_back(t.name(v));
  params_ = StageParams(t, stages_);
  for (const ParamInfo& p : params_) param_names_.push_back(p.name);

  devices_ = MakeLocalDevices(P, options_.dist.num_devices, options_.dist.timeout_ms, process_comm_);
  if (process_comm_) {
    // Every rank must have cut the same model the same way: stages, boundaries, parameters and
    // their initial values.
    std::string shape;
    for (const PipelineStage& st : stages_) {
      shape += StrCat("|", st.input, ">", st.output, ":", st.forward_nodes);
      for (const std::string& p : st.params) shape += "," + p;
    }
    uint64_t hash = Fnv1a(shape.data(), shape.size());
    for (const Tensor& w : t.initial) hash = Fnv1a(w.raw(), w.nbytes(), hash);
    CheckSameModel(*process_comm_, hash, P.devices);
    // Connect every group this rank's steps use now, so that a rank lost later fails its peers at
    // once instead of leaving one waiting for a group that never forms.
    const int stage = devices_.positions[0] / dp_, dp = devices_.positions[0] % dp_;
    if (dp_ > 1) process_comm_->Barrier(StageGroup(stage));
    for (const ParamInfo& p : params_) {
      if (p.stages.size() < 2 || std::find(p.stages.begin(), p.stages.end(), stage) == p.stages.end()) continue;
      std::vector<int> group;
      for (int k : p.stages) group.push_back(Peer(k, dp));
      process_comm_->Barrier(group);
    }
  }
  device_.resize(devices_.size());
  const size_t num_state = OptimizerStateNames(to.optimizer).size();
  for (size_t slot = 0; slot < devices_.size(); ++slot) {
    Device& d = device_[slot];
    d.stage = devices_.positions[slot] / dp_;
    d.dp = devices_.positions[slot] % dp_;
    const PipelineStage& st = stages_[static_cast<size_t>(d.stage)];
    d.pool = DevicePool(options_.dist, device_.size());
    d.forward = CompilePart(st.forward, to.session.optimization_level, d.pool);
    d.backward = CompilePart(st.backward, to.session.optimization_level, d.pool);
    d.eval = CompilePart(st.eval, to.session.optimization_level, d.pool);
    for (int v : d.backward->graph->inputs) d.backward_inputs.push_back(d.backward->graph->values[static_cast<size_t>(v)].name);
    for (size_t i = 0; i < params_.size(); ++i) {
      const ParamInfo& info = params_[i];
      const bool here = Contains(st.params, info.name) || (info.stages.empty() && d.stage == 0);
      if (!here) continue;
      ParamState p;
      p.name = info.name;
      p.slot.value = t.initial[i].Clone();
      p.slot.grad = Tensor(DType::kFloat32, info.shape);
      for (size_t k = 0; k < num_state; ++k) p.slot.state.push_back(Tensor(DType::kFloat32, info.shape));
      d.params.push_back(std::move(p));
      d.param_index.push_back(static_cast<int>(i));
      auto it = std::find(st.params.begin(), st.params.end(), info.name);
      d.grad_index.push_back(it == st.params.end() ? -1 : static_cast<int>(it - st.params.begin()));
    }
  }
}

std::vector<int> PipelineTrainer::StageGroup(int stage) const {
  std::vector<int> g;
  for (int i = 0; i < dp_; ++i) g.push_back(Peer(stage, i));
  return g;
}

int PipelineTrainer::Peer(int stage, int dp) const {
  return devices_.placement.devices[static_cast<size_t>(stage * dp_ + dp)];
}

int PipelineTrainer::OutputStage(const std::string& name) const {
  for (int k = 0; k < num_stages_; ++k)
    if (Contains(stages_[static_cast<size_t>(k)].user_outputs, name)) return k;
  return -1;
}

std::map<std::string, Tensor> PipelineTrainer::CheckFeeds(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                          bool train, int64_t& batch) const {
  std::map<std::string, Tensor> named;
  batch = -1;
  std::string first;
  for (const auto& [name, t] : feeds) {
    OF_CHECK(Contains(data_inputs_, name), kNotFound, "the trainer has no input named '", name, "'");
    OF_REQUIRE(named.count(name) == 0, "input '", name, "' is given twice");
    const Value& decl = interface_.values[static_cast<size_t>(interface_.FindValue(name))];
    OF_REQUIRE(t.defined(), "input '", name, "' is an empty tensor handle");
    OF_REQUIRE(decl.type.dtype == DType::kUndefined || t.dtype() == decl.type.dtype, "input '", name, "' has dtype ",
               DTypeName(t.dtype()), ", the model expects ", DTypeName(decl.type.dtype));
    OF_REQUIRE(!decl.type.has_rank || t.rank() == decl.type.rank(), "input '", name, "' has shape ",
               ShapeToString(t.shape()), ", the model expects ", decl.type.ToString());
    for (size_t i = 1; decl.type.has_rank && i < decl.type.dims.size(); ++i)
      OF_REQUIRE(!decl.type.dims[i].known() || decl.type.dims[i].value == t.shape()[i], "input '", name,
                 "' has shape ", ShapeToString(t.shape()), ", the model expects ", decl.type.ToString());
    OF_REQUIRE(t.rank() >= 1 && t.dim(0) >= 1, "input '", name, "' has shape ", ShapeToString(t.shape()),
               "; pipeline stages split every input along its first (batch) dim, which must be >= 1");
    if (batch < 0) {
      batch = t.dim(0);
      first = name;
    }
    OF_REQUIRE(t.dim(0) == batch, "input '", name, "' has batch ", t.dim(0), " but '", first, "' has ", batch,
               "; every input is split along its first dim into the same micro-batches");
    named[name] = t;
  }
  if (train) {
    for (const std::string& name : data_inputs_)
      OF_REQUIRE(named.count(name), "input '", name, "' is missing (a training step needs every input, the labels too)");
  }
  OF_REQUIRE(batch > 0, "no input given");
  return named;
}

void PipelineTrainer::Prepare(const std::map<std::string, Shape>& input_shapes) {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t batch = -1;
  for (const std::string& name : data_inputs_) {
    auto it = input_shapes.find(name);
    OF_REQUIRE(it != input_shapes.end() && !it->second.empty(), "a batch-first shape for input '", name,
               "' is needed (the labels too)");
    OF_REQUIRE(batch < 0 || it->second[0] == batch, "inputs disagree on the batch size (", batch, " vs ",
               it->second[0], " for '", name, "')");
    batch = it->second[0];
  }
  const int64_t m = options_.micro_batches;
  OF_REQUIRE(batch >= m && batch / m >= dp_, "a batch of ", batch, " cannot be split into ", m,
             " micro-batches over the ", dp_, " data-parallel devices of a stage");
  const Piece block = SliceRule(SliceRule(batch, m, 0).rows, dp_, 0);
  last_block_shapes_.clear();
  for (const auto& [name, shape] : input_shapes) {
    Shape s = shape;
    s[0] = block.rows;
    last_block_shapes_[name] = s;
  }
}

TrainStepResult PipelineTrainer::TrainStep(const std::vector<std::pair<std::string, Tensor>>& feeds) {
  std::lock_guard<std::mutex> lock(mutex_);
  TraceScope trace("train", "train step");
  trace.Arg("step", step_);
  int64_t batch = 0;
  std::map<std::string, Tensor> named = CheckFeeds(feeds, true, batch);
  const int64_t m = options_.micro_batches;
  OF_REQUIRE(m <= batch, "micro_batches (", m, ") exceeds the batch size (", batch, ")");
  OF_REQUIRE(batch / m >= dp_, "a micro-batch of ", batch / m, " row(s) (batch ", batch, " over ", m,
             " micro-batches) cannot be split over the ", dp_, " data-parallel devices of a stage");
  std::vector<StepOutcome> out(devices_.size());
  RunOnDevices(devices_, [&](size_t slot) { TrainOnDevice(slot, named, batch, out[slot]); });
  const Piece block = SliceRule(SliceRule(batch, m, 0).rows, dp_, 0);
  last_block_shapes_.clear();
  for (const auto& [name, t] : named) {
    Shape s = t.shape();
    s[0] = block.rows;
    last_block_shapes_[name] = s;
  }
  if (!out[0].refused.empty()) Fail(ErrorCode::kRuntime, out[0].refused);
  if (out[0].result.applied)
    ++step_;
  else
    ++skipped_;
  return out[0].result;
}

void PipelineTrainer::TrainOnDevice(size_t slot, const std::map<std::string, Tensor>& feeds, int64_t batch,
                                    StepOutcome& result) {
  Device& d = device_[slot];
  Communicator& c = *devices_.comms[slot];
  const PipelineStage& st = stages_[static_cast<size_t>(d.stage)];
  const TrainingOptions& to = options_.training;
  const int S = num_stages_, M = options_.micro_batches;
  const bool last = d.stage == S - 1;
  const int prev = d.stage > 0 ? Peer(d.stage - 1, d.dp) : -1;
  const int next = last ? -1 : Peer(d.stage + 1, d.dp);
  const bool mean = !(to.appended_loss != AppendedLoss::kNone && to.loss_sum);

  std::vector<std::map<std::string, Tensor>> kept(static_cast<size_t>(M));
  std::vector<Shape> out_shape(static_cast<size_t>(M));
  std::vector<float> weight(static_cast<size_t>(M));
  std::vector<size_t> kept_bytes(static_cast<size_t>(M), 0);
  size_t in_flight = 0;
  d.saved_peak_bytes = d.sent_bytes = 0;
  double loss_sum = 0;
  bool loss_finite = true;
  std::vector<int> backward_runs(d.params.size(), 0);

  auto forward = [&](int j) -> Tensor {
    TraceScope phase("train", "forward");
    phase.Arg("micro_batch", j).Arg("stage", d.stage);
    const Piece mb = SliceRule(batch, M, j), blk = SliceRule(mb.rows, dp_, d.dp);
    std::map<std::string, Tensor> in;
    for (const auto& [name, t] : feeds) in[name] = Rows(t, mb.start + blk.start, blk.rows);
    if (prev >= 0) in[st.input] = RecvTensor(c, prev);
    for (const ParamState& p : d.params) in[p.name] = p.slot.value;
    std::vector<Tensor> outs = d.forward->Run(in);
    const Graph& fg = *d.forward->graph;
    std::map<std::string, Tensor> by_name;
    for (size_t i = 0; i < outs.size(); ++i) by_name[fg.values[static_cast<size_t>(fg.outputs[i])].name] = outs[i];
    auto& keep = kept[static_cast<size_t>(j)];
    for (const std::string& name : d.backward_inputs) {
      auto it = by_name.find(name);
      if (it != by_name.end()) {
        keep[name] = it->second;
        kept_bytes[static_cast<size_t>(j)] += it->second.nbytes();
      } else if (in.count(name) && !Contains(st.params, name)) {
        keep[name] = in[name];
      }
    }
    in_flight += kept_bytes[static_cast<size_t>(j)];
    d.saved_peak_bytes = std::max(d.saved_peak_bytes, in_flight);
    const Tensor& o = by_name.at(st.output);
    out_shape[static_cast<size_t>(j)] = o.shape();
    if (last) {
      OF_CHECK(o.numel() == 1, kInvalidArgument, "the loss '", st.output, "' must have one element, it has shape ",
               ShapeToString(o.shape()));
      weight[static_cast<size_t>(j)] = mean ? static_cast<float>(static_cast<double>(blk.rows) / static_cast<double>(batch)) : 1.0f;
      const double l = o.GetAsDouble(0);
      loss_finite = loss_finite && std::isfinite(l);
      loss_sum += static_cast<double>(weight[static_cast<size_t>(j)]) * l;
    }
    d.sent_bytes = std::max(d.sent_bytes, last ? size_t{0} : o.nbytes());
    return o;
  };
  auto backward = [&](int j, Tensor grad) {
    TraceScope phase("train", "backward");
    phase.Arg("micro_batch", j).Arg("stage", d.stage);
    auto& in = kept[static_cast<size_t>(j)];
    if (last) {
      grad = Tensor(DType::kFloat32, out_shape[static_cast<size_t>(j)]);
      grad.data<float>()[0] = weight[static_cast<size_t>(j)];
    }
    in[st.output_grad] = grad;
    for (const ParamState& p : d.params) in[p.name] = p.slot.value;
    std::vector<Tensor> grads = d.backward->Run(in);
    for (size_t i = 0; i < d.params.size(); ++i) {
      if (d.grad_index[i] < 0) continue;
      const Tensor& g = grads[static_cast<size_t>(d.grad_index[i])];
      ParamSlot& ps = d.params[i].slot;
      OF_CHECK(g.dtype() == DType::kFloat32 && g.numel() == ps.grad.numel(), kInternal, "gradient of '",
               d.params[i].name, "' has dtype ", DTypeName(g.dtype()), " shape ", ShapeToString(g.shape()));
      float* acc = ps.grad.data<float>();
      const float* add = g.data<float>();
      if (backward_runs[i]++ == 0)
        std::memcpy(acc, add, g.nbytes());
      else
        for (int64_t e = 0; e < g.numel(); ++e) acc[e] += add[e];
    }
    if (prev >= 0) {
      const Tensor& gi = grads.back();
      OF_CHECK(gi.dtype() == DType::kFloat32, kInternal, "the gradient of '", st.input, "' is not float32");
      c.Send(gi.raw(), gi.nbytes(), prev);
    }
    in.clear();
    in_flight -= kept_bytes[static_cast<size_t>(j)];
  };
  auto recv_grad = [&](int j) {
    Tensor g = Tensor::Uninitialized(DType::kFloat32, out_shape[static_cast<size_t>(j)]);
    c.Recv(g.raw(), g.nbytes(), next);
    return g;
  };

  // 1F1B. With blocking send/recv each link's operations must pair up in the same order on both
  // sides: a stage receives the gradient of micro-batch r before it sends the activation of
  // micro-batch warmup + r, which is exactly when its next stage sends that gradient.
  const int warmup = std::min(S - d.stage - 1, M);
  for (int j = 0; j < warmup; ++j) {
    Tensor a = forward(j);
    if (next >= 0) SendTensor(c, a, next);
  }
  for (int r = 0; r < M - warmup; ++r) {
    Tensor a = forward(warmup + r);
    Tensor g;
    if (next >= 0) {
      g = recv_grad(r);
      SendTensor(c, a, next);
    }
    backward(r, g);
  }
  for (int r = M - warmup; r < M; ++r) backward(r, recv_grad(r));

  // Gradients: summed over the stage's data-parallel group, then over the stages sharing a
  // parameter (in parameter order on every device, so collectives pair up).
  TraceScope reduce_phase("train", "reduce gradients");
  if (dp_ > 1) {
    const std::vector<int> group = StageGroup(d.stage);
    for (size_t i = 0; i < d.params.size(); ++i)
      if (d.grad_index[i] >= 0) c.AllReduceSum(d.params[i].slot.grad.raw(), d.params[i].slot.grad.numel(), DType::kFloat32, group);
  }
  for (size_t i = 0; i < d.params.size(); ++i) {
    const ParamInfo& info = params_[static_cast<size_t>(d.param_index[i])];
    if (info.stages.size() < 2) continue;
    std::vector<int> group;
    for (int k : info.stages) group.push_back(Peer(k, d.dp));
    c.AllReduceSum(d.params[i].slot.grad.raw(), d.params[i].slot.grad.numel(), DType::kFloat32, group);
  }
  for (size_t i = 0; i < d.params.size(); ++i)
    if (d.grad_index[i] < 0) std::memset(d.params[i].slot.grad.raw(), 0, d.params[i].slot.grad.nbytes());

  reduce_phase.StopClock();
  TraceScope step_phase("train", "step");
  // Global norm, NaN/Inf and the loss in one all-reduce over the placement: each parameter counted
  // once (its owner stage's first device), the loss by the last stage's devices.
  std::vector<ParamSlot*> owned, all;
  for (size_t i = 0; i < d.params.size(); ++i) {
    all.push_back(&d.params[i].slot);
    const ParamInfo& info = params_[static_cast<size_t>(d.param_index[i])];
    const int owner = info.stages.empty() ? 0 : info.stages.front();
    if (owner == d.stage && d.dp == 0) owned.push_back(&d.params[i].slot);
  }
  GradientNorm local = GlobalGradientNorm(owned, *d.pool);
  // [squared norm, loss, loss not finite, then per parameter: its owner found NaN/Inf in it]
  std::vector<double> stats(3 + params_.size(), 0.0);
  stats[0] = local.norm * local.norm;
  stats[1] = last ? loss_sum : 0.0;
  stats[2] = last && !loss_finite ? 1.0 : 0.0;
  if (!local.finite)
    for (size_t i = 0; i < d.params.size(); ++i) {
      const ParamSlot& ps = d.params[i].slot;
      if (std::find(owned.begin(), owned.end(), &ps) == owned.end()) continue;
      const float* g = ps.grad.data<float>();
      for (int64_t e = 0; e < ps.grad.numel(); ++e)
        if (!std::isfinite(g[e])) {
          stats[3 + static_cast<size_t>(d.param_index[i])] = 1.0;
          break;
        }
    }
  c.AllReduceSum(stats.data(), static_cast<int64_t>(stats.size()), DType::kFloat64, devices_.placement.devices);
  result.result.loss = stats[1];
  result.result.grad_norm = std::sqrt(stats[0]);
  std::string bad_param;
  for (size_t i = 0; i < params_.size() && bad_param.empty(); ++i)
    if (stats[3 + i] > 0) bad_param = params_[i].name;
  if (stats[2] > 0 || !bad_param.empty()) {
    result.result.applied = false;
    if (to.nonfinite == NonFinitePolicy::kRefuse)
      result.refused = StrCat("step refused: ", stats[2] > 0 ? StrCat("the loss is ", stats[1])
                                                             : StrCat("the gradient of '", bad_param, "' holds NaN or Inf"),
                              "; parameters are unchanged");
    return;
  }
  const float lr = LearningRate(to.schedule, to.optimizer.lr, step_);
  ApplyUpdate(to.optimizer, all, lr, ClipScale(result.result.grad_norm, to.max_grad_norm), step_, *d.pool);
}

std::vector<std::pair<std::string, Tensor>> PipelineTrainer::Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                                 const std::vector<std::string>& fetches) {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t batch = 0;
  std::map<std::string, Tensor> named = CheckFeeds(feeds, false, batch);
  std::vector<std::string> want = fetches.empty() ? model_outputs_ : fetches;
  for (const std::string& f : want) {
    OF_REQUIRE(!(f == loss_name_ && !Contains(model_outputs_, f)), "the loss '", f,
               "' is not computed by Run (inference); TrainStep reports it");
    OF_CHECK(Contains(model_outputs_, f), kNotFound, "the trainer has no output named '", f, "'");
  }
  for (const Device& d : device_)
    for (int v : d.eval->graph->inputs) {
      const std::string& name = d.eval->graph->values[static_cast<size_t>(v)].name;
      OF_REQUIRE(!Contains(data_inputs_, name) || named.count(name), "input '", name, "' is missing");
    }
  OF_REQUIRE(batch >= dp_, "a batch of ", batch, " row(s) cannot be split over the ", dp_,
             " data-parallel devices of a stage");
  std::vector<std::vector<std::pair<std::string, Tensor>>> out(devices_.size());
  RunOnDevices(devices_, [&](size_t slot) { EvalOnDevice(slot, named, batch, want, out[slot]); });
  return out[0];
}

void PipelineTrainer::EvalOnDevice(size_t slot, const std::map<std::string, Tensor>& feeds, int64_t batch,
                                   const std::vector<std::string>& fetches,
                                   std::vector<std::pair<std::string, Tensor>>& result) {
  Device& d = device_[slot];
  Communicator& c = *devices_.comms[slot];
  const PipelineStage& st = stages_[static_cast<size_t>(d.stage)];
  const bool last = d.stage == num_stages_ - 1;
  const int prev = d.stage > 0 ? Peer(d.stage - 1, d.dp) : -1;
  const int next = last ? -1 : Peer(d.stage + 1, d.dp);
  // Micro-batches pipeline inference too, as long as each still splits over the stage's devices.
  const int m = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(options_.micro_batches, batch / dp_)));
  std::map<std::string, std::vector<Tensor>> blocks;  // this stage's model outputs, per micro-batch
  const Graph& eg = *d.eval->graph;
  for (int j = 0; j < m; ++j) {
    const Piece mb = SliceRule(batch, m, j), blk = SliceRule(mb.rows, dp_, d.dp);
    std::map<std::string, Tensor> in;
    for (const auto& [name, t] : feeds) in[name] = Rows(t, mb.start + blk.start, blk.rows);
    if (prev >= 0) in[st.input] = RecvTensor(c, prev);
    for (const ParamState& p : d.params) in[p.name] = p.slot.value;
    std::vector<Tensor> outs = d.eval->Run(in);
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::string& name = eg.values[static_cast<size_t>(eg.outputs[i])].name;
      if (name == st.output && next >= 0) SendTensor(c, outs[i], next);
      if (Contains(st.user_outputs, name)) {
        OF_CHECK(outs[i].rank() >= 1 && outs[i].dim(0) == blk.rows, kUnsupported, "model output '", name,
                 "' has shape ", ShapeToString(outs[i].shape()), " for a block of ", blk.rows,
                 " row(s); pipelined inference needs outputs whose first dim is the batch");
        blocks[name].push_back(outs[i]);
      }
    }
  }
  // Each output: gathered inside its stage (blocks in slice-rule order), then broadcast from the
  // stage's first device to every device of the placement.
  for (const std::string& f : fetches) {
    const int owner = OutputStage(f);
    Tensor whole;
    if (owner == d.stage) {
      const std::vector<Tensor>& parts = blocks.at(f);
      const size_t row_bytes = parts[0].nbytes() / static_cast<size_t>(parts[0].dim(0));
      Shape shape = parts[0].shape();
      shape[0] = batch;
      whole = Tensor::Uninitialized(DType::kFloat32, shape);
      char* dst = static_cast<char*>(whole.raw());
      for (int j = 0; j < m; ++j) {
        const Piece mb = SliceRule(batch, m, j);
        const Tensor& mine = parts[static_cast<size_t>(j)];
        if (dp_ == 1) {
          std::memcpy(dst + static_cast<size_t>(mb.start) * row_bytes, mine.raw(), mine.nbytes());
          continue;
        }
        std::vector<size_t> sizes;
        for (int i = 0; i < dp_; ++i) sizes.push_back(static_cast<size_t>(SliceRule(mb.rows, dp_, i).rows) * row_bytes);
        c.AllGather(mine.raw(), dst + static_cast<size_t>(mb.start) * row_bytes, sizes, StageGroup(d.stage));
      }
    }
    const bool root = owner == d.stage && d.dp == 0;
    result.emplace_back(f, BroadcastTensor(c, whole, owner * dp_, devices_.placement.devices, root));
  }
}

Tensor PipelineTrainer::GetParameter(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(param_names_.begin(), param_names_.end(), name);
  OF_CHECK(it != param_names_.end(), kNotFound, "'", name, "' is not a trained parameter of the model");
  const ParamInfo& info = params_[static_cast<size_t>(it - param_names_.begin())];
  const int owner = info.stages.empty() ? 0 : info.stages.front();
  auto local = [&](const Device& d) -> const Tensor* {
    for (size_t i = 0; i < d.params.size(); ++i)
      if (d.params[i].name == name) return &d.params[i].slot.value;
    return nullptr;
  };
  if (devices_.size() == devices_.placement.devices.size()) {  // in-process: read the owner directly
    for (const Device& d : device_)
      if (d.stage == owner && d.dp == 0) return local(d)->Clone();
  }
  // One rank of a multi-process job: the owner stage's first device broadcasts it.
  const Device& d = device_[0];
  Tensor t = d.stage == owner && d.dp == 0 ? local(d)->Clone() : Tensor(DType::kFloat32, info.shape);
  devices_.comms[0]->Broadcast(t.raw(), t.nbytes(), owner * dp_, devices_.placement.devices);
  return t;
}

}  // namespace oneflow::train
