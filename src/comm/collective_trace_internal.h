// Trace slices of collectives (base/trace.h), filled the same way by every backend: one slice per
// call on the calling thread, named after the operation ("all-reduce", "send", ...), carrying its
// bytes, the group (or peer), this rank, the world size and the backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "base/trace.h"
#include "comm/communicator.h"

namespace oneflow {

// `bytes`: this member's payload (the buffer reduced or broadcast, everything gathered, the whole
// input of a reduce-scatter or all-to-all). Call only when `trace` records (`if (trace)`).
inline void TraceCollective(TraceScope& trace, const Communicator& comm, size_t bytes, const std::vector<int>& group) {
  trace.Arg("bytes", bytes).Arg("group", group).Arg("rank", comm.rank()).Arg("world_size", comm.world_size());
  trace.Arg("backend", comm.backend());
}

inline void TracePointToPoint(TraceScope& trace, const Communicator& comm, size_t bytes, int peer) {
  trace.Arg("bytes", bytes).Arg("peer", peer).Arg("rank", comm.rank()).Arg("world_size", comm.world_size());
  trace.Arg("backend", comm.backend());
}

template <typename T>
size_t SumOf(const std::vector<T>& sizes, size_t element_bytes = 1) {
  return static_cast<size_t>(std::accumulate(sizes.begin(), sizes.end(), T{0})) * element_bytes;
}

}  // namespace oneflow
