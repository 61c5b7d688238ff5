// The devices of a placement that this process drives, and running one body per device: every
// device in-process (a thread each, ranks meeting in shared memory) or, with the Gloo backend, this
// process's own rank. Shared by the distributed session and the distributed trainers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "graph/placement.h"

namespace oneflow {

struct LocalDevices {
  Placement placement;
  std::vector<int> positions;                        // per slot: position in the placement
  std::vector<std::shared_ptr<Communicator>> comms;  // per slot
  int rank(size_t slot) const { return placement.devices[static_cast<size_t>(positions[slot])]; }
  size_t size() const { return positions.size(); }
};

// In-process when `process_comm` is null: a fresh group of `num_devices` ranks, one slot per
// device of the placement. Otherwise the one slot of `process_comm`'s rank (kInvalidArgument when
// the rank is not in the placement).
LocalDevices MakeLocalDevices(const Placement& placement, int num_devices, int64_t timeout_ms,
                              const std::shared_ptr<Communicator>& process_comm);

// Runs body(slot) for every slot at once (slot 0 on the calling thread). A slot that fails aborts
// its communicator so its peers stop waiting; the error rethrown is the root cause (a rank's own
// failure rather than its peers' aborted collectives), prefixed with "device <rank>: ".
void RunOnDevices(const LocalDevices& devices, const std::function<void(size_t slot)>& body);

}  // namespace oneflow
