// What a model instance runs a batch with: a Session on this process's cores, or — for a model whose
// config names a placement — a DistributedSession that runs it as global tensors over several
// devices: virtual CPU devices of this process, or the ranks of an `oneflow launch` job, where rank 0
// serves and fans each batch out to the others (shard_control.h). docs/serving.md, "Sharded models".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "serve/inference.h"
#include "serve/model_config.h"

namespace oneflow {
namespace serve {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual NamedTensors Run(const NamedTensors& feeds, const std::vector<std::string>& fetches) = 0;
  // The plan of a sharded model for a batch of `batch` rows as JSON; empty for a local model.
  virtual std::string ExplainPlan(int64_t batch) const { return ""; }
};

// The runner for one instance of `settings` (threads: the instance's share of the server's).
// `load_id` tells the followers of a multi-process job which load of the model a batch is for.
std::unique_ptr<ModelRunner> MakeModelRunner(const std::string& model_name, int64_t version, uint64_t load_id,
                                             const ModelSettings& settings, const Graph& model, int threads);

// Runs `settings`' sharded model on a follower rank (not rank 0) of a multi-process job.
std::unique_ptr<ModelRunner> MakeFollowerRunner(const ModelSettings& settings, const Graph& model, int threads);

}  // namespace serve
}  // namespace oneflow
