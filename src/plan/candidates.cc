// Candidate n-D signatures per node (from the op registry's 1-D rules) and their compute cost.
#include <set>

#include "base/error.h"
#include "plan/plan_internal.h"
#include "graph/op_schema.h"
#include "kernels/kernel.h"

namespace oneflow {

double EstimateFlops(const Node& n, const std::vector<Shape>& in, const std::vector<Shape>& out) {
  if (n.schema && n.schema->flops) return n.schema->flops(n.attrs, in, out);
  return out.empty() ? 0.0 : static_cast<double>(NumElements(out[0]));  // about one operation per element
}

std::vector<Candidate> NodeCandidates(const Graph& g, const Node& n, const PlanOptions& o, bool data, bool manual) {
  const Placement& P = o.placement;
  const int nd = P.ndim();
  const size_t ni = n.inputs.size(), no = n.outputs.size();
  std::vector<Shape> in_shapes(ni), out_shapes(no);
  SbpContext ctx;
  ctx.attrs = &n.attrs;
  ctx.devices = P.size();
  for (size_t i = 0; i < ni; ++i) {
    const Value* v = n.has_input(i) ? &g.values[static_cast<size_t>(n.inputs[i])] : nullptr;
    if (v) in_shapes[i] = v->type.ToShape();
    ctx.inputs.push_back(v ? &in_shapes[i] : nullptr);
    ctx.values.push_back(v && v->constant.defined() ? &v->constant : nullptr);
  }
  for (size_t o2 = 0; o2 < no; ++o2) {
    const Value* v = n.has_output(o2) ? &g.values[static_cast<size_t>(n.outputs[o2])] : nullptr;
    if (v) out_shapes[o2] = v->type.ToShape();
    ctx.outputs.push_back(v ? &out_shapes[o2] : nullptr);
  }

  // 1-D signatures: the op's rule (if any) plus all-B, normalized to the node's arity.
  std::vector<SbpSignature> one;
  SbpSignature all_b{std::vector<Sbp>(ni, Sbp::B()), std::vector<Sbp>(no, Sbp::B())};
  one.push_back(all_b);
  if (n.schema && n.schema->sbp && P.size() > 1) {
    for (SbpSignature s : n.schema->sbp(ctx)) {
      if (s.in.size() > ni || s.out.size() != no) continue;
      s.in.resize(ni, Sbp::B());
      one.push_back(s);
    }
  }

  // n-D products, filtered by fit.
  std::vector<std::vector<size_t>> combos{{}};
  for (int k = 0; k < nd; ++k) {
    std::vector<std::vector<size_t>> next;
    for (const auto& c : combos)
      for (size_t s = 0; s < one.size(); ++s) {
        auto x = c;
        x.push_back(s);
        next.push_back(x);
      }
    combos.swap(next);
  }
  std::vector<Candidate> out;
  std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> seen;
  for (const auto& combo : combos) {
    Candidate c;
    c.in.assign(ni, NdSbp());
    c.out.assign(no, NdSbp());
    bool fits = true;
    for (size_t i = 0; i < ni && fits; ++i) {
      if (!n.has_input(i)) continue;
      for (int k = 0; k < nd; ++k) c.in[i].push_back(one[combo[static_cast<size_t>(k)]].in[i]);
      fits = SbpMisfit(in_shapes[i], c.in[i], P.hierarchy).empty();
    }
    for (size_t j = 0; j < no && fits; ++j) {
      if (!n.has_output(j)) continue;
      for (int k = 0; k < nd; ++k) c.out[j].push_back(one[combo[static_cast<size_t>(k)]].out[j]);
      fits = SbpMisfit(out_shapes[j], c.out[j], P.hierarchy).empty();
    }
    if (!fits) continue;
    c.replicated = std::all_of(combo.begin(), combo.end(), [](size_t s) { return s == 0; });
    std::pair<std::vector<int64_t>, std::vector<int64_t>> key;
    for (const auto& s : c.in)
      for (const Sbp& e : s) key.first.push_back(e.kind * 100 + e.axis);
    for (const auto& s : c.out)
      for (const Sbp& e : s) key.second.push_back(e.kind * 100 + e.axis);
    if (!seen.insert(key).second) continue;
    out.push_back(std::move(c));
  }

  // Mode constraints on weights: constants, and a training graph's weights fed as inputs.
  auto keep = [&](const Candidate& c, bool strict_annotations) {
    for (size_t i = 0; i < ni; ++i) {
      if (!n.has_input(i)) continue;
      const Value& v = g.values[static_cast<size_t>(n.inputs[i])];
      if (!v.constant.defined() && !v.is_parameter) continue;
      if (data && c.in[i] != AllBroadcast(nd)) return false;
      if (manual && strict_annotations && !v.sbp.empty() && c.in[i] != v.sbp) return false;
    }
    return true;
  };
  std::vector<Candidate> kept;
  for (const Candidate& c : out)
    if (keep(c, true)) kept.push_back(c);
  if (kept.empty())  // annotations no signature honours: they only steer where possible
    for (const Candidate& c : out)
      if (keep(c, false)) kept.push_back(c);
  OF_ASSERT(!kept.empty());

  // Costs on the busiest device (position 0 holds the largest pieces). A view (Reshape, Identity,
  // ...) aliases its input in the executor: it moves no bytes and computes nothing, so charging
  // it by its size would favour signatures that merely make views smaller (e.g. a weight gradient
  // split S(1) instead of left as a full-size partial sum).
  const std::vector<int64_t> c0 = P.Coord(0);
  const bool is_view = n.schema && n.schema->view;  // OpSchema::View
  for (Candidate& c : kept) {
    std::vector<Shape> li(ni), lo(no);
    double bytes = 0;
    for (size_t i = 0; i < ni; ++i) {
      if (!n.has_input(i)) continue;
      const Value& v = g.values[static_cast<size_t>(n.inputs[i])];
      li[i] = LocalShape(in_shapes[i], c.in[i], P.hierarchy, c0);
      double b = static_cast<double>(NumElements(li[i]) * static_cast<int64_t>(DTypeSize(v.type.dtype)));
      // The memory traffic counts the bytes the kernel reads: none of an input it reads only the
      // type of (OpSchema::TypeOnlyInput, e.g. Shape's data).
      if (!n.schema || !n.schema->ReadsOnlyTypeOf(i)) bytes += b;
      if (v.is_parameter) c.param_bytes += b;
    }
    for (size_t j = 0; j < no; ++j) {
      if (!n.has_output(j)) continue;
      lo[j] = LocalShape(out_shapes[j], c.out[j], P.hierarchy, c0);
      double b = static_cast<double>(NumElements(lo[j]) *
                                     static_cast<int64_t>(DTypeSize(g.values[static_cast<size_t>(n.outputs[j])].type.dtype)));
      bytes += b;
      c.out_bytes += b;
    }
    c.flops = is_view ? 0.0 : EstimateFlops(n, li, lo);
    c.seconds = is_view ? 0.0 : c.flops / o.cost.flops_per_s + bytes / o.cost.memory_bytes_per_s;
  }
  return kept;
}

}  // namespace oneflow
