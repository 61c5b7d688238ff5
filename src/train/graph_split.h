// Splits a graph that holds forward and backward nodes (after BuildGradients) into the graphs a
// training session compiles: forward (keeps what backward reads), backward, and eval (forward only),
// with optional activation checkpointing (recompute forward segments inside backward).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace oneflow::train {

// Copies the part of `g` that computes `outputs` from `inputs` into a new graph: only the nodes
// needed (in the order of `node_order`, which must list every candidate node producer-first), only
// the inputs read. Values keep their names, types and constants. Throws kInternal when an output
// cannot be computed from `inputs` and constants.
Graph ExtractSubgraph(const Graph& g, const std::vector<int>& node_order, const std::vector<int>& inputs,
                      const std::vector<int>& outputs);

// A value that alone separates a forward order: right after its producer (order[position]) it is
// the only node output still read by a later node of the order. Graph inputs and constants (data,
// parameters, labels) do not count: any part may read them.
struct Separator {
  size_t position = 0;
  int value = kNoValue;
};
// Every separator of `order` (producer-first node indices of `g`), in order; the last node is never
// one, and producers of several outputs are skipped. Activation checkpointing chooses segment
// boundaries among them; pipeline parallelism cuts stages at them.
std::vector<Separator> SingleValueSeparators(const Graph& g, const std::vector<int>& order);

struct SplitRequest {
  size_t first_backward_node = 0;   // g.nodes[first_backward_node, end) compute gradients
  std::vector<int> data_inputs;     // fed by the caller (model inputs, labels)
  std::vector<int> params;          // trained parameters (graph inputs of `g`)
  std::vector<int> user_outputs;    // the model's outputs
  int loss = kNoValue;
  std::vector<int> gradients;       // one per param, same order
  bool checkpointing = false;
};

struct TrainingGraphs {
  Graph forward;   // inputs: data inputs + params it reads; outputs: user outputs, loss, saved values
  Graph backward;  // inputs: saved values, data inputs and params it reads; outputs: gradients
  Graph eval;      // inputs: the data inputs it reads + params; outputs: user outputs
  std::vector<std::string> saved;        // forward values handed to backward, by name
  std::vector<std::string> checkpoints;  // with checkpointing: the segment boundaries kept
  size_t recomputed_nodes = 0;           // forward nodes copied into backward
};

// Builds the three graphs. With checkpointing, the forward values backward needs are not kept:
// only segment boundaries are (values that alone separate the forward graph, e.g. the residual
// stream between transformer sub-blocks), and each segment is recomputed in backward right before
// the first backward node that reads it, so one segment's activations are alive at a time.
TrainingGraphs SplitForTraining(const Graph& g, const SplitRequest& request);

}  // namespace oneflow::train
