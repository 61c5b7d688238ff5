// The control channel of a sharded server started by `oneflow launch -n N -- oneflow serve ...`:
// rank 0 runs the front ends and the schedulers; before each batch of a sharded model it
// broadcasts the batch (as a ModelInferRequest: model, version, load, inputs, outputs) to every rank,
// then all ranks run the model's DistributedSession together. Ranks other than 0 run
// RunShardFollower, which loads a sharded model on first use and runs what rank 0 sends until it
// sends stop. Everything goes over the job's one Gloo communicator, in one order on every rank.
#pragma once

#include <cstdint>
#include <string>

namespace oneflow {
namespace serve {

// True when this process is one rank of a multi-process job (WORLD_SIZE > 1).
bool InShardedJob();
int ShardRank();

// Rank 0: joins the job (the ranks' rendezvous) and starts the heartbeat that keeps idle
// followers inside the collectives' timeout. Idempotent.
void StartShardLeader();
// Rank 0: broadcasts one batch (a serialized ModelInferRequest) to the followers; the caller then
// runs the DistributedSession. Serialized with every other control message.
class ShardBatchGuard {
 public:
  explicit ShardBatchGuard(const std::string& request_bytes);  // holds the channel until destroyed
  ~ShardBatchGuard();
};
// Rank 0: tells the followers to exit. Idempotent; a no-op outside a sharded job.
void StopShardFollowers();

// Ranks != 0: serves rank 0's batches for the models of `repository` until told to stop. Returns
// the process exit status.
int RunShardFollower(const std::string& repository, int threads);

}  // namespace serve
}  // namespace oneflow
