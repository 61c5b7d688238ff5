// The `plan` table of the native format: the graph's placement and the values' manual SBP
// annotations (docs/native-format.md, "plan"). Internal to the native writer and reader.
#pragma once

#include <string>

#include "graph/graph.h"
#include "ofm_generated.h"

namespace oneflow {

// The plan of `g`: placements[0] = g.placement, one annotation per value with a non-empty sbp
// (bound to placement 0, or -1 when the graph has no placement). Null (0) when there is neither.
// Throws kInvalidArgument for what the reader would refuse (an SBP of the wrong length, a split
// axis out of range, a hierarchy that does not multiply to the device count).
flatbuffers::Offset<ofm::Plan> EncodePlan(flatbuffers::FlatBufferBuilder& b, const Graph& g);

// Restores g.placement and every Value::sbp from `plan` (null: leaves them empty). `g` must hold
// the file's values and nodes. Throws kInvalidModel ("native model <label>: plan: ...") naming
// the problem; kUnsupported for more than one placement (the IR keeps one per graph).
void DecodePlan(const ofm::Plan* plan, const std::string& label, Graph& g);

}  // namespace oneflow
