// What the multi-process backends (Gloo, NCCL) share: the launcher's environment (rank, size,
// local rank, where the ranks meet, this host's address, timeout) and the key-value store ranks
// meet through: a TCP store served by rank 0 (comm/tcp_store.h), or a directory every rank sees.
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
  std::string master_addr;    // where rank 0 serves the TCP rendezvous store
  int master_port = 0;
  std::string store_dir;      // set: ranks meet through files in this directory instead (every rank sees it)
  std::string host;           // this host's address for TCP pairs, as the other ranks reach it
};

// Reads the launcher's variables: rank and size from RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/_SIZE,
// PMI_RANK/PMI_SIZE or SLURM_PROCID/SLURM_NTASKS; the local rank from LOCAL_RANK,
// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID (default: the rank); the store at
// MASTER_ADDR:MASTER_PORT (defaults 127.0.0.1:29500), or in the directory ONEFLOW_GLOO_STORE when
// that is set; the host from ONEFLOW_GLOO_HOST (default: 127.0.0.1 when MASTER_ADDR is local, else
// this host's address on the route to MASTER_ADDR); the timeout from ONEFLOW_COMM_TIMEOUT_MS
// (default `default_timeout_ms`). Throws kInvalidArgument naming the variable when one is missing
// or malformed.
LaunchEnv ReadLaunchEnv(int64_t default_timeout_ms);

// Names this process's rank of the job `env` describes ("tcp://A:P rank R/N" or "file:DIR ...").
std::string JobKey(const LaunchEnv& env);

// A TCP port free on every address of this host now, drawn from 20000-32767: below Linux's
// ephemeral range (32768-60999), where the kernel never assigns the local ports of outgoing
// connections, so nothing takes it before a store binds it unless something binds it on purpose.
// Throws kIo when none is found.
int PickFreePort();

// This host's address on the route to `peer` (a name or an address): the one a peer reaches it
// by when hosts have several interfaces. Throws kInvalidArgument when `peer` does not resolve,
// kRuntime when no route leads there.
std::string LocalAddressToward(const std::string& peer);

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
  // The ranks of `among` the store knows to be gone, as text ("2 on 10.0.0.2, 3 (never joined)"):
  // they joined and their process ended without leaving, or never joined. Empty when none is known
  // or the store cannot tell (the file store: the Gloo backend then checks its host's processes).
  virtual std::string LostRanks(const std::vector<int>& among) { (void)among; return ""; }
  // This rank finishes on purpose (it is not lost). Called once at process exit for the job's
  // store (JobStore); a store served by this process keeps serving until the others have left.
  virtual void Leave() {}
};

// For ranks that are threads of one process.
std::shared_ptr<RendezvousStore> CreateInMemoryStore();
// Gloo's FileStore on `dir` (comm/gloo.cc); kUnsupported when built without Gloo.
std::shared_ptr<RendezvousStore> CreateFileStore(const std::string& dir);
// The store of this process's job: the file store when `env.store_dir` is set, else the TCP store
// at MASTER_ADDR:MASTER_PORT, served by rank 0. One per process and job (the Gloo and NCCL
// communicators of a process share it); it leaves the job when the process exits.
std::shared_ptr<RendezvousStore> JobStore(const LaunchEnv& env);
// Drops this process's Gloo communicators (comm/gloo.cc); the exit handler that leaves the job
// stores calls it first, so that peers still waiting on this rank see its connections close.
void ReleaseGlooCommunicators();

}  // namespace oneflow
