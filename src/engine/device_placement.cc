// Device placement (see device_placement.h).
#include "engine/device_placement.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "graph/op_schema.h"

namespace oneflow {

namespace {

// Nodes that read only the shape (and dtype) of these inputs, never their bytes (OpSchema::TypeOnlyInput).
bool IsDataFreeInput(const Node& n, size_t i) { return n.schema != nullptr && n.schema->ReadsOnlyTypeOf(i); }

// "Known or named": a dim inference can express without seeing data.
bool DimDetermined(const Dim& d) { return d.known() || !d.symbol.empty(); }
bool TypeDetermined(const TensorType& t) {
  if (!t.has_rank) return false;
  for (const Dim& d : t.dims)
    if (!DimDetermined(d)) return false;
  return true;
}

}  // namespace

std::vector<size_t> ShapeInputPositions(const Graph& g, const Node& n) {
  std::vector<size_t> out;
  auto integer_input = [&](size_t i) {
    return n.has_input(i) && IsIntegerDType(g.values[static_cast<size_t>(n.inputs[i])].type.dtype);
  };
  // The op's own declaration first (OpSchema::ShapeInput): right however unknown the dims are.
  if (n.schema != nullptr && !n.schema->shape_inputs.empty()) {
    for (size_t i : n.schema->shape_inputs)
      if (n.has_input(i)) out.push_back(i);
    return out;
  }
  // Ops that declare none: when every input type is determined by shapes alone but an output's is
  // not, inference must be reading data; the small integer inputs are the ones it can read.
  bool inputs_determined = true;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.has_input(i)) inputs_determined &= TypeDetermined(g.values[static_cast<size_t>(n.inputs[i])].type);
  bool outputs_determined = true;
  for (int v : n.outputs)
    if (v != kNoValue) outputs_determined &= TypeDetermined(g.values[static_cast<size_t>(v)].type);
  if (!inputs_determined || outputs_determined) return out;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!integer_input(i)) continue;
    const TensorType& t = g.values[static_cast<size_t>(n.inputs[i])].type;
    if (t.rank() <= 1) out.push_back(i);
  }
  return out;
}

std::vector<size_t> HostInputPositions(const Graph& g, const Node& n) {
  std::vector<size_t> out = ShapeInputPositions(g, n);
  if (n.schema == nullptr) return out;
  for (size_t i : n.schema->launch_inputs)  // OpSchema::LaunchInput
    if (n.has_input(i) && std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  return out;
}

int DevicePlacement::num_planned_fallbacks() const {
  int n = 0;
  for (char c : no_device_kernel) n += c != 0;
  return n;
}

int DevicePlacement::num_fallback_nodes() const {
  int n = 0;
  for (DeviceType d : node_device) n += d == DeviceType::kCpu;
  return n;
}

bool DevicePlacement::host_reads_computed_values(const Graph& g) const {
  for (size_t v = 0; v < needed_on_host.size(); ++v)
    if (needed_on_host[v] && !g.values[v].constant.defined()) return true;
  return false;
}

DevicePlacement PlaceGraph(const Graph& g, const std::function<bool(const Node&)>& has_device_kernel) {
  const size_t nn = g.nodes.size(), nv = g.values.size();
  DevicePlacement p;
  p.order = g.TopologicalOrder();
  p.node_device.assign(nn, DeviceType::kCuda);
  p.no_device_kernel.assign(nn, 0);
  p.data_free_input.resize(nn);
  p.host_read_input.resize(nn);
  p.needed_on_host.assign(nv, 0);
  p.needed_on_device.assign(nv, 0);
  p.produced_on_device.assign(nv, 0);

  // Consumers come after producers, so walking backwards places every consumer of a node's outputs
  // before the node itself: a node knows whether the device or only the host reads its results.
  for (auto it = p.order.rbegin(); it != p.order.rend(); ++it) {
    const size_t ni = static_cast<size_t>(*it);
    const Node& n = g.nodes[ni];
    p.data_free_input[ni].assign(n.inputs.size(), 0);
    p.host_read_input[ni].assign(n.inputs.size(), 0);
    for (size_t i = 0; i < n.inputs.size(); ++i) p.data_free_input[ni][i] = IsDataFreeInput(n, i);

    bool on_device = has_device_kernel(n);
    p.no_device_kernel[ni] = !on_device;
    // Sequences and optionals live on the host: a node reading or writing one runs there.
    for (int v : n.inputs) on_device &= v == kNoValue || g.values[static_cast<size_t>(v)].type.is_tensor();
    for (int v : n.outputs) on_device &= v == kNoValue || g.values[static_cast<size_t>(v)].type.is_tensor();
    if (on_device) {
      // A small integer computation only the host reads: keep it on the CPU.
      bool host_only = true, any_host_reader = false;
      for (int v : n.outputs) {
        if (v == kNoValue) continue;
        host_only &= IsIntegerDType(g.values[static_cast<size_t>(v)].type.dtype) && !p.needed_on_device[static_cast<size_t>(v)];
        any_host_reader |= p.needed_on_host[static_cast<size_t>(v)] != 0;
      }
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.has_input(i) && !p.data_free_input[ni][i])
          host_only &= IsIntegerDType(g.values[static_cast<size_t>(n.inputs[i])].type.dtype);
      if (host_only && any_host_reader) on_device = false;
    }
    p.node_device[ni] = on_device ? DeviceType::kCuda : DeviceType::kCpu;
    if (on_device)
      for (size_t i : HostInputPositions(g, n)) p.host_read_input[ni][i] = 1;

    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.has_input(i) || p.data_free_input[ni][i]) continue;
      const size_t v = static_cast<size_t>(n.inputs[i]);
      // Shape inputs of device nodes are host parameters for inference and kernel alike.
      if (!on_device || p.host_read_input[ni][i]) p.needed_on_host[v] = 1;
      else p.needed_on_device[v] = 1;
    }
    if (on_device)
      for (int v : n.outputs)
        if (v != kNoValue) p.produced_on_device[static_cast<size_t>(v)] = 1;
  }

  // Where the copies go: each value is copied to the other side once, before its first reader there.
  std::vector<char> on_host(nv, 0), on_device(nv, 0);
  for (size_t v = 0; v < nv; ++v) {
    on_host[v] = !p.produced_on_device[v];
    // Constants are uploaded once at session creation.
    on_device[v] = p.produced_on_device[v] || (g.values[v].constant.defined() && p.needed_on_device[v]);
  }
  p.transfers.resize(p.order.size());
  for (size_t s = 0; s < p.order.size(); ++s) {
    const size_t ni = static_cast<size_t>(p.order[s]);
    const Node& n = g.nodes[ni];
    const bool dev = p.node_device[ni] == DeviceType::kCuda;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.has_input(i) || p.data_free_input[ni][i]) continue;
      const size_t v = static_cast<size_t>(n.inputs[i]);
      const bool want_host = !dev || p.host_read_input[ni][i];
      std::vector<char>& have = want_host ? on_host : on_device;
      if (!have[v]) {
        p.transfers[s].push_back(DeviceCopy{static_cast<int>(v), want_host});
        have[v] = 1;
      }
    }
  }
  return p;
}

RunFailureAction ClassifyRunFailure(ErrorCode code, bool from_cuda_status, bool capturing, bool fallback_allowed) {
  // Only a kernel declining a node is a candidate: a CUDA status (no kernel image for the device,
  // a driver problem) would fail the same way on every node, and hiding it behind the CPU would
  // pass a misbuilt library as correct but slow.
  if (code != ErrorCode::kUnsupported || from_cuda_status || capturing) return RunFailureAction::kRethrow;
  return fallback_allowed ? RunFailureAction::kFallBack : RunFailureAction::kRefuse;
}

Error RuntimeFallbackError(const Node& n, const std::string& reason) {
  return Error(ErrorCode::kUnsupported,
               StrCat(n.Describe(), ": its CUDA kernel declined the node at run time (", reason,
                      ") and run-time CPU fallback is off. Allow it with SessionOptions::cuda_allow_runtime_fallback "
                      "(C: oneflow_device_session_options_t.allow_runtime_fallback) or ONEFLOW_CUDA_ALLOW_FALLBACK=1: "
                      "the ", n.op_type, " node then runs on the CPU, with copies around it and no CUDA graphs, and "
                      "the session counts it (oneflow_session_get_device_stats)."));
}

bool RuntimeFallbackAllowedByEnv() {
  const char* v = std::getenv("ONEFLOW_CUDA_ALLOW_FALLBACK");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace oneflow
