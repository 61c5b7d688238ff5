// SBP signatures of the op families (elementwise, reductions, nn, normalization, tensor ops),
// attached to the registered schemas. Kept in one file beside the families rather than inside
// each Register call so the per-op gradient rules (another branch) and these merge cleanly.
#include <algorithm>

#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/sbp_rules.h"

namespace oneflow {
namespace {

using Sigs = std::vector<SbpSignature>;

// The input axis that output axis `k` of a broadcast result reads, or -1 when the input is
// broadcast along it (absent or of size 1 where the output is larger).
int64_t AlignedAxis(const Shape& in, const Shape& out, int64_t k) {
  int64_t a = k - (static_cast<int64_t>(out.size()) - static_cast<int64_t>(in.size()));
  if (a < 0 || (in[static_cast<size_t>(a)] == 1 && out[static_cast<size_t>(k)] != 1)) return -1;
  return a;
}

Sigs Elementwise(const SbpContext& c, Linear linear) {
  Sigs sigs;
  const Shape& out = c.out(0);
  size_t n = c.inputs.size();
  for (int64_t k = 0; k < static_cast<int64_t>(out.size()); ++k) {
    SbpSignature s;
    for (size_t i = 0; i < n; ++i) {
      if (!c.has_input(i)) { s.in.push_back(Sbp::B()); continue; }
      int64_t a = AlignedAxis(c.in(i), out, k);
      s.in.push_back(a < 0 ? Sbp::B() : Sbp::S(static_cast<int>(a)));
    }
    s.out = {Sbp::S(static_cast<int>(k))};
    sigs.push_back(s);
  }
  auto partial_on = [&](size_t which) {
    SbpSignature s;
    for (size_t i = 0; i < n; ++i) s.in.push_back(i == which ? Sbp::P() : Sbp::B());
    s.out = {Sbp::P()};
    sigs.push_back(s);
  };
  if (linear == Linear::kAll) {
    SbpSignature s;
    s.in.assign(n, Sbp::P());
    s.out = {Sbp::P()};
    sigs.push_back(s);
  } else if (linear == Linear::kAny) {
    for (size_t i = 0; i < n; ++i) partial_on(i);
  } else if (linear == Linear::kFirst) {
    partial_on(0);
  }
  return sigs;
}


// Maps input axis -> output axis of a shape-only op (Reshape, Flatten, Squeeze, Unsqueeze) where a
// split carries over unchanged: equal prefix products, and either equal sizes or the input axis
// is the leading factor of a run of output axes (or the reverse) that divides evenly by `devices`.
Sigs ShapeOnly(const SbpContext& c) {
  Sigs sigs;
  const Shape& in = c.in(0);
  const Shape& out = c.out(0);
  int64_t pi = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t po = 1;
    for (size_t j = 0; j < out.size(); ++j) {
      if (po == pi && in[i] > 1 && out[j] > 1) {
        bool same = in[i] == out[j];
        bool leading = (in[i] % out[j] == 0 || out[j] % in[i] == 0) &&
                       std::min(in[i], out[j]) % c.devices == 0;
        if (same || leading) {
          SbpSignature s;
          s.in.assign(c.inputs.size(), Sbp::B());
          s.in[0] = Sbp::S(static_cast<int>(i));
          s.out = {Sbp::S(static_cast<int>(j))};
          sigs.push_back(s);
        }
      }
      po *= out[j];
    }
    pi *= in[i];
  }
  SbpSignature p;
  p.in.assign(c.inputs.size(), Sbp::B());
  p.in[0] = Sbp::P();
  p.out = {Sbp::P()};
  sigs.push_back(p);
  return sigs;
}

Sigs Transpose(const SbpContext& c) {
  const Shape& in = c.in(0);
  std::vector<int64_t> perm = c.attrs->GetInts("perm", {});
  if (perm.empty())
    for (size_t i = in.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  Sigs sigs;
  for (size_t j = 0; j < perm.size(); ++j)
    sigs.push_back({{Sbp::S(static_cast<int>(perm[j]))}, {Sbp::S(static_cast<int>(j))}});
  sigs.push_back({{Sbp::P()}, {Sbp::P()}});
  return sigs;
}

// Reductions: a split on a kept axis stays a split (renumbered when keepdims=0); a split on a
// reduced axis becomes P for ReduceSum (the sum of partial sums); other reductions are not linear.
SbpFn ReduceRule(bool sum) {
  return [sum](const SbpContext& c) {
    Sigs sigs;
    const Shape& in = c.in(0);
    int64_t r = static_cast<int64_t>(in.size());
    std::vector<int64_t> axes = c.attrs->GetInts("axes", {});
    if (c.inputs.size() > 1 && c.has_input(1)) {
      if (!c.values[1]) return sigs;  // axes computed at run time: no split rules
      axes = c.values[1]->ToInt64Vector();
    }
    if (axes.empty()) {
      if (c.attrs->GetInt("noop_with_empty_axes", 0)) return sigs;
      for (int64_t a = 0; a < r; ++a) axes.push_back(a);
    }
    for (int64_t& a : axes) a = a < 0 ? a + r : a;
    bool keep = c.attrs->GetInt("keepdims", 1) != 0;
    int64_t out_axis = 0;
    for (int64_t a = 0; a < r; ++a) {
      bool reduced = std::find(axes.begin(), axes.end(), a) != axes.end();
      SbpSignature s;
      s.in.assign(c.inputs.size(), Sbp::B());
      s.in[0] = Sbp::S(static_cast<int>(a));
      if (!reduced) s.out = {Sbp::S(static_cast<int>(out_axis))};
      else if (sum) s.out = {Sbp::P()};
      if (!s.out.empty()) sigs.push_back(s);
      if (!reduced || keep) ++out_axis;
    }
    if (sum) {
      SbpSignature p;
      p.in.assign(c.inputs.size(), Sbp::B());
      p.in[0] = Sbp::P();
      p.out = {Sbp::P()};
      sigs.push_back(p);
    }
    return sigs;
  };
}

// MatMul [..,M,K] x [..,K,N]: data parallel (S(M),B)->S(M); column parallel (B,S(N))->S(N); row
// parallel (S(K),S(K))->P; batch axes split together; P times B stays P.
Sigs MatMul(const SbpContext& c) {
  Sigs sigs;
  const Shape& a = c.in(0);
  const Shape& b = c.in(1);
  const Shape& y = c.out(0);
  int ra = static_cast<int>(a.size()), rb = static_cast<int>(b.size()), ry = static_cast<int>(y.size());
  sigs.push_back({{Sbp::P(), Sbp::B()}, {Sbp::P()}});
  sigs.push_back({{Sbp::B(), Sbp::P()}, {Sbp::P()}});
  if (ra < 2 || rb < 2) return sigs;
  sigs.push_back({{Sbp::S(ra - 2), Sbp::B()}, {Sbp::S(ry - 2)}});
  sigs.push_back({{Sbp::B(), Sbp::S(rb - 1)}, {Sbp::S(ry - 1)}});
  sigs.push_back({{Sbp::S(ra - 1), Sbp::S(rb - 2)}, {Sbp::P()}});
  for (int k = 0; k < ry - 2; ++k) {
    Shape ya(y.begin(), y.end() - 2);
    Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
    int64_t ia = AlignedAxis(ab, ya, k), ib = AlignedAxis(bb, ya, k);
    if (ia < 0 && ib < 0) continue;
    sigs.push_back({{ia < 0 ? Sbp::B() : Sbp::S(static_cast<int>(ia)), ib < 0 ? Sbp::B() : Sbp::S(static_cast<int>(ib))},
                    {Sbp::S(k)}});
  }
  return sigs;
}

// Gemm: Y = alpha*op(A)*op(B) + beta*C with C broadcast to [M,N].
Sigs Gemm(const SbpContext& c) {
  Sigs sigs;
  bool ta = c.attrs->GetInt("transA", 0) != 0, tb = c.attrs->GetInt("transB", 0) != 0;
  const Shape& y = c.out(0);
  auto bias = [&](int out_axis) {
    if (!c.has_input(2)) return Sbp::B();
    int64_t a = AlignedAxis(c.in(2), y, out_axis);
    return a < 0 ? Sbp::B() : Sbp::S(static_cast<int>(a));
  };
  sigs.push_back({{Sbp::S(ta ? 1 : 0), Sbp::B(), bias(0)}, {Sbp::S(0)}});
  sigs.push_back({{Sbp::B(), Sbp::S(tb ? 0 : 1), bias(1)}, {Sbp::S(1)}});
  sigs.push_back({{Sbp::S(ta ? 0 : 1), Sbp::S(tb ? 1 : 0), Sbp::P()}, {Sbp::P()}});
  sigs.push_back({{Sbp::P(), Sbp::B(), Sbp::P()}, {Sbp::P()}});
  for (auto& s : sigs) s.in.resize(c.inputs.size());
  return sigs;
}

// Conv: data parallel over the batch; output-channel parallel (W and bias split on out channels).
Sigs Conv(const SbpContext& c) {
  Sigs sigs;
  size_t n = c.inputs.size();
  SbpSignature data{{Sbp::S(0), Sbp::B(), Sbp::B()}, {Sbp::S(0)}};
  data.in.resize(n);
  sigs.push_back(data);
  if (c.attrs->GetInt("group", 1) == 1) {
    SbpSignature oc{{Sbp::B(), Sbp::S(0), Sbp::S(0)}, {Sbp::S(1)}};
    oc.in.resize(n);
    sigs.push_back(oc);
  }
  return sigs;
}

// An op normalizing over `axis..rank-1` (LayerNorm, Softmax-13): any split before it carries over;
// every other input (scale, bias) stays B; every output is split the same way.
Sigs NormalizedFrom(const SbpContext& c, int64_t axis, bool only_before) {
  Sigs sigs;
  int64_t r = c.in_rank(0);
  if (axis < 0) axis += r;
  for (int64_t k = 0; k < r; ++k) {
    if (only_before ? k >= axis : k == axis) continue;
    SbpSignature s;
    s.in.assign(c.inputs.size(), Sbp::B());
    s.in[0] = Sbp::S(static_cast<int>(k));
    for (size_t o = 0; o < c.outputs.size(); ++o) s.out.push_back(Sbp::S(static_cast<int>(k)));
    sigs.push_back(s);
  }
  return sigs;
}

Sigs Concat(const SbpContext& c) {
  Sigs sigs;
  int64_t r = c.out_rank(0);
  int64_t axis = c.attrs->GetInt("axis");
  if (axis < 0) axis += r;
  for (int64_t k = 0; k < r; ++k) {
    if (k == axis) continue;
    SbpSignature s;
    s.in.assign(c.inputs.size(), Sbp::S(static_cast<int>(k)));
    s.out = {Sbp::S(static_cast<int>(k))};
    sigs.push_back(s);
  }
  SbpSignature p;
  p.in.assign(c.inputs.size(), Sbp::P());
  p.out = {Sbp::P()};
  sigs.push_back(p);
  return sigs;
}

// Gather: data split off the gathered axis, or indices split (their axes land at `axis..`).
Sigs Gather(const SbpContext& c) {
  Sigs sigs;
  int64_t r = c.in_rank(0), ri = c.in_rank(1);
  int64_t axis = c.attrs->GetInt("axis", 0);
  if (axis < 0) axis += r;
  for (int64_t k = 0; k < r; ++k) {
    if (k == axis) continue;
    int64_t o = k < axis ? k : k + ri - 1;
    sigs.push_back({{Sbp::S(static_cast<int>(k)), Sbp::B()}, {Sbp::S(static_cast<int>(o))}});
  }
  for (int64_t j = 0; j < ri; ++j)
    sigs.push_back({{Sbp::B(), Sbp::S(static_cast<int>(j))}, {Sbp::S(static_cast<int>(axis + j))}});
  sigs.push_back({{Sbp::P(), Sbp::B()}, {Sbp::P()}});
  return sigs;
}

// Gradient ops (ai.oneflow). Activation derivatives are linear in dY: P passes with the saved
// forward value B.
Sigs SoftmaxGradRule(const SbpContext& c) {
  Sigs sigs;
  int64_t r = c.in_rank(0), axis = c.attrs->GetInt("axis", -1);
  if (axis < 0) axis += r;
  for (int64_t k = 0; k < r; ++k)
    if (k != axis) sigs.push_back({{Sbp::S(static_cast<int>(k)), Sbp::S(static_cast<int>(k))}, {Sbp::S(static_cast<int>(k))}});
  return sigs;
}

// LayerNormalizationGrad(dY, X, Scale, Mean?, InvStdDev?) -> dX, dScale?, dB?: rows split before
// the normalized axis give split dX and partial dScale/dB.
Sigs LayerNormGradRule(const SbpContext& c) {
  Sigs sigs;
  int64_t r = c.in_rank(1), axis = c.attrs->GetInt("axis", -1);
  if (axis < 0) axis += r;
  for (int64_t k = 0; k < axis; ++k) {
    SbpSignature s;
    const Sbp split = Sbp::S(static_cast<int>(k));
    s.in = {split, split, Sbp::B()};
    for (size_t i = 3; i < c.inputs.size(); ++i) s.in.push_back(split);
    s.out = {split};
    for (size_t o = 1; o < c.outputs.size(); ++o) s.out.push_back(Sbp::P());
    sigs.push_back(s);
  }
  return sigs;
}

// ReduceSumToShape(X, shape): a split of X on an axis the sum keeps stays a split (the physical
// graph rewrites `shape` to the local one); on a summed axis it gives P; P passes through.
Sigs ReduceSumToShapeRule(const SbpContext& c) {
  Sigs sigs;
  const Shape& x = c.in(0);
  const Shape& y = c.out(0);
  const int64_t lead = static_cast<int64_t>(x.size()) - static_cast<int64_t>(y.size());
  for (int64_t k = 0; k < static_cast<int64_t>(x.size()); ++k) {
    const int64_t a = k - lead;
    const bool kept = a >= 0 && y[static_cast<size_t>(a)] == x[static_cast<size_t>(k)];
    sigs.push_back({{Sbp::S(static_cast<int>(k)), Sbp::B()}, {kept ? Sbp::S(static_cast<int>(a)) : Sbp::P()}});
  }
  sigs.push_back({{Sbp::P(), Sbp::B()}, {Sbp::P()}});
  return sigs;
}

}  // namespace

SbpFn ElementwiseSbp(Linear linear) {
  return [linear](const SbpContext& c) { return Elementwise(c, linear); };
}

void AttachSbpRules(OpRegistry& r) {
  // Elementwise: linear ops pass partial sums through. (The unary and binary rows of unary_ops.h
  // and binary_ops.h, and the variadic Min/Max/Sum/Mean, carry their own, from graph/ops/elementwise.cc.)
  r.SetSbp("", op::kIdentity, ElementwiseSbp(Linear::kAll));
  for (const char* op : {op::kPRelu, op::kWhere, op::kMod, op::kClip, op::kCast, op::kEqual, op::kLess, op::kGreater, op::kNot})
    r.SetSbp("", op, ElementwiseSbp(Linear::kNone));
  // Reductions.
  r.SetSbp("", op::kReduceSum, ReduceRule(true));
  for (const char* op : {op::kReduceMean, op::kReduceMax, op::kReduceMin, op::kReduceProd, op::kReduceL2, op::kReduceSumSquare})
    r.SetSbp("", op, ReduceRule(false));
  // nn.
  r.SetSbp("", op::kMatMul, MatMul);
  r.SetSbp("", op::kGemm, Gemm);
  r.SetSbp("", op::kConv, Conv);
  // Normalization: split only where the op does not normalize.
  r.SetSbp("", op::kLayerNormalization, [](const SbpContext& c) {
    return NormalizedFrom(c, c.attrs->GetInt("axis", -1), true);
  });
  for (const char* op : {op::kSoftmax, op::kLogSoftmax})
    r.SetSbp("", op, [](const SbpContext& c) { return NormalizedFrom(c, c.attrs->GetInt("axis", -1), false); });
  r.SetSbp("", op::kBatchNormalization, [](const SbpContext& c) {
    Sigs sigs;
    if (c.outputs.size() != 1) return sigs;  // training-mode statistics are not split here
    sigs.push_back({{Sbp::S(0), Sbp::B(), Sbp::B(), Sbp::B(), Sbp::B()}, {Sbp::S(0)}});
    sigs.push_back({{Sbp::S(1), Sbp::S(0), Sbp::S(0), Sbp::S(0), Sbp::S(0)}, {Sbp::S(1)}});
    return sigs;
  });
  // Tensor ops whose split mapping is clear.
  for (const char* op : {op::kReshape, op::kFlatten, op::kSqueeze, op::kUnsqueeze}) r.SetSbp("", op, ShapeOnly);
  r.SetSbp("", op::kTranspose, Transpose);
  r.SetSbp("", op::kConcat, Concat);
  r.SetSbp("", op::kGather, Gather);
  // Gradient ops.
  r.SetSbp(kOneflowDomain, op::kShrinkGrad, ElementwiseSbp(Linear::kFirst));
  for (const char* op : {op::kSoftmaxGrad, op::kLogSoftmaxGrad}) r.SetSbp(kOneflowDomain, op, SoftmaxGradRule);
  r.SetSbp(kOneflowDomain, op::kLayerNormalizationGrad, LayerNormGradRule);
  r.SetSbp(kOneflowDomain, op::kReduceSumToShape, ReduceSumToShapeRule);
}

}  // namespace oneflow
