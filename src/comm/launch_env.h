// What the multi-process backends (Gloo, NCCL) share: the launcher's environment (rank, size,
// local rank, rendezvous directory, host, timeout) and the key-value store ranks meet through.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace oneflow {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;         // the rank's index among the ranks of its host (picks its GPU)
  int64_t timeout_ms = 0;
  std::string store_dir;      // a directory every rank sees (the Gloo FileStore's)
  std::string host;           // this host's address for TCP pairs
};

// Reads the launcher's variables: rank and size from RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/_SIZE,
// PMI_RANK/PMI_SIZE or SLURM_PROCID/SLURM_NTASKS; the local rank from LOCAL_RANK,
// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID (default: the rank); the store from
// ONEFLOW_GLOO_STORE (default /tmp/oneflow-gloo-<MASTER_ADDR>-<MASTER_PORT>); the host from
// ONEFLOW_GLOO_HOST (default: MASTER_ADDR when local, else the host name); the timeout from
// ONEFLOW_COMM_TIMEOUT_MS (default `default_timeout_ms`). Throws kInvalidArgument naming the
// variable when one is missing or malformed.
LaunchEnv ReadLaunchEnv(int64_t default_timeout_ms);

// Whether the process `pid` of this host is gone or a zombie (exited, not yet reaped by its parent):
// how a rank names a peer that died.
bool ProcessExited(long pid);

// A rendezvous store: ranks publish small values under keys and wait for each other's.
class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  virtual void Set(const std::string& key, const std::vector<char>& value) = 0;
  // Waits up to `timeout_ms` for `key`; throws kRuntime naming the key when it never appears.
  virtual std::vector<char> Get(const std::string& key, int64_t timeout_ms) = 0;
  // Whether `key` is set, without waiting.
  virtual bool Check(const std::string& key) = 0;
};

// For ranks that are threads of one process.
std::shared_ptr<RendezvousStore> CreateInMemoryStore();
// Gloo's FileStore on `dir` (comm/gloo.cc); kUnsupported when built without Gloo.
std::shared_ptr<RendezvousStore> CreateFileStore(const std::string& dir);

}  // namespace oneflow
