// One loaded model version: its instances (sessions, each with its own intra-op threads) and the
// queue in front of them. With dynamic batching, an instance that comes free takes the oldest
// request and every queued request compatible with it (same inputs, same shapes past the batch
// dimension) up to max_batch_size, waiting at most max_queue_delay for more, runs them as one
// batch and splits the outputs back. docs/serving.md, "Scheduling".
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "graph/graph.h"
#include "serve/inference.h"
#include "serve/metrics.h"
#include "serve/model_config.h"
#include "serve/model_runner.h"

namespace oneflow {
namespace serve {

class ModelScheduler {
 public:
  // Creates `settings.instance_count` sessions of `model` and runs the warmup samples on each (a
  // failing sample throws naming it). `server_threads` is what the server may use in all; an
  // instance gets settings.intra_op_threads, or its share of server_threads.
  // `load_id` distinguishes loads of the same version (the followers of a sharded job need it).
  ModelScheduler(std::string model_name, int64_t version, ModelSettings settings, const Graph& model,
                 int server_threads, uint64_t load_id = 0);
  ~ModelScheduler();  // Drain(now): queued requests are answered kUnavailable
  ModelScheduler(const ModelScheduler&) = delete;
  ModelScheduler& operator=(const ModelScheduler&) = delete;

  // Checks `request` against the model (input names, data types, shapes, batch size, outputs) and
  // queues it; `done` is called once, later, on an instance thread. Throws ServeError (and does not
  // call `done`) when the request is invalid, the queue is full or the model is draining; a refused
  // request and callback are left as they were.
  void Submit(InferRequest&& request, InferCallback&& done);
  bool stopping() const;  // draining (unloaded, replaced by a reload, or the server stopping)

  // Stops accepting; lets the instances finish the queue until `deadline`, then answers what is
  // still queued with kUnavailable and joins the instances (a batch already running finishes).
  void Drain(Clock::time_point deadline);

  const std::string& model_name() const { return model_name_; }
  int64_t version() const { return version_; }
  const ModelSettings& settings() const { return settings_; }
  std::shared_ptr<const ModelMetrics> metrics() const { return metrics_; }
  int threads_per_instance() const { return threads_per_instance_; }
  // What the warmup ran, for the load's log line ("" without warmup samples).
  const std::string& warmup_report() const { return warmup_report_; }

 private:
  struct Pending {
    InferRequest request;
    InferCallback done;
    Clock::time_point enqueued;
    Clock::time_point deadline;  // max() when the request has no timeout
    int64_t batch = 1;           // the request's size along the batch dimension
  };

  void Validate(const InferRequest& request, int64_t* batch) const;
  void InstanceLoop(size_t instance);
  // Takes the next batch off the queue (lock held); empty when stopping with nothing queued.
  std::vector<Pending> NextBatch(std::unique_lock<std::mutex>& lock);
  bool Compatible(const Pending& a, const Pending& b) const;
  void RunBatch(ModelRunner& runner, std::vector<Pending>& batch);
  void Finish(Pending& p, InferOutcome outcome);

  const std::string model_name_;
  const int64_t version_;
  ModelSettings settings_;  // resolved gains the plan of a sharded model
  int threads_per_instance_ = 1;
  std::string warmup_report_;
  std::vector<std::unique_ptr<ModelRunner>> runners_;  // one per instance
  std::shared_ptr<ModelMetrics> metrics_ = std::make_shared<ModelMetrics>();

  mutable std::mutex mutex_;
  std::condition_variable work_;     // a request arrived, or stopping
  std::condition_variable drained_;  // the queue emptied and no batch is running
  std::deque<Pending> queue_;
  int running_batches_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> instances_;
};

}  // namespace serve
}  // namespace oneflow
