// SBP parsing/printing, the balanced split rule and block copies between local and logical tensors.
#include "graph/sbp.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/error.h"

namespace oneflow {

std::string Sbp::ToString() const {
  switch (kind) {
    case kSplit: return "S(" + std::to_string(axis) + ")";
    case kBroadcast: return "B";
    case kPartialSum: return "P";
  }
  return "?";
}

static std::string Trim(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

Sbp ParseSbp(const std::string& text) {
  std::string t = Trim(text);
  if (t == "B") return Sbp::B();
  if (t == "P") return Sbp::P();
  if (t.size() >= 4 && t[0] == 'S' && t[1] == '(' && t.back() == ')') {
    std::string num = Trim(t.substr(2, t.size() - 3));
    bool digits = !num.empty() && num.size() < 4 &&
                  std::all_of(num.begin(), num.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (digits) return Sbp::S(std::stoi(num));
  }
  Fail(ErrorCode::kInvalidArgument, "bad SBP '", text, "' (expected S(axis), B or P)");
}

NdSbp ParseNdSbp(const std::string& text) {
  std::string t = Trim(text);
  if (t.size() >= 2 && ((t.front() == '(' && t.back() == ')') || (t.front() == '[' && t.back() == ']')))
    t = t.substr(1, t.size() - 2);
  NdSbp out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= t.size(); ++i) {
    if (i < t.size() && t[i] == '(') ++depth;
    if (i < t.size() && t[i] == ')') --depth;
    if (i == t.size() || (t[i] == ',' && depth == 0)) {
      out.push_back(ParseSbp(t.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

std::string NdSbpToString(const NdSbp& s) {
  if (s.size() == 1) return s[0].ToString();
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + s[i].ToString();
  return out + ")";
}

NdSbp AllBroadcast(int ndim) { return NdSbp(static_cast<size_t>(ndim), Sbp::B()); }

Range BalancedPart(int64_t n, int64_t parts, int64_t i) {
  int64_t base = n / parts, rem = n % parts;
  return Range{i * base + std::min(i, rem), base + (i < rem ? 1 : 0)};
}

std::vector<Range> LocalBlock(const Shape& logical, const NdSbp& sbp, const std::vector<int64_t>& hierarchy,
                              const std::vector<int64_t>& coord) {
  std::vector<Range> block(logical.size());
  for (size_t d = 0; d < logical.size(); ++d) block[d] = Range{0, logical[d]};
  for (size_t k = 0; k < sbp.size(); ++k) {
    if (!sbp[k].is_split()) continue;
    Range& r = block[static_cast<size_t>(sbp[k].axis)];
    Range part = BalancedPart(r.size, hierarchy[k], coord[k]);
    r = Range{r.start + part.start, part.size};
  }
  return block;
}

Shape LocalShape(const Shape& logical, const NdSbp& sbp, const std::vector<int64_t>& hierarchy,
                 const std::vector<int64_t>& coord) {
  std::vector<Range> block = LocalBlock(logical, sbp, hierarchy, coord);
  Shape s(block.size());
  for (size_t d = 0; d < block.size(); ++d) s[d] = block[d].size;
  return s;
}

std::string SbpMisfit(const Shape& logical, const NdSbp& sbp, const std::vector<int64_t>& hierarchy) {
  if (sbp.size() != hierarchy.size())
    return StrCat(NdSbpToString(sbp), " has ", sbp.size(), " entries but the placement has ", hierarchy.size(),
                  " axes");
  Shape extent = logical;
  for (size_t k = 0; k < sbp.size(); ++k) {
    if (!sbp[k].is_split()) continue;
    int a = sbp[k].axis;
    if (a < 0 || a >= static_cast<int>(logical.size()))
      return StrCat(sbp[k].ToString(), " names axis ", a, " of a rank-", logical.size(), " tensor ",
                    ShapeToString(logical));
    // The smallest piece after nesting: every device must get at least one element.
    int64_t smallest = extent[static_cast<size_t>(a)] / hierarchy[k];
    if (smallest < 1)
      return StrCat(sbp[k].ToString(), " over ", hierarchy[k], " devices needs at least ", hierarchy[k],
                    " elements along axis ", a, " of ", ShapeToString(logical),
                    extent[static_cast<size_t>(a)] == logical[static_cast<size_t>(a)] ? "" : " (after the outer splits)",
                    ", there are ", extent[static_cast<size_t>(a)]);
    extent[static_cast<size_t>(a)] = smallest;
  }
  return "";
}

void CheckSbpFits(const std::string& what, const Shape& logical, const NdSbp& sbp, const Placement& placement) {
  std::string why = SbpMisfit(logical, sbp, placement.hierarchy);
  OF_REQUIRE(why.empty(), "SBP ", NdSbpToString(sbp), " of ", what, " does not fit placement ", placement.ToString(),
             ": ", why);
}

void CopyBlock(const Tensor& src, const std::vector<int64_t>& src_start, Tensor& dst,
               const std::vector<int64_t>& dst_start, const Shape& extent) {
  OF_ASSERT(src.dtype() == dst.dtype() && src.rank() == dst.rank() && static_cast<int64_t>(extent.size()) == src.rank());
  if (NumElements(extent) == 0) return;
  const size_t es = DTypeSize(src.dtype());
  const size_t rank = extent.size();
  if (rank == 0) {
    std::memcpy(dst.raw(), src.raw(), es);
    return;
  }
  // Row strides (in elements) of both tensors; the last axis is copied as one contiguous run.
  std::vector<int64_t> ss(rank, 1), ds(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) {
    ss[d] = ss[d + 1] * src.shape()[d + 1];
    ds[d] = ds[d + 1] * dst.shape()[d + 1];
  }
  const size_t run = static_cast<size_t>(extent[rank - 1]) * es;
  const char* sp = static_cast<const char*>(src.raw());
  char* dp = static_cast<char*>(dst.raw());
  std::vector<int64_t> idx(rank, 0);
  int64_t rows = ShapeProduct(extent, 0, rank - 1);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t so = 0, doff = 0;
    for (size_t d = 0; d < rank; ++d) {
      so += (src_start[d] + idx[d]) * ss[d];
      doff += (dst_start[d] + idx[d]) * ds[d];
    }
    std::memcpy(dp + doff * static_cast<int64_t>(es), sp + so * static_cast<int64_t>(es), run);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace oneflow
