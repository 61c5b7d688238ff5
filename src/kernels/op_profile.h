// Opt-in per-node timing for CPU runs: ONEFLOW_PROFILE=1 in the environment makes every kernel
// call timed, and at process exit a table goes to stderr: the time per op type, then the nodes
// that took the most, each with calls, total and mean. It answers "where does a run go" without an
// external profiler (oneDNN's JIT code has no symbols for perf). Off, it costs one branch per node.
// CUDA sessions add a table of their CPU fallbacks (nodes that run on the CPU instead), per op type.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace oneflow {

bool OpProfilingEnabled();

// Adds one call of `ns` nanoseconds to the node described by `node` (op type `op_type`).
void RecordOpTime(const std::string& op_type, const std::string& node, int64_t ns);

// Counts a node of a CUDA session that runs on the CPU: `planned` at session creation (no CUDA
// kernel for it), else when its CUDA kernel declined a run (`reason`, the kernel's message).
void RecordCudaFallback(const std::string& op_type, const std::string& node, bool planned, const std::string& reason);

struct FallbackCounts {
  int64_t planned = 0;  // nodes placed on the CPU at session creation
  int64_t runtime = 0;  // nodes moved to the CPU when their CUDA kernel declined a run
};
// The fallback table of the report, one row per op type ("op type  planned  run-time"), most
// fallbacks first; "" when there are none. A function of its input so tests can check it.
std::string FormatFallbackTable(const std::map<std::string, FallbackCounts>& by_op);

}  // namespace oneflow
