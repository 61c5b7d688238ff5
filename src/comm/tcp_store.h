// The rendezvous store of a job whose ranks share no file system: rank 0 serves a key-value store
// over TCP (comm/rendezvous.proto, on gRPC) at MASTER_ADDR:MASTER_PORT, every rank connects to
// it. Besides keys, the store keeps who is in the job: each rank joins once (a second process with
// the same rank, or one that disagrees on the world size, is refused with a message naming it),
// holds its connection open while it lives, and leaves when it finishes. A rank whose connection
// closes without leaving was lost; a collective that fails asks the store which ranks those were.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/launch_env.h"

namespace oneflow {

struct TcpStoreOptions {
  std::string master_addr = "127.0.0.1";  // where the store is served
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  // How long to wait for the store to be reachable (its server may start after this rank), and
  // for each key.
  int64_t timeout_ms = 300000;
  // This process serves the store (rank 0 of a job), listening on every address of the host at
  // `master_port`.
  bool serve = false;
  std::string host;  // this rank's address, named in the other ranks' errors
};

// Joins the job's store (serving it first when `serve`). Throws kIo when the port cannot be served
// (in use), kRuntime when the store is not reachable within the timeout, kInvalidArgument when the
// store refuses this rank (the message says why). Leave() (or the destructor) leaves the job; the
// process that serves the store then waits, at most the timeout, for the others to leave or be
// lost before it stops serving, so that no rank loses the store while it still needs it.
std::shared_ptr<RendezvousStore> ConnectTcpStore(const TcpStoreOptions& options);

}  // namespace oneflow
