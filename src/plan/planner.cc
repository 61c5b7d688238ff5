// The planner: candidate n-D SBP signatures per node from the op registry, then one search over
// the whole graph in topological order. The search state is the SBP of every live activation
// (the values crossing the current cut); each node extends every state with every candidate
// signature, paying compute, boxing and memory. Exact while the number of states stays under
// PlanOptions::max_states; past it the cheapest states are kept (a beam), which the plan reports.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>

#include "base/error.h"
#include "plan/plan.h"
#include "plan/plan_internal.h"
#include "graph/op_schema.h"
#include "passes/passes.h"
#include "kernels/node_runner.h"

namespace oneflow {

const char* PlanModeName(PlanMode m) {
  switch (m) {
    case PlanMode::kDataParallel: return "data";
    case PlanMode::kManual: return "manual";
    case PlanMode::kAuto: return "auto";
  }
  return "?";
}

PlanMode ParsePlanMode(const std::string& s) {
  if (s == "data") return PlanMode::kDataParallel;
  if (s == "manual") return PlanMode::kManual;
  if (s == "auto") return PlanMode::kAuto;
  Fail(ErrorCode::kInvalidArgument, "unknown plan mode '", s, "' (data, manual or auto)");
}

namespace {

// n-D SBP <-> one integer, for compact search states.
int64_t Code(const NdSbp& s) {
  int64_t c = 0;
  for (size_t k = s.size(); k-- > 0;) {
    int64_t e = s[k].is_broadcast() ? 0 : s[k].is_partial() ? 1 : 2 + s[k].axis;
    c = c * 64 + e;
  }
  return c;
}
NdSbp Decode(int64_t c, int ndim) {
  NdSbp s;
  for (int k = 0; k < ndim; ++k, c /= 64) {
    int64_t e = c % 64;
    s.push_back(e == 0 ? Sbp::B() : e == 1 ? Sbp::P() : Sbp::S(static_cast<int>(e - 2)));
  }
  return s;
}

double LocalBytesAt0(const Value& v, const NdSbp& s, const Placement& p) {
  return static_cast<double>(NumElements(LocalShape(v.type.ToShape(), s, p.hierarchy, p.Coord(0)))) *
         static_cast<double>(DTypeSize(v.type.dtype));
}

// Every n-D SBP made of B and fitting splits, for a free graph input.
std::vector<NdSbp> InputChoices(const Shape& shape, const Placement& p) {
  std::vector<NdSbp> out{NdSbp()};
  for (int k = 0; k < p.ndim(); ++k) {
    std::vector<NdSbp> next;
    for (const NdSbp& prefix : out) {
      for (int a = -1; a < static_cast<int>(shape.size()); ++a) {
        NdSbp s = prefix;
        s.push_back(a < 0 ? Sbp::B() : Sbp::S(a));
        next.push_back(s);
      }
    }
    out.swap(next);
  }
  std::vector<NdSbp> fit;
  for (const NdSbp& s : out)
    if (SbpMisfit(shape, s, p.hierarchy).empty()) fit.push_back(s);
  return fit;
}

// The data-parallel default for a fed tensor: S(0) on every placement axis where it fits.
NdSbp DataDefault(const Shape& shape, const Placement& p) {
  NdSbp s = AllBroadcast(p.ndim());
  for (int k = 0; k < p.ndim(); ++k) {
    s[static_cast<size_t>(k)] = Sbp::S(0);
    if (!SbpMisfit(shape, s, p.hierarchy).empty()) s[static_cast<size_t>(k)] = Sbp::B();
  }
  return s;
}

struct CodesHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t x : v) h = (h ^ static_cast<uint64_t>(x)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};

struct Entry {
  std::vector<int64_t> codes;  // SBP code per frontier value
  uint64_t hash = 0;           // of codes: orders a layer deterministically and cheaply
  double time = 0;
  double params = 0;
  double peak = 0;
  int parent = -1;
  int choice = -1;
};

}  // namespace

// Concrete shapes, folded constants, annotations applied and checked.
static Graph PrepareLogical(const Graph& model, const PlanOptions& o) {
  Graph g = model;
  for (int in : g.inputs) {
    Value& v = g.values[static_cast<size_t>(in)];
    auto it = o.input_shapes.find(v.name);
    if (it != o.input_shapes.end()) {
      const Shape& s = it->second;
      OF_REQUIRE(!v.type.has_rank || v.type.rank() == static_cast<int64_t>(s.size()), "input '", v.name, "' has type ",
                 v.type.ToString(), ", the given shape ", ShapeToString(s), " has another rank");
      for (size_t d = 0; v.type.has_rank && d < s.size(); ++d)
        OF_REQUIRE(!v.type.dims[d].known() || v.type.dims[d].value == s[d], "input '", v.name, "' has type ",
                   v.type.ToString(), ", the given shape ", ShapeToString(s), " differs in dim ", d);
      v.type = TensorType::Of(v.type.dtype, s);
    }
    OF_REQUIRE(v.type.fully_known(), "input '", v.name, "' has shape ", v.type.ToString(),
               "; a plan needs concrete shapes: give one (e.g. --shape ", v.name, "=8,...)");
  }
  for (const auto& [name, sbp] : o.sbp) {
    int id = g.FindValue(name);
    OF_CHECK(id != kNoValue, kNotFound, "SBP annotation names '", name, "', which is not a value of the model");
    g.values[static_cast<size_t>(id)].sbp = sbp;
  }
  InferShapes(g);
  {
    ThreadPool pool(1);
    FoldConstants(g, pool, EvaluateOnCpu);
  }
  // Folding turns shape computations (Shape -> Reshape, as gradient graphs have) into constants:
  // infer again so the values they shape become static.
  InferShapes(g);
  EliminateDeadCode(g);
  for (const Node& n : g.nodes)
    for (int id : n.outputs)
      if (id != kNoValue)
        OF_REQUIRE(g.values[static_cast<size_t>(id)].type.fully_known(), "value '", g.values[static_cast<size_t>(id)].name,
                   "' (", n.Describe(), ") has a shape known only at run time (", g.values[static_cast<size_t>(id)].type.ToString(),
                   "); plans need static shapes");
  for (const Value& v : g.values) {
    if (v.sbp.empty()) continue;
    OF_REQUIRE(v.type.fully_known(), "annotated value '", v.name, "' has no static shape");
    CheckSbpFits("value '" + v.name + "'", v.type.ToShape(), v.sbp, o.placement);
  }
  return g;
}

Plan MakePlan(const Graph& model, const PlanOptions& options) {
  const Placement& P = options.placement;
  OF_REQUIRE(!P.empty(), "a plan needs a placement");
  int available = options.available_devices;
  if (available == 0) available = *std::max_element(P.devices.begin(), P.devices.end()) + 1;
  P.CheckDevicesExist(available);
  OF_REQUIRE(options.max_states >= 1, "max_states must be positive");

  Plan plan;
  plan.options = options;
  plan.logical = PrepareLogical(model, options);
  Graph& g = plan.logical;
  plan.order = g.TopologicalOrder();
  const int nd = P.ndim();
  const size_t T = plan.order.size();
  const bool manual = options.mode == PlanMode::kManual, data = options.mode == PlanMode::kDataParallel;

  // Liveness: a non-constant value lives from its producer to its last consumer (outputs: to the end).
  std::vector<int> last(g.values.size(), -1);
  std::vector<char> is_output(g.values.size(), 0);
  for (size_t t = 0; t < T; ++t)
    for (int id : g.nodes[static_cast<size_t>(plan.order[t])].inputs)
      if (id != kNoValue) last[static_cast<size_t>(id)] = static_cast<int>(t);
  for (int id : g.outputs) {
    is_output[static_cast<size_t>(id)] = 1;
    last[static_cast<size_t>(id)] = static_cast<int>(T);
  }
  auto is_activation = [&](int id) { return !g.values[static_cast<size_t>(id)].constant.defined(); };

  // Candidates per node.
  std::vector<std::vector<Candidate>> cands(T);
  for (size_t t = 0; t < T; ++t) {
    const Node& n = g.nodes[static_cast<size_t>(plan.order[t])];
    cands[t] = NodeCandidates(g, n, options, data, manual);
  }

  // Frontier after each step (fixed by liveness; the search only varies the SBPs).
  // Inputs with exactly one possible SBP (annotated, or the data-parallel default; a training
  // graph's weights) stay out of the search state: they would only lengthen every state's key.
  std::vector<int64_t> fixed_code(g.values.size(), -1);
  std::vector<int> fixed;
  auto input_choices = [&](const Value& v) -> std::vector<NdSbp> {
    if (!v.sbp.empty()) return {v.sbp};
    if (options.mode == PlanMode::kAuto) return InputChoices(v.type.ToShape(), P);
    return {DataDefault(v.type.ToShape(), P)};
  };
  std::vector<std::vector<int>> frontier(T + 1);
  for (int id : g.inputs) {
    if (last[static_cast<size_t>(id)] < 0) continue;
    const std::vector<NdSbp> choices = input_choices(g.values[static_cast<size_t>(id)]);
    if (choices.size() == 1 && !is_output[static_cast<size_t>(id)]) {
      fixed_code[static_cast<size_t>(id)] = Code(choices[0]);
      fixed.push_back(id);
    } else {
      frontier[0].push_back(id);
    }
  }
  for (size_t t = 0; t < T; ++t) {
    const Node& n = g.nodes[static_cast<size_t>(plan.order[t])];
    for (int id : frontier[t])
      if (last[static_cast<size_t>(id)] > static_cast<int>(t)) frontier[t + 1].push_back(id);
    for (int id : n.outputs)
      if (id != kNoValue && is_activation(id) && last[static_cast<size_t>(id)] > static_cast<int>(t))
        frontier[t + 1].push_back(id);
  }

  // Memoized boxing cost of a value between two SBPs.
  std::map<std::tuple<int, int64_t, int64_t>, double> box_memo;
  auto box_cost = [&](int id, int64_t from, int64_t to) {
    if (from == to) return 0.0;
    auto key = std::make_tuple(id, from, to);
    auto it = box_memo.find(key);
    if (it != box_memo.end()) return it->second;
    const Value& v = g.values[static_cast<size_t>(id)];
    double s = 0;
    for (const BoxingStep& b : PlanBoxing(v.type.ToShape(), v.type.dtype, Decode(from, nd), Decode(to, nd), P, options.cost))
      s += b.seconds;
    return box_memo[key] = s;
  };

  // Local bytes of a value in an SBP (memoized: every extension sums them over the frontier).
  std::vector<std::unordered_map<int64_t, double>> bytes_memo(g.values.size());
  auto live_bytes = [&](int id, int64_t code) {
    auto& m = bytes_memo[static_cast<size_t>(id)];
    auto it = m.find(code);
    if (it != m.end()) return it->second;
    return m[code] = LocalBytesAt0(g.values[static_cast<size_t>(id)], Decode(code, nd), P);
  };
  double fixed_bytes = 0;  // fixed inputs are counted as live throughout
  for (int id : fixed) fixed_bytes += live_bytes(id, fixed_code[static_cast<size_t>(id)]);

  // Graph outputs are returned whole (all-B) or in their requested SBP. An output's boxing is paid
  // when the output is produced (its SBP never changes afterwards), so the beam compares states
  // with their whole cost rather than preferring what only looks cheap until the end.
  for (const auto& [name, sbp] : options.output_sbp) {
    int id = g.FindValue(name);
    OF_CHECK(id != kNoValue && std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end(), kNotFound,
             "output SBP requested for '", name, "', which is not an output of the model");
    CheckSbpFits("output '" + name + "'", g.values[static_cast<size_t>(id)].type.ToShape(), sbp, P);
  }
  auto output_cost = [&](int id, int64_t from) {
    const std::string& name = g.values[static_cast<size_t>(id)].name;
    auto it = options.output_sbp.find(name);
    const NdSbp target = it != options.output_sbp.end() ? it->second : AllBroadcast(nd);
    if (!options.reduce_outputs.count(name)) return box_cost(id, from, Code(target));
    const int64_t partial = Code(PartialOnBroadcastAxes(target));
    return box_cost(id, from, partial) + box_cost(id, partial, Code(target));
  };
  // Initial states: the SBPs graph inputs are fed in.
  std::vector<std::vector<Entry>> layers(T + 1);
  {
    std::vector<Entry> init{Entry{}};
    for (int id : frontier[0]) {
      const std::vector<NdSbp> choices = input_choices(g.values[static_cast<size_t>(id)]);
      std::vector<Entry> next;
      for (const Entry& e : init)
        for (const NdSbp& c : choices) {
          Entry x = e;
          x.codes.push_back(Code(c));
          next.push_back(x);
        }
      init.swap(next);
    }
    layers[0] = init;
  }

  double budget = options.memory_budget_bytes > 0 ? static_cast<double>(options.memory_budget_bytes)
                                                  : std::numeric_limits<double>::infinity();
  double smallest_over = std::numeric_limits<double>::infinity();
  for (size_t t = 0; t < T; ++t) {
    const Node& n = g.nodes[static_cast<size_t>(plan.order[t])];
    std::map<int, size_t> pos_before, pos_after;
    for (size_t i = 0; i < frontier[t].size(); ++i) pos_before[frontier[t][i]] = i;
    for (size_t i = 0; i < frontier[t + 1].size(); ++i) pos_after[frontier[t + 1][i]] = i;
    std::unordered_map<std::vector<int64_t>, Entry, CodesHash> next;
    for (size_t ei = 0; ei < layers[t].size(); ++ei) {
      const Entry& e = layers[t][ei];
      for (size_t ci = 0; ci < cands[t].size(); ++ci) {
        const Candidate& c = cands[t][ci];
        Entry x;
        x.time = e.time + c.seconds;
        x.params = e.params + c.param_bytes;
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          int id = n.inputs[i];
          if (id == kNoValue || !is_activation(id)) continue;
          const int64_t have = fixed_code[static_cast<size_t>(id)] >= 0 ? fixed_code[static_cast<size_t>(id)]
                                                                         : e.codes[pos_before.at(id)];
          x.time += box_cost(id, have, Code(c.in[i]));
        }
        x.codes.assign(frontier[t + 1].size(), 0);
        double live = fixed_bytes;
        for (size_t i = 0; i < frontier[t + 1].size(); ++i) {
          int id = frontier[t + 1][i];
          auto b = pos_before.find(id);
          if (b != pos_before.end()) {
            x.codes[i] = e.codes[b->second];
          } else {
            size_t o = static_cast<size_t>(std::find(n.outputs.begin(), n.outputs.end(), id) - n.outputs.begin());
            const Value& v = g.values[static_cast<size_t>(id)];
            int64_t produced = Code(c.out[o]);
            if (!v.sbp.empty()) {
              x.time += box_cost(id, produced, Code(v.sbp));
              produced = Code(v.sbp);
            }
            x.codes[i] = produced;
            if (is_output[static_cast<size_t>(id)]) x.time += output_cost(id, produced);
          }
          live += live_bytes(id, x.codes[i]);
        }
        x.peak = std::max(e.peak, live + c.out_bytes);
        if (x.params + x.peak > budget) {
          smallest_over = std::min(smallest_over, x.params + x.peak);
          continue;
        }
        x.parent = static_cast<int>(ei);
        x.choice = static_cast<int>(ci);
        auto [it, inserted] = next.emplace(x.codes, x);
        if (!inserted && (x.time < it->second.time || (x.time == it->second.time && x.params < it->second.params)))
          it->second = x;
        ++plan.states_explored;
      }
    }
    OF_REQUIRE(!next.empty(), "no plan fits the memory budget of ", options.memory_budget_bytes,
               " bytes per device at ", n.Describe(), " (the smallest candidate needs ",
               static_cast<int64_t>(smallest_over), " bytes)");
    std::vector<Entry>& layer = layers[t + 1];
    for (auto& kv : next) layer.push_back(std::move(kv.second));
    // Hash order is not deterministic across standard libraries: order the layer by its codes so
    // every rank keeps the same states and breaks ties alike.
    for (Entry& e : layer) e.hash = CodesHash()(e.codes);
    std::sort(layer.begin(), layer.end(),
              [](const Entry& a, const Entry& b) { return a.hash != b.hash ? a.hash < b.hash : a.codes < b.codes; });
    if (static_cast<int>(layer.size()) > options.max_states) {
      std::stable_sort(layer.begin(), layer.end(), [](const Entry& a, const Entry& b) { return a.time < b.time; });
      layer.resize(static_cast<size_t>(options.max_states));
      plan.search_truncated = true;
    }
  }

  std::vector<Entry>& final_layer = layers[T];
  int best = -1;
  double best_time = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < final_layer.size(); ++i) {
    double time = final_layer[i].time;
    for (size_t f = 0; f < frontier[T].size(); ++f)  // outputs that are graph inputs (the rest paid already)
      if (is_output[static_cast<size_t>(frontier[T][f])] && std::find(frontier[0].begin(), frontier[0].end(), frontier[T][f]) != frontier[0].end())
        time += output_cost(frontier[T][f], final_layer[i].codes[f]);
    if (time < best_time) {
      best_time = time;
      best = static_cast<int>(i);
    }
  }
  OF_ASSERT(best >= 0);
  std::vector<int> choice(T);
  std::vector<int64_t> input_codes;
  for (int t = static_cast<int>(T), idx = best; t >= 0; --t) {
    const Entry& e = layers[static_cast<size_t>(t)][static_cast<size_t>(idx)];
    if (t == 0) input_codes = e.codes;
    else choice[static_cast<size_t>(t - 1)] = e.choice;
    idx = e.parent;
  }
  std::vector<NdSbp> inputs_sbp;
  for (int64_t c : input_codes) inputs_sbp.push_back(Decode(c, nd));
  std::vector<int> fed = frontier[0];
  for (int id : fixed) {
    fed.push_back(id);
    inputs_sbp.push_back(Decode(fixed_code[static_cast<size_t>(id)], nd));
  }
  ReplayPlan(plan, fed, inputs_sbp, cands, choice);
  return plan;
}

}  // namespace oneflow
