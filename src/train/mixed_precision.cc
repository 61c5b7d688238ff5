// The mixed-precision graph pass (casts around low-precision compute) and the dynamic loss scale.
#include "train/mixed_precision.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "engine/session.h"
#include "graph/attribute.h"
#include "graph/op_schema.h"

namespace oneflow::train {

namespace {

// The op's class (OpSchema::precision, set where the op is defined).
PrecisionClass ClassOf(const Node& n) { return n.schema ? n.schema->precision : PrecisionClass::kKeep; }

class Rewriter {
 public:
  Rewriter(Graph& g, DType low) : g_(g), low_(low) {
    for (const Node& n : g.nodes)
      if (n.domain.empty() && n.opset > 0) opset_ = n.opset;
  }

  size_t Run() {
    std::vector<Node> old = std::move(g_.nodes);
    g_.nodes.clear();
    Graph view;  // TopologicalOrder needs the nodes in a graph
    view.values = g_.values;
    view.nodes = old;
    size_t converted = 0;
    for (int idx : view.TopologicalOrder()) {
      Node n = std::move(old[static_cast<size_t>(idx)]);
      std::vector<Node> after;  // cast-backs of a converted node's results
      if (n.domain.empty() && Convert(n, after)) ++converted;
      g_.nodes.push_back(std::move(n));
      for (Node& a : after) g_.nodes.push_back(std::move(a));
    }
    return converted;
  }

 private:
  bool IsF32(int v) const { return v != kNoValue && g_.values[static_cast<size_t>(v)].type.dtype == DType::kFloat32; }

  // The low-precision version of f32 value `v`: its producer's own low result, or one Cast per value.
  int LowOf(int v) {
    auto it = low_of_.find(v);
    if (it != low_of_.end()) return it->second;
    const int lv = NewValue(v);
    g_.nodes.push_back(CastNode(v, lv, low_));
    low_of_[v] = lv;
    return lv;
  }

  int NewValue(int v) {
    const Value& src = g_.values[static_cast<size_t>(v)];
    TensorType t = src.type;
    t.dtype = low_;
    const std::string name = g_.UniqueName(src.name + (low_ == DType::kBFloat16 ? "::bf16" : "::f16"));
    return g_.AddValue(name, t);
  }

  Node CastNode(int from, int to, DType dt) {
    Node c;
    c.name = g_.values[static_cast<size_t>(to)].name + "/cast";
    c.op_type = op::kCast;
    c.opset = opset_;
    c.inputs = {from};
    c.outputs = {to};
    c.attrs.set("to", Attribute::Int(static_cast<int64_t>(dt)));
    return c;
  }

  // Rewrites `n` to compute in low precision when the policy says so: input casts are emitted
  // now (before `n`), the casts of its results back to their f32 values go to `after`.
  bool Convert(Node& n, std::vector<Node>& after) {
    const bool heavy = ClassOf(n) == PrecisionClass::kLow;
    bool follow = false;
    if (ClassOf(n) == PrecisionClass::kFollow) {
      for (int v : n.inputs)
        if (native_low_.count(v)) follow = true;
    }
    if (!heavy && !follow) return false;
    // Every float input must be f32 (or a low result) and there must be a float output.
    bool any_float_out = false;
    for (int v : n.inputs)
      if (v != kNoValue && IsFloatDType(g_.values[static_cast<size_t>(v)].type.dtype) && !IsF32(v)) return false;
    for (int v : n.outputs) any_float_out |= IsF32(v);
    if (!any_float_out) return false;
    for (int& v : n.inputs)
      if (IsF32(v)) v = LowOf(v);
    for (int& v : n.outputs) {
      if (!IsF32(v)) continue;
      const int lv = NewValue(v);
      after.push_back(CastNode(lv, v, DType::kFloat32));
      low_of_[v] = lv;
      native_low_.insert(v);
      v = lv;
    }
    return true;
  }

  Graph& g_;
  DType low_;
  int opset_ = 17;
  std::map<int, int> low_of_;  // f32 value -> its low-precision version
  std::set<int> native_low_;   // f32 values whose primary form is a low-precision result
};

}  // namespace

size_t ApplyMixedPrecision(Graph& g, DType low) {
  OF_REQUIRE(low == DType::kBFloat16 || low == DType::kFloat16, "mixed precision computes in bf16 or f16, not ",
             DTypeName(low));
  ResolveSchemas(g);  // each node's precision class is on its schema
  const size_t converted = Rewriter(g, low).Run();
  PrepareGraph(g);
  return converted;
}

void ValidateLossScaleConfig(const LossScaleConfig& c) {
  OF_REQUIRE(std::isfinite(c.initial_scale) && c.initial_scale > 0.0f, "loss scale must be finite and > 0, got ",
             c.initial_scale);
  OF_REQUIRE(std::isfinite(c.growth) && c.growth >= 1.0f, "loss scale growth factor must be >= 1, got ", c.growth);
  OF_REQUIRE(c.backoff > 0.0f && c.backoff < 1.0f, "loss scale backoff factor must be in (0, 1), got ", c.backoff);
  OF_REQUIRE(c.growth_interval > 0, "loss scale growth interval must be > 0, got ", c.growth_interval);
}

void DynamicLossScale::Restore(float scale, int64_t good_steps) {
  OF_REQUIRE(std::isfinite(scale) && scale > 0.0f, "loss scale must be finite and > 0, got ", scale);
  OF_REQUIRE(good_steps >= 0, "loss scale growth count must be >= 0, got ", good_steps);
  scale_ = scale;
  good_steps_ = good_steps;
}

void DynamicLossScale::Update(bool overflow) {
  if (overflow) {
    scale_ *= config_.backoff;
    good_steps_ = 0;
    return;
  }
  if (++good_steps_ >= config_.growth_interval) {
    const float grown = scale_ * config_.growth;
    if (std::isfinite(grown)) scale_ = grown;  // PyTorch likewise never grows the scale to Inf
    good_steps_ = 0;
  }
}

}  // namespace oneflow::train
