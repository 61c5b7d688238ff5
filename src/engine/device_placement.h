// Device placement: which nodes of a graph run on an accelerator and which fall back to the CPU,
// which values the host must see (shape inputs read by run-time shape inference), and where copies
// between host and device memory go. A pure function of the graph and of "does this node have a
// device kernel", so it is decided (and tested) without a device.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "graph/graph.h"
#include "kernels/kernel.h"

namespace oneflow {

// A copy made right before a step: `value` is copied to the host (to_host) or to the device.
struct DeviceCopy {
  int value = 0;
  bool to_host = false;
  bool operator==(const DeviceCopy& o) const { return value == o.value && to_host == o.to_host; }
};

struct DevicePlacement {
  // Per node (index into graph.nodes): kCuda or kCpu.
  std::vector<DeviceType> node_device;
  // Per node: it runs on the CPU because it has no device kernel (a planned fallback), as opposed
  // to a small integer computation kept next to the host code that reads it.
  std::vector<char> no_device_kernel;
  // Per node: input positions whose *data* the node never reads (Shape, Size): no copy for them.
  std::vector<std::vector<char>> data_free_input;
  // Per node: input positions that run-time shape inference of a device node reads on the host
  // (Reshape's shape, Slice's starts, Reduce's axes, ...).
  std::vector<std::vector<char>> host_read_input;
  // Per value: needed on the host / on the device by some consumer (graph outputs are not counted:
  // the session boundary copies them).
  std::vector<char> needed_on_host, needed_on_device;
  // Per value: produced on the device (a device node's output); feeds and constants start on the host.
  std::vector<char> produced_on_device;
  // Per position of `order`: the copies made before that step, assuming host feeds (device feeds
  // only make some of these copies unnecessary; the executor checks at run time).
  std::vector<std::vector<DeviceCopy>> transfers;
  // The topological order the steps follow (graph.TopologicalOrder()).
  std::vector<int> order;

  // Nodes that run on the CPU: planned fallbacks and host-only integer computations.
  int num_fallback_nodes() const;
  // Nodes on the CPU because they have no device kernel (counted and reported by the session).
  int num_planned_fallbacks() const;
  // True when some value computed at run time must be read on the host (so a run cannot be
  // captured into a CUDA graph: the host would wait on the device in the middle of it).
  bool host_reads_computed_values(const Graph& g) const;
};

// Input positions of `node` whose data its shape inference reads, as its op declares them
// (OpSchema::ShapeInput: Reshape's shape, Slice's starts/ends/axes/steps, Reduce*'s axes, Resize's
// scales/sizes, ...); for an op that declares none, any small integer input of a node whose static
// output shape is not determined by input shapes. On a device node
// these inputs reach inference *and the kernel* as host tensors: they are parameters, not data.
std::vector<size_t> ShapeInputPositions(const Graph& g, const Node& node);

// Input positions a device node receives as host tensors: the shape inputs above plus the inputs
// that set a kernel's launch configuration without setting a shape (OpSchema::LaunchInput, e.g.
// CumSum's axis: it changes the loop structure). A constant there is read from its host copy (never uploaded, no device read, no
// obstacle to CUDA graph capture); a computed one makes the host wait mid-run. Scalars a kernel can
// read in device memory (Pad's constant_value, Trilu's k) are not listed: they stay on the device.
std::vector<size_t> HostInputPositions(const Graph& g, const Node& node);

// Places `g` for a device. A node runs on the device when `has_device_kernel(node)` says so, unless
// it is a small integer computation whose results only the host reads (Shape -> Gather -> Concat
// feeding a Reshape): those stay on the CPU next to the shape inference that reads them, instead
// of a device round trip and a host wait per value.
DevicePlacement PlaceGraph(const Graph& g, const std::function<bool(const Node&)>& has_device_kernel);

// ---- Run-time fallbacks (docs/cuda.md, "Run-time fallbacks and host reads") ----------------------
// A device node's kernel threw at run time. What the executor does about it:
enum class RunFailureAction {
  kRethrow,   // a real failure, a build/architecture problem, or a refusal while capturing a CUDA
              // graph (the capture is abandoned and the shape set runs eagerly, where this applies)
  kFallBack,  // the kernel declined the node (kUnsupported) and run-time fallback is allowed: the
              // node runs on its CPU kernel from now on, and the session counts it
  kRefuse,    // the kernel declined the node and run-time fallback is not allowed (the default):
              // RuntimeFallbackError, naming the node, its op and the kernel's reason
};
// `from_cuda_status`: the error came from a failed CUDA runtime call (cuda::IsCudaStatusError):
// the machine's or the build's problem, never a reason to run on the CPU.
RunFailureAction ClassifyRunFailure(ErrorCode code, bool from_cuda_status, bool capturing, bool fallback_allowed);
// The error a refused run-time fallback becomes (kUnsupported): the node, its op, the kernel's
// reason, and how to allow the fallback.
Error RuntimeFallbackError(const Node& node, const std::string& reason);
// Whether ONEFLOW_CUDA_ALLOW_FALLBACK=1 is set (read at every device session's creation).
bool RuntimeFallbackAllowedByEnv();

}  // namespace oneflow
