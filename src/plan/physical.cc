// Builds the physical graph of one device from a plan: local shapes, constants cut to the SBP
// their consumers need, and one Boxing node per boxing step.
#include <map>
#include <set>

#include "base/error.h"
#include "plan/plan_internal.h"
#include "graph/op_schema.h"
#include "passes/passes.h"

namespace oneflow {
namespace {

// Appends the Boxing node of one step for the device at `position`; returns the new local value.
int EmitBoxingNode(Graph& out, const std::string& name, DType dtype, const Shape& shape, const BoxingStep& s,
                   const Placement& P, int position, const std::string& key, int in_pid) {
  const std::vector<int64_t> coord = P.Coord(position);
  const size_t k = static_cast<size_t>(s.axis);
  std::vector<int> members = P.AxisGroup(position, s.axis);
  auto at = [&](const NdSbp& sbp, size_t m) {
    std::vector<int64_t> c = coord;
    c[k] = static_cast<int64_t>(m);
    return LocalShape(shape, sbp, P.hierarchy, c);
  };
  Node n;
  n.op_type = op::kBoxing;
  n.domain = kOneflowDomain;
  n.opset = kOneflowDomainVersion;
  n.name = out.UniqueName(name + "/" + s.kind);
  n.attrs.set("mode", Attribute::String(s.kind));
  Shape local_out = LocalShape(shape, s.after, P.hierarchy, coord);
  n.attrs.set("shape", Attribute::Ints(local_out));
  std::vector<int64_t> group;
  for (int m : members) group.push_back(P.devices[static_cast<size_t>(m)]);
  n.attrs.set("group", Attribute::Ints(group));
  n.attrs.set("comm", Attribute::String(key));
  std::vector<int64_t> sizes, in_sizes, starts;
  if (s.kind == "all_gather") {
    n.attrs.set("axis", Attribute::Int(s.from.axis));
    for (size_t m = 0; m < members.size(); ++m) sizes.push_back(at(s.before, m)[static_cast<size_t>(s.from.axis)]);
  } else if (s.kind == "reduce_scatter") {
    n.attrs.set("axis", Attribute::Int(s.to.axis));
    for (size_t m = 0; m < members.size(); ++m) sizes.push_back(at(s.after, m)[static_cast<size_t>(s.to.axis)]);
  } else if (s.kind == "all_to_all") {
    n.attrs.set("axis", Attribute::Int(s.to.axis));
    n.attrs.set("in_axis", Attribute::Int(s.from.axis));
    for (size_t m = 0; m < members.size(); ++m) {
      sizes.push_back(at(s.after, m)[static_cast<size_t>(s.to.axis)]);
      in_sizes.push_back(at(s.before, m)[static_cast<size_t>(s.from.axis)]);
    }
  } else if (s.kind == "slice" || s.kind == "zero_pad") {
    std::vector<Range> before = LocalBlock(shape, s.before, P.hierarchy, coord);
    std::vector<Range> after = LocalBlock(shape, s.after, P.hierarchy, coord);
    for (size_t d = 0; d < shape.size(); ++d)
      starts.push_back(s.kind == "slice" ? after[d].start - before[d].start : before[d].start - after[d].start);
  } else if (s.kind == "zero_fill") {
    n.attrs.set("keep", Attribute::Int(coord[k] == 0 ? 1 : 0));
  }
  n.attrs.set("sizes", Attribute::Ints(sizes));
  n.attrs.set("in_sizes", Attribute::Ints(in_sizes));
  n.attrs.set("starts", Attribute::Ints(starts));
  int pid = out.AddValue(out.UniqueName(name + "/" + NdSbpToString(s.after)),
                          TensorType::Of(dtype, local_out));
  n.inputs = {in_pid};
  n.outputs = {pid};
  out.nodes.push_back(std::move(n));
  return pid;
}


class Builder {
 public:
  Builder(const Plan& plan, int position, const std::string& comm_key, const std::set<std::string>& defer)
      : plan_(plan), g_(plan.logical), P_(plan.options.placement), pos_(position),
        coord_(P_.Coord(position)), key_(comm_key), defer_(defer), produced_(g_.values.size(), kNoValue) {}

  Graph Build() {
    out_.name = g_.name;
    out_.producer = g_.producer;
    out_.opset_imports = g_.opset_imports;
    out_.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
    for (int id : g_.inputs) {
      const Value& v = g_.values[static_cast<size_t>(id)];
      int pid = out_.AddValue(v.name, Local(v, plan_.value_sbp[static_cast<size_t>(id)]));
      produced_[static_cast<size_t>(id)] = pid;
      out_.inputs.push_back(pid);
    }
    for (const NodePlan& np : plan_.nodes) EmitNode(np);
    for (size_t i = 0; i < g_.outputs.size(); ++i) {
      int id = g_.outputs[i];
      const Value& v = g_.values[static_cast<size_t>(id)];
      auto target = plan_.options.output_sbp.find(v.name);
      if (v.constant.defined()) {
        out_.outputs.push_back(target == plan_.options.output_sbp.end() ? out_.AddConstant(v.name, v.constant)
                                                                       : LocalConstant(id, target->second));
        continue;
      }
      int pid = produced_[static_cast<size_t>(id)];
      const std::vector<BoxingStep>& steps = plan_.output_boxing[i];
      const size_t end = defer_.count(v.name) && IsDeferrableOutput(plan_, i) ? plan_.output_reduce_start[i] : steps.size();
      for (size_t k = 0; k < end; ++k) pid = EmitBoxing(id, pid, steps[k]);
      out_.outputs.push_back(pid);
    }
    // Graph outputs carry the logical names callers fetch by.
    std::map<int, std::string> renames;
    for (size_t i = 0; i < g_.outputs.size(); ++i)
      renames[out_.outputs[i]] = g_.values[static_cast<size_t>(g_.outputs[i])].name;
    for (auto& [pid, name] : renames) {
      int clash = out_.FindValue(name);
      if (clash != kNoValue && clash != pid) out_.values[static_cast<size_t>(clash)].name = out_.UniqueName(name + "/local");
      out_.values[static_cast<size_t>(pid)].name = name;
    }
    out_.Reindex();
    return std::move(out_);
  }

 private:
  TensorType Local(const Value& v, const NdSbp& s) const {
    return TensorType::Of(v.type.dtype, LocalShape(v.type.ToShape(), s, P_.hierarchy, coord_));
  }

  // A constant as this device holds it under `s`: its block; zeros on the non-first devices of
  // every P axis (so the partial values sum to the constant).
  int LocalConstant(int id, const NdSbp& s) {
    std::string k = NdSbpToString(s);
    auto it = consts_.find({id, k});
    if (it != consts_.end()) return it->second;
    const Value& v = g_.values[static_cast<size_t>(id)];
    bool zero = false;
    for (size_t a = 0; a < s.size(); ++a) zero |= s[a].is_partial() && coord_[a] != 0;
    std::vector<Range> block = LocalBlock(v.type.ToShape(), s, P_.hierarchy, coord_);
    Shape shape;
    std::vector<int64_t> start;
    for (const Range& r : block) { shape.push_back(r.size); start.push_back(r.start); }
    Tensor t(v.constant.dtype(), shape);
    if (!zero) CopyBlock(v.constant, start, t, std::vector<int64_t>(shape.size(), 0), shape);
    int pid = out_.AddConstant(s == AllBroadcast(P_.ndim()) ? v.name : out_.UniqueName(v.name + "/" + k), t);
    out_.values[static_cast<size_t>(pid)].is_parameter = v.is_parameter;
    consts_[{id, k}] = pid;
    return pid;
  }

  int EmitBoxing(int id, int in_pid, const BoxingStep& s) {
    const Value& v = g_.values[static_cast<size_t>(id)];
    return EmitBoxingNode(out_, v.name, v.type.dtype, v.type.ToShape(), s, P_, pos_, key_, in_pid);
  }

  // The value `id` in SBP `want`, boxing it once per distinct target. A weight held split at rest
  // (ZeRO-3's layout) is boxed (gathered) again for every use instead: the gathered copy is freed
  // after its use, so a step holds one use's gathered weight at a time, not every weight from its
  // forward use to its backward one (the plan prices each use's boxing and memory that way).
  int Boxed(int id, const NdSbp& want, const std::vector<BoxingStep>& steps) {
    if (steps.empty()) return produced_[static_cast<size_t>(id)];
    bool per_use = false;
    if (g_.values[static_cast<size_t>(id)].is_parameter)
      for (const Sbp& s : plan_.value_sbp[static_cast<size_t>(id)]) per_use |= s.is_split();
    std::string k = NdSbpToString(want);
    auto it = boxed_.find({id, k});
    if (it != boxed_.end() && !per_use) return it->second;
    int pid = produced_[static_cast<size_t>(id)];
    for (const BoxingStep& s : steps) pid = EmitBoxing(id, pid, s);
    return boxed_[{id, k}] = pid;
  }

  void EmitNode(const NodePlan& np) {
    const Node& ln = g_.nodes[static_cast<size_t>(np.node)];
    Node n = ln;
    n.schema = nullptr;
    for (size_t i = 0; i < ln.inputs.size(); ++i) {
      int id = ln.inputs[i];
      if (id == kNoValue) continue;
      const Value& v = g_.values[static_cast<size_t>(id)];
      if (v.constant.defined()) {
        n.inputs[i] = LocalConstant(id, np.in[i]);
      } else {
        n.inputs[i] = Boxed(id, np.in[i], np.in_boxing[i]);
      }
    }
    // Target-shape inputs are logical: the device reshapes (or sums) to its local output shape.
    const bool reshape = ln.op_type == op::kReshape && ln.domain.empty();
    if ((reshape || (ln.op_type == op::kReduceSumToShape && ln.domain == kOneflowDomain)) && ln.has_output(0)) {
      const Value& y = g_.values[static_cast<size_t>(ln.outputs[0])];
      Shape local = LocalShape(y.type.ToShape(), np.out[0], P_.hierarchy, coord_);
      Tensor t(DType::kInt64, {static_cast<int64_t>(local.size())});
      for (size_t d = 0; d < local.size(); ++d) t.data<int64_t>()[d] = local[d];
      n.inputs[1] = out_.AddConstant(out_.UniqueName(ln.name + "/local_shape"), t);
      if (reshape) n.attrs.set("allowzero", Attribute::Int(0));
    }
    std::vector<int> produced_now;
    for (size_t j = 0; j < ln.outputs.size(); ++j) {
      int id = ln.outputs[j];
      if (id == kNoValue) continue;
      const Value& v = g_.values[static_cast<size_t>(id)];
      int pid = out_.AddValue(out_.UniqueName(v.name), Local(v, np.out[j]));
      n.outputs[j] = pid;
      produced_[static_cast<size_t>(id)] = pid;
    }
    n.name = ln.name;
    out_.nodes.push_back(std::move(n));
    for (size_t j = 0; j < ln.outputs.size(); ++j) {
      int id = ln.outputs[j];
      if (id == kNoValue) continue;
      int pid = produced_[static_cast<size_t>(id)];
      for (const BoxingStep& s : np.out_boxing[j]) pid = EmitBoxing(id, pid, s);
      produced_[static_cast<size_t>(id)] = pid;
    }
  }

  const Plan& plan_;
  const Graph& g_;
  const Placement& P_;
  int pos_;
  std::vector<int64_t> coord_;
  std::string key_;
  const std::set<std::string>& defer_;
  Graph out_;
  std::vector<int> produced_;
  std::map<std::pair<int, std::string>, int> consts_, boxed_;
};

}  // namespace

bool IsDeferrableOutput(const Plan& plan, size_t output_index) {
  const std::vector<BoxingStep>& steps = plan.output_boxing.at(output_index);
  const size_t start = plan.output_reduce_start.at(output_index);
  for (size_t k = start; k < steps.size(); ++k)
    if (steps[k].kind != "all_reduce") return false;
  return start < steps.size();
}

std::vector<int> DeferredReduceGroup(const Plan& plan, size_t output_index, int position) {
  const Placement& P = plan.options.placement;
  std::vector<char> reduced(static_cast<size_t>(P.ndim()), 0);
  const std::vector<BoxingStep>& steps = plan.output_boxing.at(output_index);
  for (size_t k = plan.output_reduce_start.at(output_index); k < steps.size(); ++k)
    reduced[static_cast<size_t>(steps[k].axis)] = 1;
  const std::vector<int64_t> me = P.Coord(position);
  std::vector<int> group;
  for (int q = 0; q < P.size(); ++q) {
    const std::vector<int64_t> c = P.Coord(q);
    bool same = true;
    for (size_t a = 0; a < c.size(); ++a) same &= reduced[a] || c[a] == me[a];
    if (same) group.push_back(q);
  }
  return group;
}

Graph BuildPhysicalGraph(const Plan& plan, int position, const std::string& comm_key,
                         const std::set<std::string>& defer_all_reduce) {
  OF_REQUIRE(position >= 0 && position < plan.options.placement.size(), "device position ", position,
             " outside placement ", plan.options.placement.ToString());
  Graph g = Builder(plan, position, comm_key, defer_all_reduce).Build();
  // Record the planned local types, infer, and check both agree: a wrong SBP rule shows up here
  // as an error naming the node rather than as wrong numbers.
  std::vector<TensorType> planned;
  for (const Value& v : g.values) planned.push_back(v.type);
  ResolveSchemas(g);
  InferShapes(g);
  for (size_t i = 0; i < g.values.size(); ++i) {
    const TensorType& got = g.values[i].type;
    OF_CHECK(!got.fully_known() || got.ToShape() == planned[i].ToShape(), kInternal, "plan for device ", position,
             ": value '", g.values[i].name, "' is planned as ", planned[i].ToString(), " but its op computes ",
             got.ToString());
  }
  return g;
}

Graph BuildBoxingGraph(const Shape& shape, DType dtype, const NdSbp& from, const NdSbp& to, const Placement& placement,
                       int position, const std::string& comm_key, const CostModel& cost) {
  const std::vector<int64_t> coord = placement.Coord(position);
  Graph g;
  g.name = "boxing";
  g.opset_imports[""] = kMaxOnnxOpset;
  g.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
  int pid = g.AddValue("x", TensorType::Of(dtype, LocalShape(shape, from, placement.hierarchy, coord)));
  g.inputs.push_back(pid);
  for (const BoxingStep& s : PlanBoxing(shape, dtype, from, to, placement, cost))
    pid = EmitBoxingNode(g, "x", dtype, shape, s, placement, position, comm_key, pid);
  if (g.nodes.empty()) {  // nothing to move: an Identity keeps input and output distinct values
    Node n;
    n.op_type = op::kIdentity;
    n.opset = kMaxOnnxOpset;
    n.name = "identity";
    n.inputs = {pid};
    n.outputs = {g.AddValue("y", g.values[static_cast<size_t>(pid)].type)};
    pid = n.outputs[0];
    g.nodes.push_back(n);
  }
  g.outputs.push_back(pid);
  ResolveSchemas(g);
  InferShapes(g);
  return g;
}

Tensor LocalFeed(const Plan& plan, size_t input_index, int position, const Tensor& feed) {
  const Placement& P = plan.options.placement;
  int id = plan.logical.inputs[input_index];
  const NdSbp& s = plan.value_sbp[static_cast<size_t>(id)];
  std::vector<Range> block = LocalBlock(feed.shape(), s, P.hierarchy, P.Coord(position));
  Shape shape;
  std::vector<int64_t> start;
  for (const Range& r : block) { shape.push_back(r.size); start.push_back(r.start); }
  if (shape == feed.shape()) return feed;
  Tensor t = Tensor::Uninitialized(feed.dtype(), shape);
  CopyBlock(feed, start, t, std::vector<int64_t>(shape.size(), 0), shape);
  return t;
}

}  // namespace oneflow
