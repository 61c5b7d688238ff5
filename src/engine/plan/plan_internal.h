// Pieces of the planner shared by its source files (not part of the engine's interface).
#pragma once

#include <vector>

#include "engine/plan/plan.h"

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

// Estimated floating-point operations of a node on local shapes.
double EstimateFlops(const Node& n, const std::vector<Shape>& in, const std::vector<Shape>& out);

// Fills plan.nodes, value_sbp, output boxing and the totals from the chosen candidates.
void ReplayPlan(Plan& plan, const std::vector<int>& fed, const std::vector<NdSbp>& fed_sbp,
                const std::vector<std::vector<Candidate>>& cands, const std::vector<int>& choice);

// `s` with every B replaced by P: how a reduce_outputs entry is routed before its all-reduce.
NdSbp PartialOnBroadcastAxes(const NdSbp& s);

// FNV-1a over bytes, continuing from `seed` (the offset basis for a fresh hash).
uint64_t Fnv1a(const void* data, size_t bytes, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace oneflow
