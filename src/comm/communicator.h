// The Communicator: collectives between the ranks of a job, over groups of ranks. One interface
// for every backend (in-process threads here; Gloo and NCCL attach behind the same calls).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace oneflow {

// Every collective takes the group it runs in: the global ranks taking part, in the order that
// defines segment positions. Every member must issue the same collectives on the same group in
// the same order (SPMD); the calling rank must be a member. Buffers live where memory() says.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend() const = 0;
  // Where the buffers of every call live. kHost (in-process, Gloo): host pointers. kCuda (NCCL):
  // device pointers on device(), the work ordered on the calling thread's cuda::CurrentStream()
  // after what is already queued there. Either way a call returns once its data is in place
  // (for kCuda: the stream has completed it), so callers may reuse the buffers at once. A caller
  // holding the other kind of memory stages through host copies (the CUDA Boxing kernel does).
  enum class Memory { kHost, kCuda };
  virtual Memory memory() const { return Memory::kHost; }
  virtual int device() const { return -1; }  // the CUDA device of a kCuda communicator

  // In place: `buf` becomes the elementwise sum over the group (every member gets identical bits:
  // the sum is taken in group order).
  virtual void AllReduceSum(void* buf, int64_t count, DType dtype, const std::vector<int>& group) = 0;
  // `recv` receives every member's `send` concatenated in group order; `sizes[i]` is member i's
  // byte count (they may differ: uneven splits). In place when `send` is this member's segment
  // of `recv` (otherwise the two must not overlap).
  virtual void AllGather(const void* send, void* recv, const std::vector<size_t>& sizes,
                         const std::vector<int>& group) = 0;
  // `send` holds one segment per member (element counts `counts`, in group order); member i
  // receives in `recv` the sum over members of segment i.
  virtual void ReduceScatterSum(const void* send, void* recv, const std::vector<int64_t>& counts, DType dtype,
                                const std::vector<int>& group) = 0;
  // `send` holds one segment per member (byte sizes `send_sizes`); member i's segment j arrives at
  // member j as segment i of `recv` (byte sizes `recv_sizes`).
  virtual void AllToAll(const void* send, const std::vector<size_t>& send_sizes, void* recv,
                        const std::vector<size_t>& recv_sizes, const std::vector<int>& group) = 0;
  // Copies `bytes` of `buf` from group member `root_index` to every other member.
  virtual void Broadcast(void* buf, size_t bytes, int root_index, const std::vector<int>& group) = 0;
  virtual void Send(const void* buf, size_t bytes, int peer) = 0;
  virtual void Recv(void* buf, size_t bytes, int peer) = 0;
  virtual void Barrier(const std::vector<int>& group) = 0;
  // Makes pending and later collectives of every rank of this job fail with `why` (a rank that
  // failed calls it so its peers stop waiting for it instead of running into the timeout).
  virtual void Abort(const std::string& why) = 0;
};

// Communicators that Boxing kernels find by key (a node attribute), registered by whoever runs a
// plan (the distributed session) for the lifetime of its executors.
void RegisterCommunicator(const std::string& key, std::shared_ptr<Communicator> comm);
void UnregisterCommunicator(const std::string& key);
std::shared_ptr<Communicator> FindCommunicator(const std::string& key);  // throws kNotFound

// N ranks in one process, each run on its own thread: ranks meet in shared memory. Collectives
// wait at most `timeout_ms` for the slowest member, then fail naming the ranks that never came.
std::vector<std::shared_ptr<Communicator>> CreateInProcessGroup(int world_size, int64_t timeout_ms = 300000);

// One rank of a multi-process job over Gloo (TCP), from the launcher's environment (ReadLaunchEnv,
// comm/launch_env.h): rank and size from RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/_SIZE or
// SLURM_PROCID/SLURM_NTASKS; the ranks meet through the TCP store rank 0 serves at
// MASTER_ADDR:MASTER_PORT (or a Gloo FileStore in ONEFLOW_GLOO_STORE, a directory every rank
// sees); this host's address from ONEFLOW_GLOO_HOST (default: the local address on the route to
// MASTER_ADDR). Collectives fail after `timeout_ms` (ONEFLOW_COMM_TIMEOUT_MS overrides; default 5
// minutes) naming the ranks found lost. Throws kUnsupported when the library was built without
// Gloo. The rendezvous runs once per process and job: later calls return the same communicator
// (sessions and trainers share it).
std::shared_ptr<Communicator> CreateGlooCommunicatorFromEnv(int64_t timeout_ms = 300000);
// NCCL (device buffers): CreateNcclCommunicatorFromEnv and CreateNcclGroup in comm/nccl.h.

}  // namespace oneflow
