// Pieces of the planner shared by its source files (not part of the engine's interface).
#pragma once

#include <vector>

#include "base/hash.h"
#include "plan/plan.h"

namespace oneflow {

// One n-D signature a node may run with, and what it costs on the busiest device.
struct Candidate {
  std::vector<NdSbp> in;   // per input (empty for an omitted input)
  std::vector<NdSbp> out;  // per output
  bool replicated = false; // the "all B" fallback
  double flops = 0;
  double seconds = 0;      // compute + memory traffic
  double out_bytes = 0;    // local bytes of the outputs
  double param_bytes = 0;  // local bytes of the parameters it reads in its SBP
};

// The n-D candidates of `n`: products of the op's 1-D signatures (plus all-B) over the placement
// axes that fit every shape, filtered by the mode (data: constants stay B; manual: annotated
// constants keep their annotation when some candidate allows it).
std::vector<Candidate> NodeCandidates(const Graph& g, const Node& n, const PlanOptions& o, bool data, bool manual);


// Fills plan.nodes, value_sbp, output boxing and the totals from the chosen candidates.
void ReplayPlan(Plan& plan, const std::vector<int>& fed, const std::vector<NdSbp>& fed_sbp,
                const std::vector<std::vector<Candidate>>& cands, const std::vector<int>& choice);

// `s` with every B replaced by P: how a reduce_outputs entry is routed before its all-reduce.
NdSbp PartialOnBroadcastAxes(const NdSbp& s);


}  // namespace oneflow
