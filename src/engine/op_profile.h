// Opt-in per-node timing for CPU runs: ONEFLOW_PROFILE=1 in the environment makes every kernel
// call timed, and at process exit a table goes to stderr: the time per op type, then the nodes
// that took the most, each with calls, total and mean. It answers "where does a run go" without an
// external profiler (oneDNN's JIT code has no symbols for perf). Off, it costs one branch per node.
#pragma once

#include <cstdint>
#include <string>

namespace oneflow {

bool OpProfilingEnabled();

// Adds one call of `ns` nanoseconds to the node described by `node` (op type `op_type`).
void RecordOpTime(const std::string& op_type, const std::string& node, int64_t ns);

}  // namespace oneflow
