// Attention fusion: MatMul(Q, K^T) -> [Div or Mul by a scalar constant] -> Softmax(last axis) ->
// MatMul(., V) over [B, H, S, D] tensors becomes one ai.oneflow FusedAttention(Q, K, V), whose
// kernels never materialize the score matrix. K^T given by a Transpose that only this pattern reads
// gets that Transpose's perm with the last two entries swapped; any other K^T gets a new Transpose.
#include "graph/op_schema.h"
#include "graph/ops/binary_ops.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

namespace oneflow {
namespace {

struct Counts {
  std::vector<int> consumers;
  std::vector<char> is_output;
  std::vector<int> producer;
};

// Readers of each value among the nodes not `removed`.
Counts Count(const Graph& g, const std::vector<char>& removed) {
  Counts c;
  c.consumers.assign(g.values.size(), 0);
  c.is_output.assign(g.values.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (removed[i]) continue;
    for (int v : g.nodes[i].inputs)
      if (v != kNoValue) ++c.consumers[static_cast<size_t>(v)];
  }
  for (int v : g.outputs) c.is_output[static_cast<size_t>(v)] = 1;
  c.producer = g.Producers();
  return c;
}

bool Is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

// The producer of `v` when this pattern is its only reader (so rewriting it is invisible), else null.
Node* PrivateProducer(Graph& g, const Counts& c, int v) {
  const size_t i = static_cast<size_t>(v);
  if (c.consumers[i] != 1 || c.is_output[i] || c.producer[i] == kNoValue) return nullptr;
  return &g.nodes[static_cast<size_t>(c.producer[i])];
}

const TensorType& TypeOf(const Graph& g, int v) { return g.values[static_cast<size_t>(v)].type; }

bool Same(const Dim& a, const Dim& b) { return (a.known() || !a.symbol.empty()) && a == b; }

// The scalar of a constant input, when `n` has one at input `i` (f32 or f64, one element).
bool ScalarConstant(const Graph& g, const Node& n, size_t i, double* out) {
  if (!n.has_input(i)) return false;
  const Tensor& t = g.values[static_cast<size_t>(n.inputs[i])].constant;
  if (!t.defined() || t.numel() != 1) return false;
  if (t.dtype() == DType::kFloat32) *out = t.data<float>()[0];
  else if (t.dtype() == DType::kFloat64) *out = t.data<double>()[0];
  else return false;
  return true;
}

// Rewrites the MatMul at `pv_index` when it ends the pattern; the nodes it absorbs are marked in
// `removed` (their outputs are read by nothing else).
bool TryFuse(Graph& g, const Counts& c, size_t pv_index, std::vector<char>& removed) {
  Node& pv = g.nodes[pv_index];
  if (!Is(pv, op::kMatMul) || pv.inputs.size() != 2 || !pv.has_output(0)) return false;
  Node* sm = PrivateProducer(g, c, pv.inputs[0]);
  if (!sm || !Is(*sm, op::kSoftmax) || sm->inputs.empty()) return false;
  const int64_t axis = sm->attrs.GetInt("axis", -1);
  if (axis != -1 && axis != 3) return false;
  Node* prev = PrivateProducer(g, c, sm->inputs[0]);
  if (!prev) return false;
  double scale = 1.0;
  Node* qk = prev;
  if (Is(*prev, binary::Div::kName) || Is(*prev, binary::Mul::kName)) {
    double k = 0.0;
    if (!ScalarConstant(g, *prev, 1, &k) || k == 0.0) return false;
    scale = Is(*prev, binary::Div::kName) ? 1.0 / k : k;
    qk = PrivateProducer(g, c, prev->inputs[0]);
    if (!qk) return false;
  }
  if (!Is(*qk, op::kMatMul) || qk->inputs.size() != 2) return false;
  const int q = qk->inputs[0], kt = qk->inputs[1], v = pv.inputs[1];
  const TensorType &tq = TypeOf(g, q), &tk = TypeOf(g, kt), &tv = TypeOf(g, v);
  if (!IsFloatDType(tq.dtype) || tk.dtype != tq.dtype || tv.dtype != tq.dtype) return false;
  if (!tq.has_rank || !tk.has_rank || !tv.has_rank || tq.rank() != 4 || tk.rank() != 4 || tv.rank() != 4) return false;
  // Plain batched products only: equal B and H everywhere (no broadcasting), matching D and Sk.
  for (size_t d = 0; d < 2; ++d)
    if (!Same(tq.dims[d], tk.dims[d]) || !Same(tq.dims[d], tv.dims[d])) return false;
  if (!Same(tq.dims[3], tk.dims[2]) || !Same(tk.dims[3], tv.dims[2])) return false;

  const Node* base = g.nodes.data();
  for (const Node* n : {sm, prev, qk}) removed[static_cast<size_t>(n - base)] = 1;
  // K = K^T with its last two axes swapped.
  int k = kt;
  Node* tr = PrivateProducer(g, c, kt);
  std::vector<int64_t> perm = tr && Is(*tr, op::kTranspose) ? tr->attrs.GetInts("perm", {}) : std::vector<int64_t>{};
  if (perm.size() == 4) {
    std::swap(perm[2], perm[3]);
    tr->attrs.set("perm", Attribute::Ints(perm));
    tr->defaulted_attrs.erase("perm");
    TensorType& t = g.values[static_cast<size_t>(kt)].type;
    std::swap(t.dims[2], t.dims[3]);
  } else {
    TensorType kty = tk;
    std::swap(kty.dims[2], kty.dims[3]);
    k = g.AddValue(g.UniqueName(g.values[static_cast<size_t>(kt)].name + "_untransposed"), kty);
    Node t;
    t.name = pv.name + "_k";
    t.op_type = op::kTranspose;
    t.opset = pv.opset;
    t.inputs = {kt};
    t.outputs = {k};
    t.attrs.set("perm", Attribute::Ints({0, 1, 3, 2}));
    g.nodes.push_back(std::move(t));  // invalidates references into g.nodes: only indices below
    removed.push_back(0);
  }
  Node& fused = g.nodes[pv_index];
  MakeOneflowOp(g, fused, op::kFusedAttention);
  fused.inputs = {q, k, v};
  fused.attrs.set("scale", Attribute::Float(static_cast<float>(scale)));
  fused.attrs.set("causal", Attribute::Int(0));
  return true;
}

}  // namespace

int FuseAttention(Graph& g) {
  int rewrites = 0;
  std::vector<char> removed(g.nodes.size(), 0);
  Counts c = Count(g, removed);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (removed[i] || !TryFuse(g, c, i, removed)) continue;
    ++rewrites;
    c = Count(g, removed);  // a rewrite changes who reads what
  }
  if (rewrites > 0) RemoveMarkedNodes(g, removed);
  return rewrites;
}

}  // namespace oneflow
