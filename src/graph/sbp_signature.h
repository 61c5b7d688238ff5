// The SBP signatures an op declares in its OpSchema: which 1-D SBP combinations of its inputs and
// outputs compute the logical result when each device runs the op on its local pieces.
#pragma once

#include <functional>
#include <vector>

#include "graph/attribute.h"
#include "graph/sbp.h"

namespace oneflow {

// One valid assignment for one placement axis: an Sbp per input (absent optional inputs get B)
// and per output. n-D signatures are products of 1-D ones, one per placement axis.
struct SbpSignature {
  std::vector<Sbp> in;
  std::vector<Sbp> out;
};

// What an SBP rule sees: the node's attributes and the logical (static) shapes of its inputs and
// outputs. `has_input(i)` is false for omitted optional inputs.
struct SbpContext {
  const AttrMap* attrs = nullptr;
  std::vector<const Shape*> inputs;   // nullptr for an omitted input
  std::vector<const Shape*> outputs;  // nullptr for an omitted output
  std::vector<const Tensor*> values;  // constant input data (axes, shapes), else nullptr
  // Devices of the whole placement: rules that split a merged axis along its leading factor
  // (Reshape [B,S,H*D] -> [B,S,H,D]) require the factor to divide evenly by this.
  int64_t devices = 1;

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Shape& in(size_t i) const { return *inputs[i]; }
  const Shape& out(size_t i) const { return *outputs[i]; }
  int64_t in_rank(size_t i) const { return static_cast<int64_t>(inputs[i]->size()); }
  int64_t out_rank(size_t i) const { return static_cast<int64_t>(outputs[i]->size()); }
};

// Returns the op's valid 1-D signatures besides "everything B" (replicated compute), which the
// planner always allows for every op, so an op without a rule still runs, only unsplit.
using SbpFn = std::function<std::vector<SbpSignature>(const SbpContext&)>;

}  // namespace oneflow
