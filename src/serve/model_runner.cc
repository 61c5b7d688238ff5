#include "serve/model_runner.h"

#include <algorithm>

#include "engine/distributed_session.h"
#include "engine/session.h"
#include "serve/datatype.h"
#include "serve/kserve_grpc_codec.h"
#include "serve/shard_control.h"

namespace oneflow {
namespace serve {
namespace {

class LocalRunner final : public ModelRunner {
 public:
  LocalRunner(const Graph& model, const SessionOptions& options) : session_(model, options) {}
  NamedTensors Run(const NamedTensors& feeds, const std::vector<std::string>& fetches) override {
    return session_.Run(feeds, fetches);
  }

 private:
  Session session_;
};

DistributedOptions ShardingOf(const ModelSettings& settings, int threads, const std::string& backend) {
  DistributedOptions dist;
  dist.plan.placement = Placement::Parse(settings.placement);
  dist.plan.mode = ParsePlanMode(settings.plan_mode);
  dist.backend = backend;
  // In process every device is a thread of this process: they share the instance's threads. A
  // rank of a job is one device and has the threads to itself.
  int devices = backend == "in-process" ? dist.plan.placement.size() : 1;
  dist.threads_per_device = std::max(1, threads / std::max(1, devices));
  return dist;
}

class ShardedRunner final : public ModelRunner {
 public:
  ShardedRunner(std::string model_name, int64_t version, uint64_t load_id, const ModelSettings& settings,
                const Graph& model, int threads, const std::string& backend, bool leader)
      : model_name_(std::move(model_name)),
        version_(version),
        load_id_(load_id),
        settings_(settings),
        leader_(leader),
        session_(model, SessionOptions{}, ShardingOf(settings, threads, backend)) {}

  NamedTensors Run(const NamedTensors& feeds, const std::vector<std::string>& fetches) override {
    if (!leader_) return session_.Run(feeds, fetches);
    // Rank 0 of a job: the followers get the batch first, then every rank runs it together.
    inference::ModelInferRequest batch;
    batch.set_model_name(model_name_);
    batch.set_model_version(std::to_string(version_));
    batch.mutable_parameters()->operator[]("load_id").set_uint64_param(load_id_);
    for (const auto& feed : feeds) {
      auto* in = batch.add_inputs();
      in->set_name(feed.first);
      in->set_datatype(ProtocolDatatypeName(feed.second.dtype()));
      for (int64_t d : feed.second.shape()) in->add_shape(d);
      if (feed.second.dtype() == DType::kString) batch.add_raw_input_contents(SerializeBytesTensor(feed.second));
      else batch.add_raw_input_contents(static_cast<const char*>(feed.second.raw()), feed.second.nbytes());
    }
    for (const std::string& f : fetches) batch.add_outputs()->set_name(f);
    ShardBatchGuard guard(batch.SerializeAsString());
    return session_.Run(feeds, fetches);
  }

  std::string ExplainPlan(int64_t batch) const override {
    std::map<std::string, Shape> shapes;
    for (const TensorSpec& in : settings_.inputs) {
      Shape s;
      if (settings_.max_batch_size > 0) s.push_back(batch);
      for (int64_t d : in.dims) {
        if (d < 0) return "";  // a dynamic dim past the batch: plans are made per request shape
        s.push_back(d);
      }
      shapes[in.name] = s;
    }
    return session_.PlanFor(shapes)->ToJson();
  }

 private:
  std::string model_name_;
  int64_t version_;
  uint64_t load_id_;
  ModelSettings settings_;
  bool leader_;
  DistributedSession session_;
};

}  // namespace

std::unique_ptr<ModelRunner> MakeModelRunner(const std::string& model_name, int64_t version, uint64_t load_id,
                                             const ModelSettings& settings, const Graph& model, int threads) {
  if (settings.placement.empty()) {
    SessionOptions options;
    options.intra_op_threads = threads;
    options.optimization_level = settings.optimization_level;
    return std::make_unique<LocalRunner>(model, options);
  }
  if (InShardedJob()) {
    StartShardLeader();
    return std::make_unique<ShardedRunner>(model_name, version, load_id, settings, model, threads, "gloo", true);
  }
  return std::make_unique<ShardedRunner>(model_name, version, load_id, settings, model, threads, "in-process", false);
}

std::unique_ptr<ModelRunner> MakeFollowerRunner(const ModelSettings& settings, const Graph& model, int threads) {
  return std::make_unique<ShardedRunner>(settings.name, 0, 0, settings, model, threads, "gloo", false);
}

}  // namespace serve
}  // namespace oneflow
