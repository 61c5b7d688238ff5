// A shared-memory transport for the ranks of one host (what NCCL and Gloo do intra-node instead of
// loopback TCP): one POSIX shared-memory segment per group of ranks, one slot in it per member.
// A collective is every member copying what its peers need into its own slot, a barrier, each
// member reducing its share straight out of the peers' slots, and a second barrier. The Gloo
// communicator selects it for groups whose members share a host (comm/gloo.cc).
//
// Guarantees: every member gets bit-identical results (each element is summed by exactly one
// member, always in group order); a wait never outlasts the timeout, and a member whose process
// exited, or that aborted the group, makes its peers fail within tens of milliseconds, naming it.
// The segment is unlinked as soon as every member has mapped it, so nothing is left behind when a
// process dies; a segment left by a job that crashed while joining (named after its creator's
// pid) is removed by the next job that creates one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace oneflow {

// How the members agree on a segment: through the transport they already share (Gloo's TCP).
struct ShmRendezvous {
  std::function<void(void* buf, size_t bytes)> broadcast_from_first;  // member 0's bytes to every member
  std::function<bool(bool ok)> all;                                   // whether every member passed true
};

// A collective that failed: a peer exited, aborted, or did not arrive within the timeout.
struct ShmFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ShmSegmentHeader;  // comm/shm_group.cc

class ShmGroup {
 public:
  // Joins as member `index` of `ranks` (global ranks, group order); `slot_bytes` per member bounds
  // the chunk a collective moves at once. Returns null on every member alike when some member
  // cannot create or map the segment (the caller keeps its other transport).
  static std::unique_ptr<ShmGroup> Join(int index, const std::vector<int>& ranks, size_t slot_bytes,
                                        int64_t timeout_ms, const ShmRendezvous& rendezvous);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  // The Communicator's semantics (comm/communicator.h), for this group.
  void AllReduceSum(void* buf, int64_t count, DType dtype);
  void ReduceScatterSum(const void* send, void* recv, const std::vector<int64_t>& counts, DType dtype);
  void AllGather(const void* send, void* recv, const std::vector<size_t>& sizes);
  void AllToAll(const void* send, const std::vector<size_t>& send_sizes, void* recv,
                const std::vector<size_t>& recv_sizes);
  void Broadcast(void* buf, size_t bytes, int root_index);
  void Barrier();
  // Makes this member's and its peers' pending and later collectives fail, naming this rank.
  void Abort();

 private:
  ShmGroup(int index, const std::vector<int>& ranks, void* base, size_t mapped, size_t slot_bytes, int64_t timeout_ms);
  char* Slot(int member) const;
  void Sync();  // arrive, then wait for every peer to arrive
  void Settle();  // after an all-reduce: waits until no peer reads this member's slot any more
  void WaitFor(int member, uint32_t target);

  const int me_;
  const std::vector<int> ranks_;
  void* const base_;
  const size_t mapped_, slot_bytes_;
  const int64_t timeout_ms_;
  ShmSegmentHeader* header_;
  uint32_t arrivals_ = 0;  // barriers this member has passed
  bool peers_may_read_ = false;  // an all-reduce's results in this slot may still be copied out
};

// Equal for exactly the processes that can share a segment: same boot, mount and pid namespaces
// (the pid check that names a dead peer needs the latter).
std::string ShmHostIdentity();
// Whether co-located ranks use the segment: ONEFLOW_COMM_SHM=0 keeps them on TCP.
bool ShmTransportEnabled();
// The per-member slot size: ONEFLOW_COMM_SHM_SLOT_BYTES (default 4 MiB, at least 4 KiB).
size_t ShmSlotBytes();

}  // namespace oneflow
