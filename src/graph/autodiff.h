// Reverse-mode automatic differentiation over the graph IR: appends the backward nodes computing
// d(loss)/d(w) to the graph, using each op's gradient rule from the registry (graph/grad_context.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace oneflow {

struct GradientInfo {
  // For each value differentiated with respect to: the name of its gradient value, a graph output
  // (appended after the model's outputs, in `wrt` order), with the value's dtype and shape.
  std::map<std::string, std::string> gradients;
  // Values differentiated with respect to that the loss does not depend on; their gradient is zeros.
  std::vector<std::string> unreachable;
  // Forward values (graph inputs and node outputs, not constants) that backward nodes read: what a
  // training run must keep alive from forward to backward. In value order.
  std::vector<std::string> saved_values;
  // g.nodes[first_backward_node, end) and g.values[first_backward_value, end) were added by the pass.
  size_t first_backward_node = 0;
  size_t first_backward_value = 0;
  size_t num_forward_outputs = 0;  // g.outputs[0, num_forward_outputs) are the model's own outputs
};

// `g` must be prepared (schemas resolved, shapes inferred, see PrepareGraph) and stays so.
// `loss` names a float value with one element (rank 0, or every dim 1); the backward pass is
// seeded with ones. `wrt` names graph inputs or constants (usually the float initializers),
// distinct, of a float dtype. Gradients of values read several times are summed; integer and bool
// paths carry no gradient. Fails with kUnsupported naming the node when a path from a `wrt` value
// to the loss crosses an op without a gradient rule (or one not differentiable with respect to the
// input on the path), with kInvalidArgument for a bad loss or `wrt` name, and leaves `g` unchanged
// when it fails.
GradientInfo BuildGradients(Graph& g, const std::string& loss, const std::vector<std::string>& wrt);

}  // namespace oneflow
