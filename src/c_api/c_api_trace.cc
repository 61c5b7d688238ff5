// C ABI, tracing: start and stop the timeline profiler (base/trace.h, docs/profiling.md).
#include "base/trace.h"
#include "c_api/c_api_internal.h"

using namespace oneflow::capi;

extern "C" {

oneflow_status_t oneflow_trace_start(const char* path) {
  return Guard([&] {
    OF_REQUIRE(path != nullptr, "path is NULL");
    StartTrace(path);
  });
}

oneflow_status_t oneflow_trace_stop(void) {
  return Guard([] { StopTrace(); });
}

}  // extern "C"
