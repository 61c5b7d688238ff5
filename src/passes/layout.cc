// Layout pass: runs 2-D convolutions channels-last (NHWC) and keeps the tensors between them in
// NHWC, so a conv net pays for one layout change at its input and one at its end instead of two
// per conv (oneDNN's fast conv kernels want NHWC; ONNX tensors are NCHW).
//
// Like onnxruntime's transpose optimizer, it works with explicit Transpose nodes:
//  1. Each 2-D f32 Conv/FusedConv with constant weights becomes FusedConv(layout = "NHWC") between
//     Transpose(0,2,3,1) on its inputs X (and residual Z) and Transpose(0,3,1,2) on its output.
//  2. Transposes are pushed down through ops that do not care about the layout: unary elementwise
//     ops, binary elementwise ops whose other input carries the same transpose (or is a scalar),
//     and the pools, which switch to their NHWC forms (ai.oneflow NhwcMaxPool, ...).
//  3. Transpose pairs that undo each other cancel; duplicates of one transpose merge.
// A transpose is only pushed past a consumer when every reader of its output can take it along
// (or cancels it), so pushing never leaves a transpose behind in addition to the new one.
#include <algorithm>
#include <set>

#include "graph/op_schema.h"
#include "graph/ops/binary_ops.h"
#include "graph/ops/unary_ops.h"
#include "passes/passes.h"

namespace oneflow {

namespace {

using Perm = std::vector<int64_t>;
const Perm kToNhwc{0, 2, 3, 1};
const Perm kToNchw{0, 3, 1, 2};

bool IsOp(const Node& n, const char* op, const char* domain = "") { return n.op_type == op && n.domain == domain; }

// Elementwise ops of one tensor input whose result does not depend on the layout: the unary rows
// (graph/ops/unary_ops.h), Identity and Clip.
bool IsLayoutFreeUnary(const Node& n) {
  if (n.outputs.size() != 1) return false;
  if (const UnaryOpInfo* row = FindUnaryOp(n.domain, n.op_type)) return row->standalone;
  return n.domain.empty() && (n.op_type == op::kIdentity || n.op_type == op::kClip);
}

// Two-input elementwise ops with broadcasting: the binary rows (graph/ops/binary_ops.h).
bool IsLayoutFreeBinary(const Node& n) {
  return n.inputs.size() == 2 && n.outputs.size() == 1 && FindBinaryOp(n.domain, n.op_type) != nullptr;
}

// Pools with an NHWC form; MaxPool only when its Indices output is absent.
const char* NhwcPoolOp(const Node& n) {
  if (!n.domain.empty() || n.outputs.size() != 1) return nullptr;
  if (n.op_type == op::kMaxPool) return op::kNhwcMaxPool;
  if (n.op_type == op::kAveragePool) return op::kNhwcAveragePool;
  if (n.op_type == op::kGlobalAveragePool) return op::kNhwcGlobalAveragePool;
  return nullptr;
}

class LayoutRewriter {
 public:
  explicit LayoutRewriter(Graph& g) : g_(g) {
    auto it = g.opset_imports.find("");
    default_opset_ = it == g.opset_imports.end() ? 13 : it->second;
  }

  int Run() {
    int changes = ConvertConvs();
    if (changes == 0) return 0;
    // One rewrite at a time, recounting readers after each: the graphs are small and each rule
    // needs exact reader counts.
    for (;;) {
      Recount();
      bool changed = false;
      for (size_t i = 0; i < g_.nodes.size() && !changed; ++i) changed = Cancel(i) || Merge(i) || Push(i);
      if (!changed) break;
      ++changes;
    }
    for (Node& n : g_.nodes) changes += TransposeToReshape(n);
    if (!g_.opset_imports.count(kOneflowDomain)) g_.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
    return changes;
  }

 private:
  const TensorType& TypeOf(int v) const { return g_.values[static_cast<size_t>(v)].type; }
  bool IsConstant(int v) const { return g_.values[static_cast<size_t>(v)].constant.defined(); }

  // A new value typed as `like` transposed by `perm` (so later rules can read its dtype and rank).
  int NewValue(int like, const Perm& perm) {
    TensorType t = TypeOf(like);
    if (t.has_rank && t.rank() == static_cast<int64_t>(perm.size())) {
      std::vector<Dim> dims;
      for (int64_t k : perm) dims.push_back(t.dims[static_cast<size_t>(k)]);
      t = TensorType::Of(t.dtype, dims);
    }
    return g_.AddValue(g_.UniqueName(g_.values[static_cast<size_t>(like)].name + "_t"), t);
  }

  static Perm Inverse(const Perm& p) {
    Perm inv(p.size());
    for (size_t k = 0; k < p.size(); ++k) inv[static_cast<size_t>(p[k])] = static_cast<int64_t>(k);
    return inv;
  }

  // Appends Transpose(in) -> out (node order does not matter: every pass walks the topological order).
  void AddTranspose(int in, int out, const Perm& perm) {
    Node t;
    t.name = g_.values[static_cast<size_t>(out)].name + "_layout";
    t.op_type = op::kTranspose;
    t.opset = default_opset_;
    t.inputs = {in};
    t.outputs = {out};
    t.attrs.set("perm", Attribute::Ints(perm));
    g_.nodes.push_back(std::move(t));
  }

  // A transpose that only moves size-1 dims (NHWC [N, 1, 1, C] -> NCHW [N, C, 1, 1] after a
  // global pool) keeps the bytes in order: make it a Reshape, which runs as a view. Symbolic dims
  // must stay in place (Reshape's 0 copies them).
  int TransposeToReshape(Node& n) {
    if (!IsOp(n, op::kTranspose) || !n.has_input(0) || !n.has_output(0)) return 0;
    const TensorType& t = TypeOf(n.inputs[0]);
    const Perm perm = PermOf(n);
    if (!t.has_rank || perm.size() != t.dims.size()) return 0;
    std::vector<int64_t> shape;
    int64_t last = -1;
    for (size_t k = 0; k < perm.size(); ++k) {
      const size_t from = static_cast<size_t>(perm[k]);
      const Dim& d = t.dims[from];
      if (d.known() && d.value == 1) {
        shape.push_back(1);
        continue;
      }
      if (static_cast<int64_t>(from) < last) return 0;  // two real dims swap: a real transpose
      last = static_cast<int64_t>(from);
      if (d.known()) shape.push_back(d.value);
      else if (from == k) shape.push_back(0);
      else return 0;
    }
    Tensor st(DType::kInt64, Shape{static_cast<int64_t>(shape.size())});
    std::copy(shape.begin(), shape.end(), st.data<int64_t>());
    n.op_type = op::kReshape;
    n.attrs = AttrMap();
    n.schema = nullptr;
    n.inputs.push_back(g_.AddConstant(g_.UniqueName(n.name + "_shape"), st));
    return 1;
  }

  // Step 1.
  int ConvertConvs() {
    int converted = 0;
    const size_t count = g_.nodes.size();
    for (size_t i = 0; i < count; ++i) {
      Node& n = g_.nodes[i];
      const bool plain = IsOp(n, op::kConv);
      if (!plain && !IsOp(n, op::kFusedConv, kOneflowDomain)) continue;
      if (!plain && n.attrs.GetString("layout", "NCHW") != "NCHW") continue;
      if (!n.has_input(1) || !n.has_output(0) || n.outputs.size() != 1) continue;
      const TensorType& xt = TypeOf(n.inputs[0]);
      const Tensor& w = g_.values[static_cast<size_t>(n.inputs[1])].constant;
      // oneDNN runs f32 2-D convs, grouped and depthwise ones too (a depthwise conv left in NCHW
      // would cost two transposes between every pair of pointwise convs in MobileNet-style nets);
      // other convs would only gain two transposes.
      if (xt.dtype != DType::kFloat32 || !xt.has_rank || xt.rank() != 4 || !w.defined() || w.rank() != 4 ||
          w.dtype() != DType::kFloat32)
        continue;
      if (plain) {
        n.op_type = op::kFusedConv;
        n.domain = kOneflowDomain;
        n.opset = kOneflowDomainVersion;
      }
      n.schema = nullptr;
      n.attrs.set("layout", Attribute::String("NHWC"));
      const int x = n.inputs[0], y = n.outputs[0];
      const int xh = NewValue(x, kToNhwc), yh = NewValue(y, kToNhwc);
      n.inputs[0] = xh;
      n.outputs[0] = yh;
      int zh = kNoValue;
      if (n.has_input(3)) {
        zh = NewValue(n.inputs[3], kToNhwc);
        const int z = n.inputs[3];
        n.inputs[3] = zh;
        AddTranspose(z, zh, kToNhwc);  // invalidates `n`
      }
      AddTranspose(x, xh, kToNhwc);
      AddTranspose(yh, y, kToNchw);
      ++converted;
    }
    return converted;
  }

  void Recount() {
    readers_.assign(g_.values.size(), {});
    producer_ = g_.Producers();
    for (size_t n = 0; n < g_.nodes.size(); ++n)
      for (int v : g_.nodes[n].inputs)
        if (v != kNoValue) readers_[static_cast<size_t>(v)].push_back(static_cast<int>(n));
    is_output_.assign(g_.values.size(), 0);
    for (int v : g_.outputs) is_output_[static_cast<size_t>(v)] = 1;
  }

  // The perm of a Transpose node (empty when absent: reverse, which we never produce).
  static Perm PermOf(const Node& n) { return n.attrs.GetInts("perm", Perm{}); }

  // The Transpose producing `v`, or nullptr.
  const Node* TransposeProducing(int v) const {
    if (v == kNoValue) return nullptr;
    const int p = producer_[static_cast<size_t>(v)];
    if (p == kNoValue) return nullptr;
    const Node& n = g_.nodes[static_cast<size_t>(p)];
    return IsOp(n, op::kTranspose) && n.has_input(0) && PermOf(n).size() == 4 ? &n : nullptr;
  }

  // Redirects every reader of `from` to `to`.
  void ReplaceUses(int from, int to) {
    for (Node& n : g_.nodes)
      for (int& v : n.inputs)
        if (v == from) v = to;
  }

  // Transpose(Transpose(x, q), p) with q then p = identity: readers use x. The first transpose
  // stays for its other readers (dead-code elimination removes it otherwise).
  bool Cancel(size_t i) {
    Node& n = g_.nodes[i];
    if (!IsOp(n, op::kTranspose) || !n.has_input(0) || is_output_[static_cast<size_t>(n.outputs[0])]) return false;
    const Node* q = TransposeProducing(n.inputs[0]);
    if (!q) return false;
    const Perm p = PermOf(n), qp = PermOf(*q);
    if (p.size() != qp.size()) return false;
    for (size_t k = 0; k < p.size(); ++k)
      if (qp[static_cast<size_t>(p[k])] != static_cast<int64_t>(k)) return false;
    const int out = n.outputs[0];
    const int src = q->inputs[0];
    n.outputs[0] = kNoValue;  // dead: removed below by dead-code elimination
    n.inputs.clear();
    ReplaceUses(out, src);
    return true;
  }

  // Two transposes of the same value with the same perm: keep one.
  bool Merge(size_t i) {
    Node& n = g_.nodes[i];
    if (!IsOp(n, op::kTranspose) || !n.has_input(0) || is_output_[static_cast<size_t>(n.outputs[0])]) return false;
    for (int r : readers_[static_cast<size_t>(n.inputs[0])]) {
      const Node& o = g_.nodes[static_cast<size_t>(r)];
      if (static_cast<size_t>(r) == i || !IsOp(o, op::kTranspose) || o.outputs.empty() || o.outputs[0] == kNoValue) continue;
      if (PermOf(o) != PermOf(n)) continue;
      const int out = n.outputs[0];
      n.outputs[0] = kNoValue;
      n.inputs.clear();
      ReplaceUses(out, o.outputs[0]);
      return true;
    }
    return false;
  }

  // Whether `reader` can take the transpose `t` (producing its input `v`) along.
  bool CanAbsorb(const Node& reader, int v, const Perm& perm) const {
    if (IsOp(reader, op::kTranspose)) return true;  // cancels or composes later; never costs more
    if (IsLayoutFreeUnary(reader)) {
      if (reader.inputs[0] != v) return false;
      for (size_t k = 1; k < reader.inputs.size(); ++k)  // Clip's min/max: scalars
        if (reader.has_input(k) && (!TypeOf(reader.inputs[k]).has_rank || TypeOf(reader.inputs[k]).rank() != 0))
          return false;
      return true;
    }
    if (IsLayoutFreeBinary(reader)) {
      for (int in : reader.inputs) {
        if (in == v) continue;
        const Node* other = TransposeProducing(in);
        if (other && PermOf(*other) == perm) continue;
        const Tensor& c = g_.values[static_cast<size_t>(in)].constant;
        if (c.defined() && c.numel() == 1 && c.rank() <= 4) continue;
        return false;
      }
      return true;
    }
    if (NhwcPoolOp(reader) && perm == kToNchw && reader.inputs.size() == 1) {
      const DType t = TypeOf(v).dtype;
      return t == DType::kFloat32 || t == DType::kFloat64;
    }
    return false;
  }

  // Moves the transpose feeding node i's input past node i.
  bool Push(size_t i) {
    Node& n = g_.nodes[i];
    if (IsOp(n, op::kTranspose) || n.outputs.size() != 1 || n.outputs[0] == kNoValue) return false;
    if (!IsLayoutFreeUnary(n) && !IsLayoutFreeBinary(n) && !NhwcPoolOp(n)) return false;
    int v = kNoValue;
    const Node* t = nullptr;
    for (int in : n.inputs)
      if ((t = TransposeProducing(in))) {
        v = in;
        break;
      }
    if (!t) return false;
    const Perm perm = PermOf(*t);
    // Every reader of the transposed value must take it along, or the transpose would stay too.
    if (is_output_[static_cast<size_t>(v)]) return false;
    for (int r : readers_[static_cast<size_t>(v)])
      if (!CanAbsorb(g_.nodes[static_cast<size_t>(r)], v, perm)) return false;
    if (!CanAbsorb(n, v, perm)) return false;
    // Rewire: inputs that carry `perm` lose it; node i now computes in the transposed layout.
    for (int& in : n.inputs) {
      const Node* p = TransposeProducing(in);
      if (p && PermOf(*p) == perm) in = p->inputs[0];
    }
    if (const char* pool = NhwcPoolOp(n)) {
      n.op_type = pool;
      n.domain = kOneflowDomain;
      n.opset = kOneflowDomainVersion;
    }
    n.schema = nullptr;
    const int y = n.outputs[0], yt = NewValue(y, Inverse(perm));
    n.outputs[0] = yt;
    AddTranspose(yt, y, perm);  // invalidates `n`
    return true;
  }

  Graph& g_;
  int default_opset_ = 13;
  std::vector<std::vector<int>> readers_;
  std::vector<int> producer_;
  std::vector<char> is_output_;
};

}  // namespace

int OptimizeLayout(Graph& g) {
  const int changes = LayoutRewriter(g).Run();
  if (changes > 0) {
    // Cancelled transposes have no outputs; drop them, then restore a topological node order.
    std::vector<Node> kept;
    for (Node& n : g.nodes)
      if (!n.outputs.empty() && n.outputs[0] != kNoValue) kept.push_back(std::move(n));
    g.nodes = std::move(kept);
    std::vector<Node> ordered;
    for (int idx : g.TopologicalOrder()) ordered.push_back(std::move(g.nodes[static_cast<size_t>(idx)]));
    g.nodes = std::move(ordered);
  }
  return changes;
}

}  // namespace oneflow
