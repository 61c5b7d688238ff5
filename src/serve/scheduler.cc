#include "serve/scheduler.h"

#include <sys/prctl.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "base/error.h"
#include "base/thread_pool.h"
#include "base/trace.h"
#include "serve/datatype.h"

namespace oneflow {
namespace serve {
namespace {

uint64_t MicrosBetween(Clock::time_point a, Clock::time_point b) {
  return b > a ? static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(b - a).count()) : 0;
}

// Rows [begin, begin + rows) of `t` along dimension 0, sharing its storage.
Tensor RowsOf(const Tensor& t, int64_t begin, int64_t rows) {
  Shape shape = t.shape();
  int64_t total = shape[0];
  shape[0] = rows;
  if (t.numel() == 0 || !t.storage()) return Tensor(t.dtype(), shape);
  size_t row_bytes = t.nbytes() / static_cast<size_t>(total);
  size_t base = static_cast<size_t>(static_cast<const char*>(t.raw()) - static_cast<const char*>(t.storage()->data()));
  return Tensor(t.dtype(), shape, t.storage(), base + row_bytes * static_cast<size_t>(begin));
}

}  // namespace

ModelScheduler::ModelScheduler(std::string model_name, int64_t version, ModelSettings settings, const Graph& model,
                               int server_threads, uint64_t load_id)
    : model_name_(std::move(model_name)), version_(version), settings_(std::move(settings)) {
  int instances = std::max(1, settings_.instance_count);
  if (server_threads <= 0) server_threads = ThreadPool::DefaultThreadCount();
  threads_per_instance_ =
      settings_.intra_op_threads > 0 ? settings_.intra_op_threads : std::max(1, server_threads / instances);
  for (int i = 0; i < instances; ++i)
    runners_.push_back(MakeModelRunner(model_name_, version_, load_id, settings_, model, threads_per_instance_));
  // GET .../config shows how a sharded model is planned (for a full batch, when the shapes allow).
  std::string plan = runners_[0]->ExplainPlan(std::max(1, settings_.max_batch_size));
  if (!plan.empty()) (*settings_.resolved.mutable_parameters())["oneflow_plan"].set_string_value(plan);
  // Warmup (config `model_warmup`): each sample on every instance, before any request is taken,
  // so that the plans, packed weights and pages its shapes need exist before the first request.
  for (const WarmupSample& w : settings_.warmup) {
    const auto start = Clock::now();
    for (size_t i = 0; i < runners_.size(); ++i) {
      for (int r = 0; r < w.count; ++r) {
        try {
          runners_[i]->Run(w.inputs, {});
        } catch (const Error& e) {
          Fail(e.code(), "model_warmup '", w.name, "' failed on instance ", i, ": ", e.what());
        }
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    warmup_report_ += StrCat(warmup_report_.empty() ? "" : ", ", "'", w.name, "' ", w.count, "x on ", runners_.size(),
                             " instance(s) in ", static_cast<int64_t>(ms + 0.5), " ms");
  }
  for (size_t i = 0; i < runners_.size(); ++i) instances_.emplace_back([this, i] { InstanceLoop(i); });
}

ModelScheduler::~ModelScheduler() { Drain(Clock::now()); }

void ModelScheduler::Validate(const InferRequest& request, int64_t* batch) const {
  const bool batched = settings_.max_batch_size > 0;
  std::set<std::string> seen;
  *batch = 1;
  bool batch_known = false;
  for (const auto& input : request.inputs) {
    const std::string& name = input.first;
    const Tensor& tensor = input.second;
    auto spec = std::find_if(settings_.inputs.begin(), settings_.inputs.end(),
                             [&](const TensorSpec& s) { return s.name == name; });
    if (spec == settings_.inputs.end()) {
      std::string known;
      for (const TensorSpec& s : settings_.inputs) known += (known.empty() ? "'" : ", '") + s.name + "'";
      Refuse(StatusCode::kInvalidArgument, "unexpected input '", name, "' for model '", model_name_,
             "' (its inputs: ", known, ")");
    }
    if (!seen.insert(name).second) Refuse(StatusCode::kInvalidArgument, "input '", name, "' is given twice");
    if (tensor.dtype() != spec->dtype)
      Refuse(StatusCode::kInvalidArgument, "input '", name, "' has datatype ", ProtocolDatatypeName(tensor.dtype()),
             " but model '", model_name_, "' expects ", ProtocolDatatypeName(spec->dtype));
    const Shape& shape = tensor.shape();
    size_t lead = batched ? 1 : 0;
    bool fits = shape.size() == spec->dims.size() + lead;
    for (size_t i = 0; fits && i < spec->dims.size(); ++i)
      fits = spec->dims[i] == -1 || spec->dims[i] == shape[i + lead];
    if (!fits)
      Refuse(StatusCode::kInvalidArgument, "input '", name, "' has shape ", ShapeToString(shape), " but model '",
             model_name_, "' expects ", DimsToString(spec->dims, batched),
             batched ? " (the first dimension is the batch)" : "");
    if (batched) {
      if (shape[0] < 1 || shape[0] > settings_.max_batch_size)
        Refuse(StatusCode::kInvalidArgument, "input '", name, "' has batch size ", shape[0], "; model '", model_name_,
               "' takes 1 to ", settings_.max_batch_size);
      if (batch_known && shape[0] != *batch)
        Refuse(StatusCode::kInvalidArgument, "inputs disagree on the batch size (", *batch, " and ", shape[0], ")");
      *batch = shape[0];
      batch_known = true;
    }
  }
  for (const TensorSpec& s : settings_.inputs)
    if (!s.optional && !seen.count(s.name))
      Refuse(StatusCode::kInvalidArgument, "input '", s.name, "' of model '", model_name_, "' is missing");
  std::set<std::string> asked;
  for (const std::string& name : request.outputs) {
    bool known = std::any_of(settings_.outputs.begin(), settings_.outputs.end(),
                             [&](const TensorSpec& s) { return s.name == name; });
    if (!known) Refuse(StatusCode::kInvalidArgument, "model '", model_name_, "' has no output '", name, "'");
    if (!asked.insert(name).second) Refuse(StatusCode::kInvalidArgument, "output '", name, "' is requested twice");
  }
}

void ModelScheduler::Submit(InferRequest&& request, InferCallback&& done) {
  Pending p;
  Validate(request, &p.batch);
  p.enqueued = Clock::now();
  uint64_t timeout_us = settings_.default_timeout_us;
  if (request.timeout_us > 0 && (settings_.allow_timeout_override || timeout_us == 0)) timeout_us = request.timeout_us;
  p.deadline = timeout_us > 0 ? p.enqueued + std::chrono::microseconds(timeout_us) : Clock::time_point::max();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Refusals leave `request` and `done` untouched, so the caller may submit them elsewhere.
    if (stopping_)
      Refuse(StatusCode::kUnavailable, "model '", model_name_, "' version ", version_,
             " is unloading or the server is stopping");
    if (queue_.size() >= settings_.max_queue_size)
      Refuse(StatusCode::kUnavailable, "model '", model_name_, "' version ", version_, ": the queue is full (",
             queue_.size(), " requests waiting, max_queue_size ", settings_.max_queue_size, "); retry later");
    p.request = std::move(request);
    p.done = std::move(done);
    queue_.push_back(std::move(p));
    metrics_->pending_requests.fetch_add(1, std::memory_order_relaxed);
    metrics_->inflight_requests.fetch_add(1, std::memory_order_relaxed);
  }
  work_.notify_one();
}

bool ModelScheduler::Compatible(const Pending& a, const Pending& b) const {
  if (a.request.inputs.size() != b.request.inputs.size()) return false;
  for (const auto& input : a.request.inputs) {
    auto it = std::find_if(b.request.inputs.begin(), b.request.inputs.end(),
                           [&](const auto& in) { return in.first == input.first; });
    if (it == b.request.inputs.end()) return false;
    const Shape& sa = input.second.shape();
    const Shape& sb = it->second.shape();
    if (sa.size() != sb.size() || !std::equal(sa.begin() + 1, sa.end(), sb.begin() + 1)) return false;
  }
  return true;
}

std::vector<ModelScheduler::Pending> ModelScheduler::NextBatch(std::unique_lock<std::mutex>& lock) {
  std::vector<Pending> batch;
  while (queue_.empty()) {
    if (stopping_) return batch;
    work_.wait(lock);
  }
  batch.push_back(std::move(queue_.front()));
  queue_.pop_front();
  if (!settings_.dynamic_batching || settings_.max_batch_size <= 0) return batch;

  const int64_t max_batch = settings_.max_batch_size;
  int64_t total = batch[0].batch;
  auto gather = [&] {
    for (auto it = queue_.begin(); it != queue_.end() && total < max_batch;) {
      if (total + it->batch <= max_batch && Compatible(batch[0], *it)) {
        total += it->batch;
        batch.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  };
  auto preferred = [&] {
    const auto& sizes = settings_.preferred_batch_sizes;
    return std::find(sizes.begin(), sizes.end(), total) != sizes.end();
  };
  gather();
  if (settings_.max_queue_delay_us > 0) {
    Clock::time_point until = batch[0].enqueued + std::chrono::microseconds(settings_.max_queue_delay_us);
    while (total < max_batch && !preferred() && !stopping_ && Clock::now() < until) {
      work_.wait_until(lock, until);
      gather();
    }
  }
  // With preferred sizes, run the largest preferred size a prefix of the batch makes; the rest
  // goes back to the front of the queue, in order.
  if (!settings_.preferred_batch_sizes.empty() && !preferred()) {
    int64_t prefix = 0;
    size_t keep = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      prefix += batch[i].batch;
      const auto& sizes = settings_.preferred_batch_sizes;
      if (std::find(sizes.begin(), sizes.end(), prefix) != sizes.end()) keep = i + 1;
    }
    if (keep > 0) {
      for (size_t i = batch.size(); i-- > keep;) queue_.push_front(std::move(batch[i]));
      batch.resize(keep);
    }
  }
  return batch;
}

bool ModelScheduler::stopping() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopping_;
}

void ModelScheduler::Finish(Pending& p, InferOutcome outcome) {
  outcome.version = version_;
  const StatusCode code = outcome.code;
  (outcome.code == StatusCode::kOk ? metrics_->request_success : metrics_->request_failure)
      .fetch_add(1, std::memory_order_relaxed);
  metrics_->request_duration_us.fetch_add(MicrosBetween(p.enqueued, Clock::now()), std::memory_order_relaxed);
  metrics_->inflight_requests.fetch_sub(1, std::memory_order_relaxed);
  try {
    p.done(std::move(outcome));
  } catch (...) {
    // A front end's callback must not throw; there is nobody left to tell.
  }
  if (TraceEnabled()) {  // the request from its arrival to its encoded answer, on the model's request track
    const Clock::time_point arrived = p.request.received != Clock::time_point{} ? p.request.received : p.enqueued;
    TraceArgs args;
    args.Add("model", model_name_).Add("version", version_).Add("protocol", p.request.protocol);
    args.Add("id", p.request.id).Add("batch", p.batch).Add("status", StatusCodeName(code));
    TraceSpan("serve", StrCat("request ", model_name_), StrCat("requests ", model_name_), arrived, Clock::now(), args);
  }
}

void ModelScheduler::InstanceLoop(size_t instance) {
  // The batcher waits microseconds (max_queue_delay); Linux's default 50 us timer slack would add
  // up to that much to every such wait.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  SetTraceThreadName(StrCat("serve ", model_name_, " v", version_, " instance ", instance));
  ModelRunner& runner = *runners_[instance];
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    std::vector<Pending> batch = NextBatch(lock);
    if (batch.empty()) return;  // stopping, nothing queued
    metrics_->pending_requests.fetch_sub(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
    ++running_batches_;
    lock.unlock();
    RunBatch(runner, batch);
    lock.lock();
    --running_batches_;
    if (queue_.empty() && running_batches_ == 0) drained_.notify_all();
  }
}

void ModelScheduler::RunBatch(ModelRunner& runner, std::vector<Pending>& batch) {
  const Clock::time_point start = Clock::now();
  TraceScope trace("serve", "batch");  // the session's run and its node slices nest in it
  trace.Arg("model", model_name_).Arg("version", version_).Arg("requests", batch.size());
  // Requests whose client left or whose timeout passed while queued are answered, not run.
  std::vector<Pending> live;
  for (Pending& p : batch) {
    metrics_->queue_duration_us.fetch_add(MicrosBetween(p.enqueued, start), std::memory_order_relaxed);
    if (p.request.cancelled && p.request.cancelled->load(std::memory_order_relaxed)) {
      Finish(p, {StatusCode::kCancelled, "the client cancelled the request", {}});
    } else if (start > p.deadline) {
      Finish(p, {StatusCode::kDeadlineExceeded,
                 StrCat("request timed out after ", MicrosBetween(p.enqueued, start), " us in the queue of model '",
                        model_name_, "'"),
                 {}});
    } else {
      live.push_back(std::move(p));
    }
  }
  if (live.empty()) return;

  // The outputs to fetch: the union of what the requests asked for (all when one asked for all).
  std::vector<std::string> fetches;
  bool all = std::any_of(live.begin(), live.end(), [](const Pending& p) { return p.request.outputs.empty(); });
  if (all) {
    for (const TensorSpec& s : settings_.outputs) fetches.push_back(s.name);
  } else {
    for (const Pending& p : live)
      for (const std::string& name : p.request.outputs)
        if (std::find(fetches.begin(), fetches.end(), name) == fetches.end()) fetches.push_back(name);
  }

  // One request runs on its own tensors; several are concatenated along the batch dimension.
  int64_t total = 0;
  for (const Pending& p : live) total += p.batch;
  NamedTensors feeds;
  if (live.size() == 1) {
    feeds = live[0].request.inputs;
  } else {
    for (const auto& [name, first] : live[0].request.inputs) {
      Shape shape = first.shape();
      shape[0] = total;
      Tensor joined = Tensor::Uninitialized(first.dtype(), shape);
      const bool strings = first.dtype() == DType::kString;  // objects, copied one by one
      char* dst = strings ? nullptr : static_cast<char*>(joined.raw());
      int64_t row = 0;
      for (const Pending& p : live) {
        for (const auto& [n, t] : p.request.inputs) {
          if (n != name) continue;
          if (strings) {
            std::copy(t.strings(), t.strings() + t.numel(), joined.strings() + row);
            row += t.numel();
            continue;
          }
          if (t.nbytes()) std::memcpy(dst, t.raw(), t.nbytes());
          dst += t.nbytes();
        }
      }
      feeds.emplace_back(name, std::move(joined));
    }
  }
  const Clock::time_point inputs_ready = Clock::now();
  metrics_->RecordBatch(static_cast<int>(total));
  trace.Arg("batch_size", total);

  NamedTensors results;
  InferOutcome failure;
  try {
    results = runner.Run(feeds, fetches);
  } catch (const Error& e) {
    failure = {StatusOfEngineError(e.code()), StrCat("model '", model_name_, "' failed: ", e.what()), {}};
  } catch (const std::exception& e) {
    failure = {StatusCode::kInternal, StrCat("model '", model_name_, "' failed: ", e.what()), {}};
  }
  const Clock::time_point ran = Clock::now();
  metrics_->compute_input_duration_us.fetch_add(MicrosBetween(start, inputs_ready), std::memory_order_relaxed);
  metrics_->compute_infer_duration_us.fetch_add(MicrosBetween(inputs_ready, ran), std::memory_order_relaxed);
  if (failure.code == StatusCode::kOk && live.size() > 1) {
    for (const auto& [name, t] : results)
      if (t.rank() == 0 || t.dim(0) != total)
        failure = {StatusCode::kInternal,
                   StrCat("model '", model_name_, "' output '", name, "' has shape ", ShapeToString(t.shape()),
                          ", which does not lead with the batch of ", total),
                   {}};
  }
  if (failure.code != StatusCode::kOk) {
    for (Pending& p : live) Finish(p, failure);
    return;
  }

  int64_t row = 0;
  for (Pending& p : live) {
    InferOutcome outcome;
    const std::vector<std::string>& wanted = p.request.outputs.empty() ? fetches : p.request.outputs;
    for (const std::string& name : wanted) {
      auto it = std::find_if(results.begin(), results.end(), [&](const auto& r) { return r.first == name; });
      outcome.outputs.emplace_back(name, live.size() == 1 ? it->second : RowsOf(it->second, row, p.batch));
    }
    row += p.batch;
    Finish(p, std::move(outcome));
  }
  metrics_->compute_output_duration_us.fetch_add(MicrosBetween(ran, Clock::now()), std::memory_order_relaxed);
}

void ModelScheduler::Drain(Clock::time_point deadline) {
  std::deque<Pending> abandoned;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
    work_.notify_all();
    drained_.wait_until(lock, deadline, [&] { return queue_.empty() && running_batches_ == 0; });
    abandoned.swap(queue_);
  }
  metrics_->pending_requests.fetch_sub(static_cast<int64_t>(abandoned.size()), std::memory_order_relaxed);
  for (Pending& p : abandoned)
    Finish(p, {StatusCode::kUnavailable,
               StrCat("model '", model_name_, "' version ", version_, " stopped before the request ran"),
               {}});
  for (std::thread& t : instances_)
    if (t.joinable()) t.join();
}

}  // namespace serve
}  // namespace oneflow
