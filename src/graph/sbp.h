// SBP (split / broadcast / partial-sum): how a global tensor's logical value maps onto the
// devices of a placement, one entry per placement axis, and the per-device slice rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "graph/placement.h"

namespace oneflow {

struct Sbp {
  enum Kind : uint8_t { kSplit, kBroadcast, kPartialSum };
  Kind kind = kBroadcast;
  int axis = 0;  // the tensor axis, for kSplit

  static Sbp S(int a) { return Sbp{kSplit, a}; }
  static Sbp B() { return Sbp{kBroadcast, 0}; }
  static Sbp P() { return Sbp{kPartialSum, 0}; }
  bool is_split() const { return kind == kSplit; }
  bool is_broadcast() const { return kind == kBroadcast; }
  bool is_partial() const { return kind == kPartialSum; }
  bool operator==(const Sbp& o) const { return kind == o.kind && (kind != kSplit || axis == o.axis); }
  bool operator!=(const Sbp& o) const { return !(*this == o); }
  bool operator<(const Sbp& o) const { return kind != o.kind ? kind < o.kind : (kind == kSplit && axis < o.axis); }
  std::string ToString() const;  // "S(0)", "B", "P"
};

// One Sbp per placement axis.
using NdSbp = std::vector<Sbp>;

Sbp ParseSbp(const std::string& text);       // "S(1)", "B", "P"; throws kInvalidArgument
NdSbp ParseNdSbp(const std::string& text);   // "S(0)", "(S(0),B)", "[S(0), B]", "S(0),B"
std::string NdSbpToString(const NdSbp& s);   // "S(0)" for 1-D, "(S(0),B)" for n-D
NdSbp AllBroadcast(int ndim);

// The uneven split rule (balanced): `n` elements over `parts` pieces give piece i
// n/parts + (i < n%parts ? 1 : 0) elements starting at i*(n/parts) + min(i, n%parts), so the
// first n%parts pieces hold one extra element. n-D SBP splits nest in placement-axis order: a
// tensor axis split on placement axes 0 and 1 is first cut over axis 0, then each piece over axis 1.
struct Range {
  int64_t start = 0;
  int64_t size = 0;
};
Range BalancedPart(int64_t n, int64_t parts, int64_t i);

// The block of the logical tensor held by the device at `coord` (per tensor axis: start, size).
// Partial-sum and broadcast entries leave the axis whole. Requires FitsShape.
std::vector<Range> LocalBlock(const Shape& logical, const NdSbp& sbp, const std::vector<int64_t>& hierarchy,
                              const std::vector<int64_t>& coord);
Shape LocalShape(const Shape& logical, const NdSbp& sbp, const std::vector<int64_t>& hierarchy,
                 const std::vector<int64_t>& coord);

// Empty when `sbp` fits a tensor of `logical` shape on `hierarchy`, else the reason (an axis out of
// range, a dim with fewer elements than pieces, a wrong number of entries).
std::string SbpMisfit(const Shape& logical, const NdSbp& sbp, const std::vector<int64_t>& hierarchy);
// Throws kInvalidArgument naming `what` and the reason when the SBP does not fit.
void CheckSbpFits(const std::string& what, const Shape& logical, const NdSbp& sbp, const Placement& placement);

// Copies the block `extent` starting at `src_start` in `src` to `dst_start` in `dst` (same rank and
// dtype; row-major). The building block of slicing, gathering and all-to-all repacking.
void CopyBlock(const Tensor& src, const std::vector<int64_t>& src_start, Tensor& dst,
               const std::vector<int64_t>& dst_start, const Shape& extent);

}  // namespace oneflow
