// Control flow (If, Loop, Scan): what their subgraphs are given and return, worked out once for both
// static inference (graph/ops/control_flow.cc) and the kernels that run the subgraphs
// (engine/control_flow_kernels.cc), so the two always prepare a subgraph with the same types.
//
// A subgraph's inputs are its formal inputs (none for an If branch; iteration number, condition and
// loop-carried values for a Loop body; states and scan slices for a Scan body) followed by the
// outer values it captures (Graph::captured_inputs), which are the node's trailing inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace oneflow {

// A subgraph's input types, as it will be prepared with, and the output types inference gives it.
struct SubgraphTypes {
  std::vector<TensorType> inputs;
  std::vector<TensorType> outputs;
};

// What two types of one dtype have in common: the dims both agree on, unknown where they differ
// (no shape at all when the ranks differ).
TensorType JoinTypes(const TensorType& a, const TensorType& b);
// Whether JoinTypes may join the two: both tensors or both sequences (either maybe optional), or
// either unknown. The join is optional when either is.
bool KindsJoin(const TensorType& a, const TensorType& b);

// A copy of `sub` with its inputs typed `input_types` (one per input; an undefined dtype keeps the
// type the subgraph declares) and every node's output types inferred. Errors say "subgraph".
Graph TypedSubgraph(const Graph& sub, const std::vector<TensorType>& input_types);

// The attributes of a Scan node, checked against its inputs (every rank known or not).
struct ScanSpec {
  size_t num_states = 0;       // N: the leading inputs (and outputs) carried from step to step
  size_t num_scan_inputs = 0;  // M: the inputs sliced along their scan axis
  size_t num_scan_outputs = 0; // K: the outputs stacked along their scan axis
  std::vector<int64_t> input_axes;        // per scan input, non-negative once the rank is known
  std::vector<char> input_reverse;        // per scan input
  std::vector<int64_t> output_axes;       // per scan output, as given (normalized against rank + 1)
  std::vector<char> output_reverse;       // per scan output
};

// `node` names the node in errors; `declared_inputs` excludes captured ones.
ScanSpec ParseScanSpec(const AttrMap& attrs, size_t declared_inputs, size_t num_outputs, const std::string& node);

// The types a Loop body runs with: iteration number int64[], condition bool[], then the carried
// values (their initial types, relaxed to unknown dims where an iteration changes them), then the
// captured values. `carried` are v_initial's types, `captured` the node's trailing input types.
SubgraphTypes LoopBodyTypes(const Graph& body, const std::vector<TensorType>& carried,
                            const std::vector<TensorType>& captured, const std::string& node);

// The types a Scan body runs with: the states, one slice of each scan input (its axis removed), then
// the captured values.
SubgraphTypes ScanBodyTypes(const Graph& body, const ScanSpec& spec, const std::vector<TensorType>& states,
                            const std::vector<TensorType>& scan_inputs, const std::vector<TensorType>& captured,
                            const std::string& node);

// The types a SequenceMap body runs with: per declared input (`inputs`: the sequence, then the
// additional inputs), the element type of a sequence or the type of a tensor; then the captured
// values. Its outputs are the element types of the node's output sequences.
SubgraphTypes SequenceMapBodyTypes(const Graph& body, const std::vector<TensorType>& inputs,
                                   const std::vector<TensorType>& captured, const std::string& node);

// The types an If branch runs with (its captured values) and returns.
SubgraphTypes BranchTypes(const Graph& branch, const std::vector<TensorType>& captured, const std::string& node);

// The declared-input count of a node with subgraphs (its inputs less the captured ones).
inline size_t DeclaredInputCount(size_t num_inputs, const AttrMap& attrs) {
  const size_t captured = CapturedInputCount(attrs);
  return num_inputs >= captured ? num_inputs - captured : 0;
}

}  // namespace oneflow
