// Plans for global tensors: a logical graph plus a placement become, per rank, a physical graph
// with local shapes and Boxing (collective) nodes. Modes: data parallel, manual (annotations
// propagated), auto (a cost-model search over the whole graph). Deterministic: every rank
// computes the same plan from the same graph, placement and options.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/sbp.h"

namespace oneflow {

enum class PlanMode { kDataParallel, kManual, kAuto };
const char* PlanModeName(PlanMode m);        // "data", "manual", "auto"
PlanMode ParsePlanMode(const std::string& s);  // throws kInvalidArgument

// The cost model: every device computes at `flops_per_s` and streams memory at
// `memory_bytes_per_s`; collectives move bytes over links of `link_bytes_per_s` with
// `link_latency_s` per ring step. Defaults describe one CPU core and a 10 GB/s link.
struct CostModel {
  double flops_per_s = 50e9;
  double memory_bytes_per_s = 10e9;
  double link_bytes_per_s = 10e9;
  double link_latency_s = 10e-6;
};

struct PlanOptions {
  Placement placement;  // required
  PlanMode mode = PlanMode::kDataParallel;
  CostModel cost;
  int64_t memory_budget_bytes = 0;     // per device; 0 = unlimited
  int available_devices = 0;           // devices that exist; 0 = max device id + 1 of the placement
  std::map<std::string, NdSbp> sbp;    // manual annotations by value name (added to Value::sbp)
  std::map<std::string, Shape> input_shapes;  // concrete shapes for inputs with symbolic dims
  int max_states = 1024;  // auto/manual search: frontier states kept per step (see docs/distributed.md)
  // Graph outputs are returned all-B unless named here (training: a gradient in its parameter's
  // SBP). The search pays the boxing to these targets like any other.
  std::map<std::string, NdSbp> output_sbp;
  // Outputs the caller sums itself (a trainer's gradients): the plan routes each through partial
  // sums on its target's B axes (P there, then all-reduce), so the physical graph can stop at the
  // partial sums (see BuildPhysicalGraph) while the estimate still pays the all-reduce.
  std::set<std::string> reduce_outputs;
  // Training: f32 state tensors the optimizer keeps per parameter element (SGD with momentum 1,
  // Adam 2) and the ZeRO stage (>= 1: that state is divided over each parameter's replicas).
  // Shown in the explanation and counted against the memory budget. Graph inputs marked
  // is_parameter (a training graph's weights) count as parameters, not activations.
  int optimizer_states = 0;
  int zero_stage = 0;
};

// One step of boxing along one placement axis (docs/distributed.md lists the table).
struct BoxingStep {
  int axis = 0;           // placement axis
  Sbp from, to;
  NdSbp before, after;    // the n-D SBP around this step
  std::string kind;       // all_reduce, all_gather, reduce_scatter, all_to_all, slice, zero_fill, zero_pad
  double bytes = 0;       // bytes each device sends (0 for local steps)
  double seconds = 0;     // estimated time
};

struct NodePlan {
  int node = 0;
  std::vector<NdSbp> in;   // SBP each input is consumed in (empty entry: omitted input)
  std::vector<NdSbp> out;  // SBP each output is produced in
  std::vector<std::vector<BoxingStep>> in_boxing;   // per input: steps from the producer's SBP
  std::vector<std::vector<BoxingStep>> out_boxing;  // per output: steps to a manual annotation
  double flops = 0;            // on the busiest device
  double compute_seconds = 0;  // on the busiest device
  bool replicated = false;     // ran "all B" because the op has no rule or nothing better fit
};

struct Plan {
  Graph logical;           // shapes concrete, constants folded
  PlanOptions options;
  std::vector<int> order;  // node indices, topological
  std::vector<NodePlan> nodes;       // parallel to `order`
  std::vector<NdSbp> value_sbp;      // per value: the SBP it is produced (or fed) in
  std::vector<std::vector<BoxingStep>> output_boxing;  // per graph output: to all-B or its output_sbp
  // Per graph output: where the all-reduce tail of a reduce_outputs entry starts in its boxing
  // (== its size for other outputs).
  std::vector<size_t> output_reduce_start;
  double compute_seconds = 0, comm_seconds = 0, step_seconds = 0;
  int64_t param_bytes = 0;       // per device (busiest)
  int64_t optimizer_bytes = 0;   // per device (busiest): optimizer state (training plans)
  int64_t activation_bytes = 0;  // per device: peak of live activations along the order
  uint64_t graph_hash = 0;       // of the logical graph + placement + mode
  int64_t states_explored = 0;   // search size (auto/manual)
  bool search_truncated = false; // the state cap was hit somewhere (beam fallback)

  std::string ToText() const;
  std::string ToJson() const;
};

// Plans `model` (prepared: schemas resolved, shapes inferred). Errors: devices that do not exist,
// annotations that do not fit their value, symbolic shapes without `input_shapes`, no plan within
// the memory budget.
Plan MakePlan(const Graph& model, const PlanOptions& options);

// The boxing steps turning `from` into `to` for a tensor of `shape`, one placement axis at a
// time (inner axes first where a split nests inside another; see sbp.h's slice rule).
std::vector<BoxingStep> PlanBoxing(const Shape& shape, DType dtype, const NdSbp& from, const NdSbp& to,
                                   const Placement& placement, const CostModel& cost);

// The physical graph of the device at `position` in the placement: local shapes, Boxing nodes
// carrying communicator key `comm_key`, constants pre-sliced. Graph inputs keep their names and
// take the local block of the logical feed (see LocalFeed); outputs are all-B (whole) tensors or
// local blocks of their output_sbp target. reduce_outputs named in `defer_all_reduce` are
// returned as local partial sums (before their all-reduce tail): the caller reduces them (a
// trainer reduces gradients in buckets); DeferredReduceGroup says over which devices.
Graph BuildPhysicalGraph(const Plan& plan, int position, const std::string& comm_key,
                         const std::set<std::string>& defer_all_reduce = {});

// For graph output `output_index` of a plan: whether it ends in an all-reduce tail (so it can be
// deferred), and the placement positions (with `position`) whose partial sums that tail adds:
// every position that differs from `position` only on the all-reduced placement axes, in order.
bool IsDeferrableOutput(const Plan& plan, size_t output_index);
std::vector<int> DeferredReduceGroup(const Plan& plan, size_t output_index, int position);

// A graph for the device at `position` that takes its local block of a tensor in SBP `from` and
// returns its local block in `to` (the boxing steps alone): for tests and resharding.
Graph BuildBoxingGraph(const Shape& shape, DType dtype, const NdSbp& from, const NdSbp& to, const Placement& placement,
                       int position, const std::string& comm_key, const CostModel& cost = {});

// The block of the logical tensor `feed` that graph input `input_index` takes at `position`.
Tensor LocalFeed(const Plan& plan, size_t input_index, int position, const Tensor& feed);

// A hash of a graph's structure, types, attributes and constant bytes (FNV-1a, 64-bit).
uint64_t GraphHash(const Graph& g);

// Estimated floating-point operations of a node on local shapes: the cost model's compute term,
// also what the pipeline trainer balances stages by.
double EstimateFlops(const Node& n, const std::vector<Shape>& in, const std::vector<Shape>& out);

}  // namespace oneflow
