// Shape logic shared by spatial op schemas and kernels: Resize output sizes, Einsum parsing/planning.
#include "graph/ops/spatial_util.h"

#include <algorithm>
#include <cmath>

namespace oneflow {
namespace {

// A scaled dimension as a size: refused when it does not fit a tensor dimension (2^40), which
// also keeps the double -> int64 conversion defined.
int64_t ScaledDim(double v, const std::string& node) {
  constexpr double kMaxDim = 1099511627776.0;  // 2^40
  OF_REQUIRE(std::isfinite(v) && v < kMaxDim, node, ": the resized dimension (", v, ") is too large");
  return static_cast<int64_t>(v);
}

}  // namespace

void ComputeResizeOutput(const AttrMap& attrs, int opset, const Shape& in, const Tensor* scales, const Tensor* sizes,
                         const std::string& node, std::vector<double>* scale_out, std::vector<int64_t>* out_shape) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (opset >= 18 && attrs.has("axes")) {
    for (int64_t a : attrs.GetInts("axes")) {
      OF_REQUIRE(a >= -r && a < r, node, ": axis ", a, " is out of range for rank ", r);
      a = a < 0 ? a + r : a;
      for (int64_t b : axes) OF_REQUIRE(a != b, node, ": axes contains ", a, " twice");
      axes.push_back(a);
    }
  } else {
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  }
  const size_t na = axes.size();
  scale_out->assign(static_cast<size_t>(r), 1.0);
  out_shape->assign(in.begin(), in.end());
  if (scales) {
    OF_REQUIRE(static_cast<size_t>(scales->numel()) == na, node, ": scales has ", scales->numel(),
               " values, expected ", na);
    for (size_t i = 0; i < na; ++i) {
      // Scales are float32 in the model; the product is taken in double like the reference does.
      double s = scales->GetAsDouble(static_cast<int64_t>(i));
      OF_REQUIRE(s > 0 && std::isfinite(s), node, ": scales must be positive, got ", s);
      (*scale_out)[axes[i]] = s;
      (*out_shape)[axes[i]] = ScaledDim(std::floor(s * static_cast<double>(in[axes[i]])), node);
    }
    return;
  }
  OF_REQUIRE(sizes != nullptr, node, ": one of scales and sizes is required");
  OF_REQUIRE(static_cast<size_t>(sizes->numel()) == na, node, ": sizes has ", sizes->numel(), " values, expected ",
             na);
  const std::string policy = opset >= 18 ? attrs.GetString("keep_aspect_ratio_policy", "stretch") : "stretch";
  OF_REQUIRE(policy == "stretch" || policy == "not_larger" || policy == "not_smaller", node,
             ": unsupported keep_aspect_ratio_policy '", policy, "'");
  double keep = policy == "not_larger" ? INFINITY : -INFINITY;
  for (size_t i = 0; i < na; ++i) {
    int64_t sz = sizes->GetAsInt64(static_cast<int64_t>(i));
    OF_REQUIRE(sz >= 0, node, ": sizes must be non-negative, got ", sz);
    const int64_t n = in[axes[i]];
    double s = n > 0 ? static_cast<double>(sz) / static_cast<double>(n) : 1.0;
    (*scale_out)[axes[i]] = s;
    (*out_shape)[axes[i]] = sz;
    keep = policy == "not_larger" ? std::min(keep, s) : std::max(keep, s);
  }
  if (policy == "stretch") return;
  for (int64_t a : axes) {
    (*scale_out)[a] = keep;
    (*out_shape)[a] = ScaledDim(keep * static_cast<double>(in[a]) + 0.5, node);  // round half up
  }
}

static int EinsumLabel(char c, const std::string& node) {
  OF_REQUIRE((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), node, ": invalid character '", c,
             "' in einsum equation");
  return static_cast<int>(c);
}

// Parses one comma-separated term; "..." becomes -1.
static std::vector<int> ParseEinsumTerm(const std::string& t, const std::string& node) {
  std::vector<int> labels;
  bool ellipsis = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '.') {
      OF_REQUIRE(t.compare(i, 3, "...") == 0, node, ": malformed ellipsis in einsum equation");
      OF_REQUIRE(!ellipsis, node, ": an einsum term may contain only one ellipsis");
      ellipsis = true;
      labels.push_back(-1);
      i += 2;
    } else {
      labels.push_back(EinsumLabel(t[i], node));
    }
  }
  return labels;
}

EinsumSpec ParseEinsum(const std::string& equation, size_t num_inputs, const std::string& node) {
  std::string eq;
  for (char c : equation)
    if (c != ' ' && c != '\t') eq += c;
  EinsumSpec spec;
  size_t arrow = eq.find("->");
  std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    spec.inputs.push_back(ParseEinsumTerm(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), node));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  OF_REQUIRE(spec.inputs.size() == num_inputs, node, ": einsum equation '", equation, "' names ", spec.inputs.size(),
             " inputs but the node has ", num_inputs);
  if (arrow != std::string::npos) {
    spec.explicit_output = true;
    spec.output = ParseEinsumTerm(eq.substr(arrow + 2), node);
    for (size_t i = 0; i < spec.output.size(); ++i)
      for (size_t j = i + 1; j < spec.output.size(); ++j)
        OF_REQUIRE(spec.output[i] != spec.output[j], node, ": einsum output repeats a label");
  }
  return spec;
}

EinsumPlan PlanEinsum(const EinsumSpec& spec, const std::vector<std::vector<int64_t>>& shapes, const std::string& node) {
  EinsumPlan plan;
  // How many dims the ellipsis stands for: the most any input gives it (broadcast, right-aligned).
  int64_t ell = 0;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const auto& term = spec.inputs[i];
    int64_t letters = 0;
    bool has_ell = false;
    for (int l : term) {
      if (l < 0) has_ell = true;
      else ++letters;
    }
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    if (has_ell) {
      OF_REQUIRE(rank >= letters, node, ": input ", i, " has rank ", rank, " but its einsum term needs at least ",
                 letters);
      ell = std::max(ell, rank - letters);
    } else {
      OF_REQUIRE(rank == letters, node, ": input ", i, " has rank ", rank, " but its einsum term has ", letters,
                 " labels");
    }
  }
  plan.label_size.assign(static_cast<size_t>(kEinsumEllipsisLabel + ell), -2);  // -2: label unused
  std::vector<int> count(plan.label_size.size(), 0);
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const auto& term = spec.inputs[i];
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    const int64_t e = rank - (static_cast<int64_t>(term.size()) - (std::count(term.begin(), term.end(), -1) ? 1 : 0));
    std::vector<int> labels;
    for (int l : term) {
      if (l >= 0) {
        labels.push_back(l);
        continue;
      }
      for (int64_t k = 0; k < e; ++k) labels.push_back(static_cast<int>(kEinsumEllipsisLabel + ell - e + k));
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      const int l = labels[d];
      const int64_t n = shapes[i][d];
      int64_t& s = plan.label_size[l];
      if (std::find(labels.begin(), labels.begin() + d, l) == labels.begin() + d) ++count[l];
      // Ellipsis dims broadcast (size 1 stretches); letter dims must agree.
      if (s == -2 || (s == 1 && l >= kEinsumEllipsisLabel)) s = n;
      else if (n >= 0 && s >= 0 && n != s && !(l >= kEinsumEllipsisLabel && n == 1))
        Fail(ErrorCode::kInvalidArgument, node, ": einsum dim mismatch for label '",
             l >= kEinsumEllipsisLabel ? std::string("...") : std::string(1, static_cast<char>(l)), "': ", s, " vs ", n);
      else if (s < 0 && n >= 0 && !(l >= kEinsumEllipsisLabel && n == 1)) s = n;
    }
    plan.inputs.push_back(labels);
  }
  if (spec.explicit_output) {
    bool out_has_ell = false;
    for (int l : spec.output) {
      if (l < 0) {
        out_has_ell = true;
        for (int64_t k = 0; k < ell; ++k) plan.output.push_back(static_cast<int>(kEinsumEllipsisLabel + k));
        continue;
      }
      OF_REQUIRE(plan.label_size[l] != -2, node, ": einsum output label '", static_cast<char>(l),
                 "' does not appear in any input");
      plan.output.push_back(l);
    }
    OF_REQUIRE(out_has_ell || ell == 0, node, ": einsum output must contain '...' when the inputs do");
  } else {
    // Implicit output: the ellipsis dims, then the labels seen exactly once, in alphabetical order.
    for (int64_t k = 0; k < ell; ++k) plan.output.push_back(static_cast<int>(kEinsumEllipsisLabel + k));
    for (int l = 0; l < kEinsumEllipsisLabel; ++l)
      if (count[l] == 1) {
        int occurrences = 0;
        for (const auto& labels : plan.inputs) occurrences += static_cast<int>(std::count(labels.begin(), labels.end(), l));
        if (occurrences == 1) plan.output.push_back(l);
      }
  }
  for (int l : plan.output) plan.out_shape.push_back(plan.label_size[l]);
  return plan;
}

}  // namespace oneflow
