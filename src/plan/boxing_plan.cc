// Boxing planning: the per-placement-axis steps (and their cost) that turn one n-D SBP into
// another, following the table in docs/distributed.md.
#include "base/error.h"
#include "plan/plan.h"

namespace oneflow {
namespace {

// Tensor axes a 1-D SBP touches (its split axis).
bool Touches(const Sbp& s, int axis) { return s.is_split() && s.axis == axis; }

// A step on placement axis k is safe when no inner axis (j > k) splits a tensor axis the step
// splits or unsplits: inner splits nest inside outer ones, so changing an outer split under an
// inner one would reorder the pieces.
bool Safe(const NdSbp& cur, size_t k, const Sbp& to) {
  for (size_t j = k + 1; j < cur.size(); ++j) {
    if (!cur[j].is_split()) continue;
    if (Touches(cur[k], cur[j].axis) || Touches(to, cur[j].axis)) return false;
  }
  return true;
}

const char* KindOf(const Sbp& from, const Sbp& to) {
  if (from.is_partial()) return to.is_broadcast() ? "all_reduce" : "reduce_scatter";
  if (from.is_split()) return to.is_broadcast() ? "all_gather" : to.is_split() ? "all_to_all" : "zero_pad";
  return to.is_split() ? "slice" : "zero_fill";  // from B
}

double LocalBytes(const Shape& shape, DType dtype, const NdSbp& sbp, const Placement& p) {
  // Position 0 holds the largest piece under the balanced rule: the busiest device.
  return static_cast<double>(NumElements(LocalShape(shape, sbp, p.hierarchy, p.Coord(0)))) *
         static_cast<double>(DTypeSize(dtype));
}

}  // namespace

std::vector<BoxingStep> PlanBoxing(const Shape& shape, DType dtype, const NdSbp& from, const NdSbp& to,
                                   const Placement& placement, const CostModel& cost) {
  OF_ASSERT(from.size() == to.size() && static_cast<int>(from.size()) == placement.ndim());
  std::vector<BoxingStep> steps;
  NdSbp cur = from;
  auto emit = [&](size_t k, const Sbp& target) {
    const int64_t n = placement.hierarchy[k];
    NdSbp next = cur;
    next[k] = target;
    if (n > 1) {  // on a 1-device axis every SBP holds the same bytes: nothing to do
      BoxingStep s;
      s.axis = static_cast<int>(k);
      s.from = cur[k];
      s.to = target;
      s.before = cur;
      s.after = next;
      s.kind = KindOf(cur[k], target);
      const double frac = static_cast<double>(n - 1) / static_cast<double>(n);
      const double in_bytes = LocalBytes(shape, dtype, cur, placement);
      const double out_bytes = LocalBytes(shape, dtype, next, placement);
      int ring_steps = 0;
      if (s.kind == "all_reduce") { s.bytes = 2 * frac * in_bytes; ring_steps = static_cast<int>(2 * (n - 1)); }
      else if (s.kind == "all_gather") { s.bytes = frac * out_bytes; ring_steps = static_cast<int>(n - 1); }
      else if (s.kind == "reduce_scatter") { s.bytes = frac * in_bytes; ring_steps = static_cast<int>(n - 1); }
      else if (s.kind == "all_to_all") { s.bytes = frac * in_bytes; ring_steps = static_cast<int>(n - 1); }
      s.seconds = ring_steps * cost.link_latency_s + s.bytes / cost.link_bytes_per_s +
                  (s.bytes == 0 ? out_bytes / cost.memory_bytes_per_s : 0.0);
      steps.push_back(s);
    }
    cur = next;
  };
  // A split placed on an inner axis must not block an outer axis still to be changed.
  auto blocks_pending_outer = [&](size_t k, const Sbp& target) {
    if (!target.is_split()) return false;
    for (size_t i = 0; i < k; ++i)
      if (cur[i] != to[i] && (Touches(cur[i], target.axis) || Touches(to[i], target.axis))) return true;
    return false;
  };
  for (int guard = 0; cur != to; ++guard) {
    OF_ASSERT(guard < 8 * static_cast<int>(cur.size()) + 8);
    bool progressed = false;
    for (size_t k = cur.size(); k-- > 0;) {
      if (cur[k] == to[k] || !Safe(cur, k, to[k]) || blocks_pending_outer(k, to[k])) continue;
      emit(k, to[k]);
      progressed = true;
      break;
    }
    if (progressed) continue;
    // The outermost pending axis is blocked by an inner split of a tensor axis it touches: gather
    // the innermost such split first (always safe: nothing inside it splits that axis).
    size_t k = 0;
    while (cur[k] == to[k]) ++k;
    for (size_t j = cur.size(); j-- > k + 1 && !progressed;) {
      if (cur[j].is_split() && (Touches(cur[k], cur[j].axis) || Touches(to[k], cur[j].axis))) {
        emit(j, Sbp::B());
        progressed = true;
      }
    }
    OF_ASSERT(progressed);
  }
  return steps;
}

}  // namespace oneflow
