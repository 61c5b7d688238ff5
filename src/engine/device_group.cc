// LocalDevices and RunOnDevices: one thread per in-process device, root-cause error reporting.
#include "engine/device_group.h"

#include <algorithm>
#include <thread>

#include "base/error.h"
#include "base/trace.h"

namespace oneflow {

LocalDevices MakeLocalDevices(const Placement& placement, int num_devices, int64_t timeout_ms,
                              const std::shared_ptr<Communicator>& process_comm) {
  LocalDevices d;
  d.placement = placement;
  const std::vector<int>& ids = placement.devices;
  if (process_comm) {
    auto it = std::find(ids.begin(), ids.end(), process_comm->rank());
    OF_REQUIRE(it != ids.end(), "rank ", process_comm->rank(), " is not in placement ", placement.ToString(),
               "; every rank must hold a device of it");
    d.positions.push_back(static_cast<int>(it - ids.begin()));
    d.comms.push_back(process_comm);
    return d;
  }
  std::vector<std::shared_ptr<Communicator>> world = CreateInProcessGroup(num_devices, timeout_ms);
  for (size_t pos = 0; pos < ids.size(); ++pos) {
    d.positions.push_back(static_cast<int>(pos));
    d.comms.push_back(world[static_cast<size_t>(ids[pos])]);
  }
  return d;
}

void RunOnDevices(const LocalDevices& devices, const std::function<void(size_t slot)>& body) {
  const size_t n = devices.size();
  std::vector<std::string> errors(n);
  std::vector<ErrorCode> codes(n, ErrorCode::kOk);
  auto guarded = [&](size_t slot) {
    try {
      body(slot);
    } catch (const Error& e) {
      errors[slot] = e.what();
      codes[slot] = e.code();
    } catch (const std::exception& e) {
      errors[slot] = e.what();
      codes[slot] = ErrorCode::kInternal;
    }
    if (codes[slot] != ErrorCode::kOk)
      devices.comms[slot]->Abort(StrCat("rank ", devices.rank(slot), " failed: ", errors[slot]));
  };
  std::vector<std::thread> threads;
  for (size_t slot = 1; slot < n; ++slot)
    threads.emplace_back([&guarded, &devices, slot] {
      // Threads started per call: in a trace, one track per rank rather than one per call.
      SetTraceThreadName(StrCat("rank ", devices.rank(slot)), true);
      guarded(slot);
    });
  guarded(0);
  for (auto& t : threads) t.join();
  int first = -1;
  auto aborted = [&](int s) { return errors[static_cast<size_t>(s)].rfind("collective aborted", 0) == 0; };
  for (int s = 0; s < static_cast<int>(n); ++s)
    if (codes[static_cast<size_t>(s)] != ErrorCode::kOk && (first < 0 || (aborted(first) && !aborted(s)))) first = s;
  if (first >= 0)
    Fail(codes[static_cast<size_t>(first)], "device ", devices.rank(static_cast<size_t>(first)), ": ",
         errors[static_cast<size_t>(first)]);
}

}  // namespace oneflow
