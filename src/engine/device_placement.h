// Device placement: which nodes of a graph run on an accelerator and which fall back to the CPU,
// which values the host must see (shape inputs read by run-time shape inference), and where copies
// between host and device memory go. A pure function of the graph and of "does this node have a
// device kernel", so it is decided (and tested) without a device.
#pragma once

#include <functional>
#include <vector>

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

  int num_fallback_nodes() const;
  // True when some value computed at run time must be read on the host (so a run cannot be
  // captured into a CUDA graph: the host would wait on the device in the middle of it).
  bool host_reads_computed_values(const Graph& g) const;
};

// Input positions of `node` whose data its shape inference reads (ONNX semantics: Reshape's shape,
// Slice's starts/ends/axes/steps, Reduce*'s axes, Resize's scales/sizes, ...; plus any small integer
// input of a node whose static output shape is not determined by input shapes). On a device node
// these inputs reach inference *and the kernel* as host tensors: they are parameters, not data.
std::vector<size_t> ShapeInputPositions(const Graph& g, const Node& node);

// Places `g` for a device. A node runs on the device when `has_device_kernel(node)` says so, unless
// it is a small integer computation whose results only the host reads (Shape -> Gather -> Concat
// feeding a Reshape): those stay on the CPU next to the shape inference that reads them, instead
// of a device round trip and a host wait per value.
DevicePlacement PlaceGraph(const Graph& g, const std::function<bool(const Node&)>& has_device_kernel);

}  // namespace oneflow
