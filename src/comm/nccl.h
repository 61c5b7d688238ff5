// The NCCL backend of the Communicator: collectives on device buffers (memory() == kCuda), one
// rank per GPU. Built when CMake finds NCCL (ONEFLOW_HAVE_NCCL); otherwise the factories throw
// kUnsupported. See docs/distributed.md, "NCCL communicator".
//
// Every group of ranks (the world, a placement axis of an n-D placement, a send/recv pair) gets
// its own NCCL communicator, created on first use from a fresh unique id that the group's first
// member publishes in the rendezvous store (only the members take part, so lazily created
// sub-groups stay SPMD-safe). Initialization is non-blocking (ncclConfig_t::blocking = 0) and
// polled; a call enqueues its NCCL work on cuda::CurrentStream() and then polls the stream's
// completion event and ncclCommGetAsyncError. When the timeout passes, a peer reports an error or
// Abort() is called, every NCCL communicator of the rank is aborted (ncclCommAbort) and the call
// throws an Error naming the rank, the collective, the group and NCCL's message; later calls fail
// with the same cause. Nothing aborts the process or waits forever.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/launch_env.h"

namespace oneflow {

// Rank `rank` of `world_size` on CUDA device `device`, meeting its peers through `store` (keys
// under `prefix`). Every collective and every initialization waits at most `timeout_ms`.
std::shared_ptr<Communicator> CreateNcclCommunicator(int rank, int world_size, int device,
                                                     std::shared_ptr<RendezvousStore> store, int64_t timeout_ms,
                                                     const std::string& prefix = "nccl/");

// One rank of a multi-process job, from the launcher's environment (ReadLaunchEnv: the same
// variables and job store, JobStore, as CreateGlooCommunicatorFromEnv: the NCCL unique ids travel
// through it); its GPU is LOCAL_RANK modulo the visible device count. kUnsupported "no CUDA
// device: ..." without a GPU, kUnsupported when built without NCCL (or without Gloo when the
// store is a file store).
std::shared_ptr<Communicator> CreateNcclCommunicatorFromEnv(int64_t timeout_ms = 300000);

// Ranks 0..n-1 in this process, rank i on `devices[i]`, each to be used from its own thread
// (the unique ids are shared in memory). The devices must be distinct: NCCL (since 2.5) rejects
// two ranks of one communicator on the same GPU ("Duplicate GPU detected"), so on a one-GPU
// machine only a 1-rank group exists; multi-rank tests there stage device buffers through an
// in-process host communicator instead (the CUDA Boxing kernel does this for any kHost one).
std::vector<std::shared_ptr<Communicator>> CreateNcclGroup(const std::vector<int>& devices,
                                                           int64_t timeout_ms = 300000);

}  // namespace oneflow
