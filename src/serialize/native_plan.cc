// Writing and reading the native format's plan table: placement and per-value n-D SBP.
#include "serialize/native_plan.h"

#include <cstring>
#include <set>

namespace oneflow {
namespace {

ofm::SbpKind ToFile(Sbp::Kind k) {
  switch (k) {
    case Sbp::kSplit: return ofm::SbpKind::Split;
    case Sbp::kBroadcast: return ofm::SbpKind::Broadcast;
    case Sbp::kPartialSum: return ofm::SbpKind::PartialSum;
  }
  return ofm::SbpKind::Broadcast;
}

// Empty when `p` is a placement a file may hold, else the reason. Shared by writer and reader so
// that the writer never produces a file its reader refuses.
std::string PlacementProblem(const Placement& p) {
  if (p.device != "cpu" && p.device != "cuda") return "unknown device type '" + p.device + "' (cpu or cuda)";
  if (p.devices.empty()) return "no ranks";
  if (p.hierarchy.empty()) return "an empty hierarchy";
  std::set<int> seen;
  for (int d : p.devices) {
    if (d < 0) return "negative rank " + std::to_string(d);
    if (!seen.insert(d).second) return "rank " + std::to_string(d) + " listed twice";
  }
  // The product, stopped before it would exceed the count: an entry is checked against what is
  // left of the count before multiplying, so a huge entry (2^62) cannot overflow it.
  const int64_t count = static_cast<int64_t>(p.devices.size());
  int64_t product = 1;
  for (int64_t h : p.hierarchy) {
    if (h < 1) return "hierarchy entry " + std::to_string(h) + " (must be >= 1)";
    if (h > count / product) {
      product = count + 1;
      break;
    }
    product *= h;
  }
  if (product != count)
    return "a hierarchy whose product is not its " + std::to_string(p.devices.size()) + " ranks";
  return {};
}

// Empty when `sbp` may annotate `v` on a placement with `ndim` axes (-1: no placement), else why.
std::string SbpProblem(const Value& v, const NdSbp& sbp, int ndim) {
  if (sbp.empty()) return "an empty SBP";
  if (ndim >= 0 && static_cast<int>(sbp.size()) != ndim)
    return std::to_string(sbp.size()) + " SBP entries, but the placement has " + std::to_string(ndim) + " axes";
  for (const Sbp& s : sbp) {
    if (!s.is_split()) continue;
    if (s.axis < 0 || (v.type.has_rank && s.axis >= static_cast<int>(v.type.dims.size())))
      return "split axis " + std::to_string(s.axis) + " out of range for a rank-" +
             (v.type.has_rank ? std::to_string(v.type.dims.size()) : std::string("?")) + " tensor";
  }
  return {};
}

}  // namespace

flatbuffers::Offset<ofm::Plan> EncodePlan(flatbuffers::FlatBufferBuilder& b, const Graph& g) {
  const Placement& P = g.placement;
  std::vector<flatbuffers::Offset<ofm::Placement>> placements;
  if (!P.empty()) {
    const std::string why = PlacementProblem(P);
    OF_REQUIRE(why.empty(), "graph placement ", P.ToString(), " has ", why);
    placements.push_back(ofm::CreatePlacement(b, b.CreateString(P.device), b.CreateVector(P.devices),
                                              b.CreateVector(P.hierarchy)));
  }
  std::vector<flatbuffers::Offset<ofm::SbpAnnotation>> annotations;
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.sbp.empty()) continue;
    const std::string why = SbpProblem(v, v.sbp, P.empty() ? -1 : P.ndim());
    OF_REQUIRE(why.empty(), "value '", v.name, "' has SBP ", NdSbpToString(v.sbp), ": ", why);
    std::vector<flatbuffers::Offset<ofm::Sbp>> entries;
    for (const Sbp& s : v.sbp) entries.push_back(ofm::CreateSbp(b, ToFile(s.kind), s.is_split() ? s.axis : 0));
    annotations.push_back(ofm::CreateSbpAnnotation(b, static_cast<int32_t>(i), P.empty() ? -1 : 0, b.CreateVector(entries)));
  }
  if (placements.empty() && annotations.empty()) return 0;
  // node_placements stays empty: every node runs on placements[0].
  return ofm::CreatePlan(b, 0, b.CreateVector(placements), b.CreateVector(annotations));
}

void DecodePlan(const ofm::Plan* plan, const std::string& label, Graph& g) {
  if (!plan) return;
  auto bad = [&](const auto&... args) { Fail(ErrorCode::kInvalidModel, "native model ", label, ": plan: ", args...); };
  const size_t num_placements = plan->placements() ? plan->placements()->size() : 0;
  OF_CHECK(num_placements <= 1, kUnsupported, "native model ", label, ": the plan has ", num_placements,
           " placements; this build keeps one placement per graph");
  if (num_placements == 1) {
    const ofm::Placement* fp = plan->placements()->Get(0);
    Placement p;
    p.device = fp->device_type() ? fp->device_type()->str() : std::string();
    if (fp->ranks()) p.devices.assign(fp->ranks()->begin(), fp->ranks()->end());
    if (fp->hierarchy() && fp->hierarchy()->size()) {
      // memcpy: the Verifier checks only 4-byte alignment, so a crafted file's longs may be misaligned.
      p.hierarchy.resize(fp->hierarchy()->size());
      std::memcpy(p.hierarchy.data(), fp->hierarchy()->Data(), p.hierarchy.size() * sizeof(int64_t));
    }
    const std::string why = PlacementProblem(p);
    if (!why.empty()) bad("placement 0 has ", why);
    g.placement = std::move(p);
  }
  if (const auto* np = plan->node_placements()) {
    if (np->size() != 0 && np->size() != g.nodes.size())
      bad("node_placements has ", np->size(), " entries for ", g.nodes.size(), " nodes");
    for (int k : *np)
      if (k < 0 || static_cast<size_t>(k) >= num_placements)
        bad("a node placement index ", k, " is out of range (", num_placements, " placements)");
  }
  if (!plan->annotations()) return;
  std::vector<bool> seen(g.values.size(), false);
  for (const ofm::SbpAnnotation* a : *plan->annotations()) {
    const int id = a->value();
    if (id < 0 || static_cast<size_t>(id) >= g.values.size())
      bad("an SBP annotation names value ", id, ", out of range (", g.values.size(), " values)");
    Value& v = g.values[static_cast<size_t>(id)];
    const std::string what = "the SBP annotation of value '" + v.name + "'";
    if (seen[static_cast<size_t>(id)]) bad("value '", v.name, "' is annotated twice");
    seen[static_cast<size_t>(id)] = true;
    const int pl = a->placement();
    if (pl < -1 || pl >= static_cast<int>(num_placements))
      bad(what, " names placement ", pl, ", out of range (", num_placements, " placements)");
    NdSbp sbp;
    if (a->sbp())
      for (const ofm::Sbp* s : *a->sbp()) {
        switch (s->kind()) {
          case ofm::SbpKind::Split: sbp.push_back(Sbp::S(s->axis())); break;
          case ofm::SbpKind::Broadcast: sbp.push_back(Sbp::B()); break;
          case ofm::SbpKind::PartialSum: sbp.push_back(Sbp::P()); break;
          default: bad(what, " has unknown SBP kind ", static_cast<int>(s->kind()));
        }
      }
    const std::string why = SbpProblem(v, sbp, pl < 0 ? -1 : g.placement.ndim());
    if (!why.empty()) bad(what, " has ", why);
    v.sbp = std::move(sbp);
  }
}

}  // namespace oneflow
