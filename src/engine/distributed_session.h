// A session that runs a model as global tensors over a placement: one physical graph and
// executor per device, boxing through a Communicator: in-process virtual CPU devices (a thread
// each) or, with the Gloo backend, one device per process. Plans are made per input shapes and
// cached.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "engine/device_group.h"
#include "engine/executor.h"
#include "plan/plan.h"
#include "engine/session.h"

namespace oneflow {

struct DistributedOptions {
  PlanOptions plan;            // placement, mode, cost model, annotations
  int num_devices = 0;         // virtual CPU devices; 0 = enough for the placement
  int threads_per_device = 1;  // intra-op threads of each device's executor
  int64_t timeout_ms = 300000; // a collective waiting longer fails naming the missing ranks
  // "in-process": every device of the placement is a thread of this process. "gloo": this process
  // is one rank of a multi-process job (CreateGlooCommunicatorFromEnv); it runs its own device
  // of the placement, every rank runs the same session, and every rank gets the whole outputs.
  std::string backend = "in-process";
  // A thread pool shared with other sessions (the C ABI's oneflow_env_t). It serves when this
  // process runs a single device of the placement (a rank of a Gloo job), in place of
  // threads_per_device; in-process virtual devices run at once, so each keeps threads of its own.
  std::shared_ptr<ThreadPool> shared_pool = nullptr;
  // Shard-on-read: once a plan's devices hold their own slices of the weights, the pages of the
  // model's weights mapped from a native file (.ofm) are given back, so a rank keeps about its
  // share of the sharded weights (and its copy of the broadcast ones) resident instead of the
  // whole model; planning other input shapes reads them again from the file. false keeps them.
  bool release_model_pages = true;
};

// The intra-op pool of one of this process's `local_devices` devices: the shared pool when there
// is one device, else a pool of threads_per_device threads.
std::shared_ptr<ThreadPool> DevicePool(const DistributedOptions& dist, size_t local_devices);

// Checks that every rank of `group` planned the same graph: all-gathers the hashes and throws
// kInvalidArgument naming the ranks whose model differs from the first member's.
void CheckSameModel(Communicator& comm, uint64_t graph_hash, const std::vector<int>& group);

// Validates `dist` and fills in what the backend decides (num_devices, available_devices). With
// the Gloo backend, connects this process's rank and returns its communicator (null in-process).
std::shared_ptr<Communicator> ResolveDistributedOptions(DistributedOptions& dist);

class DistributedSession {
 public:
  // `model` must be prepared (graph/prepare.h; loaded models are). Fails early on a placement naming missing devices.
  DistributedSession(const Graph& model, const SessionOptions& options, DistributedOptions dist);
  ~DistributedSession();

  // As Session::Run: logical feeds in, logical (whole) outputs out. Runs are serialized.
  std::vector<std::pair<std::string, Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                                  const std::vector<std::string>& fetches) const;
  // The plan for these input shapes (made and cached on first use).
  std::shared_ptr<const Plan> PlanFor(const std::map<std::string, Shape>& input_shapes) const;

 private:
  struct Compiled;
  std::shared_ptr<Compiled> Compile(const std::map<std::string, Shape>& input_shapes) const;

  Graph model_;
  SessionOptions options_;
  std::shared_ptr<Communicator> process_comm_;  // the Gloo backend: this process's rank
  DistributedOptions dist_;
  std::string id_;
  mutable std::mutex mutex_;
  mutable std::map<std::map<std::string, Shape>, std::shared_ptr<Compiled>> cache_;
};

}  // namespace oneflow
