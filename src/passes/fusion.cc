// Fusion pass: recognizes Gelu written out with Erf and SiLU as x * Sigmoid(x), folds BatchNormalization into a preceding
// Conv's constant weights, and merges MatMul + bias Add, Conv + residual Add and Gemm/MatMul/Conv + activation into ai.oneflow fused
// ops whose kernels apply the epilogue while the output tile is still in cache.
#include <cmath>

#include "graph/op_schema.h"
#include "graph/ops/binary_ops.h"
#include "graph/ops/unary_ops.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

namespace oneflow {

namespace {

using Uses = ValueUses;  // passes/pass_util.h

bool IsOp(const Node& n, const char* op, const char* domain = "") { return n.op_type == op && n.domain == domain; }

// The single node reading `v`, when `v` is an intermediate nobody else sees; else nullptr.
Node* SoleConsumer(Graph& g, const Uses& u, int v) {
  const size_t i = static_cast<size_t>(v);
  if (u.consumers[i] != 1 || u.is_output[i]) return nullptr;
  return &g.nodes[static_cast<size_t>(u.consumer[i])];
}

const Tensor* ConstantOf(const Graph& g, const Node& n, size_t input) {
  if (!n.has_input(input)) return nullptr;
  const Tensor& t = g.values[static_cast<size_t>(n.inputs[input])].constant;
  return t.defined() ? &t : nullptr;
}

DType ValueDType(const Graph& g, int v) { return g.values[static_cast<size_t>(v)].type.dtype; }

bool FusableDType(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

// Only the first output of `n` may be in use (BatchNormalization's training outputs, etc.).
bool OnlyFirstOutputUsed(const Node& n, const Uses& u) {
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (n.outputs[i] != kNoValue && (u.consumers[static_cast<size_t>(n.outputs[i])] || u.is_output[static_cast<size_t>(n.outputs[i])]))
      return false;
  return true;
}

// Makes `base` produce `tail`'s output and drops `tail`.
void Absorb(Node& base, Node& tail, std::vector<char>& removed, const Graph& g) {
  base.outputs[0] = tail.outputs[0];
  removed[static_cast<size_t>(&tail - g.nodes.data())] = 1;
}

void MakeFused(Node& n, const char* fused_op) {
  if (n.domain == kOneflowDomain) return;
  n.op_type = fused_op;
  n.domain = kOneflowDomain;
  n.opset = kOneflowDomainVersion;
  n.schema = nullptr;
}

// Conv (constant W, optional constant B) -> BatchNormalization (constant params): new W and B.
bool FoldBatchNorm(Graph& g, const Uses& u, Node& conv, std::vector<char>& removed) {
  if (!IsOp(conv, op::kConv) || conv.has_input(3)) return false;
  Node* bn = SoleConsumer(g, u, conv.outputs[0]);
  if (!bn || !IsOp(*bn, op::kBatchNormalization) || bn->inputs.size() < 5 || bn->inputs[0] != conv.outputs[0]) return false;
  if (bn->attrs.GetInt("training_mode", 0) != 0 || !OnlyFirstOutputUsed(*bn, u)) return false;
  const Tensor* w = ConstantOf(g, conv, 1);
  const Tensor* b = ConstantOf(g, conv, 2);
  if (!w || (conv.has_input(2) && !b) || !FusableDType(w->dtype())) return false;
  const Tensor* p[4];
  for (size_t i = 0; i < 4; ++i) {
    p[i] = ConstantOf(g, *bn, i + 1);
    if (!p[i] || p[i]->dtype() != w->dtype() || p[i]->numel() != w->dim(0)) return false;
  }
  const double eps = bn->attrs.GetFloat("epsilon", 1e-5f);
  const int64_t m = w->dim(0), per = w->numel() / std::max<int64_t>(m, 1);
  Tensor nw(w->dtype(), w->shape()), nb(w->dtype(), Shape{m});
  for (int64_t c = 0; c < m; ++c) {
    const double scale = p[0]->GetAsDouble(c) / std::sqrt(p[3]->GetAsDouble(c) + eps);
    const double bias = b ? b->GetAsDouble(c) : 0.0;
    const double folded = (bias - p[2]->GetAsDouble(c)) * scale + p[1]->GetAsDouble(c);
    DispatchFloat(w->dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < per; ++i)
        nw.data<T>()[c * per + i] = static_cast<T>(w->data<T>()[c * per + i] * scale);
      nb.data<T>()[c] = static_cast<T>(folded);
    });
  }
  const std::string base = conv.name.empty() ? "conv" : conv.name;
  const int wid = g.AddConstant(g.UniqueName(base + "_bn_W"), nw);
  const int bid = g.AddConstant(g.UniqueName(base + "_bn_B"), nb);
  conv.inputs.resize(3);
  conv.inputs[1] = wid;
  conv.inputs[2] = bid;
  Absorb(conv, *bn, removed, g);
  return true;
}

// MatMul -> Add(1-D bias of length N, constant or not): FusedMatMul(A, B, bias).
bool FuseMatMulBias(Graph& g, const Uses& u, Node& mm, std::vector<char>& removed) {
  if (!IsOp(mm, op::kMatMul) || !FusableDType(ValueDType(g, mm.outputs[0]))) return false;
  Node* add = SoleConsumer(g, u, mm.outputs[0]);
  if (!add || !IsOp(*add, binary::Add::kName) || add->inputs.size() != 2) return false;
  const size_t other = add->inputs[0] == mm.outputs[0] ? 1 : 0;
  // The bias need not be constant (a training graph feeds its parameters as inputs); its static
  // type must make it a 1-D vector of length N, the only broadcast the epilogue implements.
  const TensorType& b = g.values[static_cast<size_t>(add->inputs[other])].type;
  const TensorType& t = g.values[static_cast<size_t>(mm.outputs[0])].type;
  if (!b.has_rank || b.rank() != 1 || b.dtype != t.dtype || !t.has_rank || t.rank() < 1) return false;
  const Dim& n = t.dims.back();
  if (!n.known() || !b.dims[0].known() || n.value != b.dims[0].value) return false;
  mm.inputs.resize(2);
  mm.inputs.push_back(add->inputs[other]);
  MakeFused(mm, op::kFusedMatMul);
  Absorb(mm, *add, removed, g);
  return true;
}

// Conv/FusedConv (no residual, no activation yet) -> Add(Z of the same static shape): Z residual.
bool FuseConvResidual(Graph& g, const Uses& u, Node& conv, std::vector<char>& removed) {
  const bool plain = IsOp(conv, op::kConv);
  if (!plain && !IsOp(conv, op::kFusedConv, kOneflowDomain)) return false;
  if (conv.has_input(3) || (!plain && conv.attrs.GetString("activation", "None") != "None")) return false;
  if (!FusableDType(ValueDType(g, conv.outputs[0]))) return false;
  Node* add = SoleConsumer(g, u, conv.outputs[0]);
  if (!add || !IsOp(*add, binary::Add::kName) || add->inputs.size() != 2 || add->inputs[0] == add->inputs[1]) return false;
  const size_t other = add->inputs[0] == conv.outputs[0] ? 1 : 0;
  const TensorType& ct = g.values[static_cast<size_t>(conv.outputs[0])].type;
  const TensorType& zt = g.values[static_cast<size_t>(add->inputs[other])].type;
  // Same shape (no broadcasting in the epilogue): every dim known and equal, or the same symbol
  // (a symbolic batch dim, as exporters write it).
  if (!ct.has_rank || !zt.has_rank || ct.rank() != zt.rank() || zt.dtype != ct.dtype) return false;
  for (size_t i = 0; i < ct.dims.size(); ++i) {
    const Dim &a = ct.dims[i], &b = zt.dims[i];
    if (!(a.known() || !a.symbol.empty()) || !(a == b)) return false;
  }
  conv.inputs.resize(3, kNoValue);
  conv.inputs.push_back(add->inputs[other]);
  MakeFused(conv, op::kFusedConv);
  Absorb(conv, *add, removed, g);
  return true;
}

// True when input `i` of `n` is a one-element float constant equal to `want` (to 1e-6 relative).
bool IsScalarConstant(const Graph& g, const Node& n, size_t i, double want) {
  const Tensor* c = ConstantOf(g, n, i);
  if (!c || c->numel() != 1 || (c->dtype() != DType::kFloat32 && c->dtype() != DType::kFloat64)) return false;
  return std::fabs(c->GetAsDouble(0) - want) <= 1e-6 * std::fabs(want);
}

// For a binary node with a scalar-constant operand equal to `want`: the other operand, else kNoValue.
// `commutative` allows the constant on either side (Mul, Add); otherwise it must be the divisor.
int OperandBesideConstant(const Graph& g, const Node& n, double want, bool commutative) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return kNoValue;
  if (IsScalarConstant(g, n, 1, want)) return n.inputs[0];
  if (commutative && IsScalarConstant(g, n, 0, want)) return n.inputs[1];
  return kNoValue;
}

// The other input of a two-input node, given one of them (kNoValue when `v` is not an input).
int OtherInput(const Node& n, int v) {
  if (n.inputs.size() != 2) return kNoValue;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return kNoValue;
}

// Exact Gelu as exporters spell it out, x * 0.5 * (1 + erf(x / sqrt2)), in either association
// ((x * g) * 0.5 or (x * 0.5) * g) and with x / sqrt2 written as Div or as Mul by 1/sqrt2: five
// nodes and four intermediates become one Gelu, which FuseActivation can then move into the
// producing MatMul's epilogue. Anchored on the scaling node that feeds Erf.
bool FuseGeluPattern(Graph& g, const Uses& u, Node& scale, std::vector<char>& removed) {
  const double kSqrt2 = 1.4142135623730951;
  int x = kNoValue;
  if (IsOp(scale, binary::Div::kName)) x = OperandBesideConstant(g, scale, kSqrt2, false);
  else if (IsOp(scale, binary::Mul::kName)) x = OperandBesideConstant(g, scale, 1.0 / kSqrt2, true);
  if (x == kNoValue || !FusableDType(ValueDType(g, x))) return false;
  Node* erf = SoleConsumer(g, u, scale.outputs[0]);
  if (!erf || !IsOp(*erf, op::kErf)) return false;
  Node* add = SoleConsumer(g, u, erf->outputs[0]);
  if (!add || !IsOp(*add, binary::Add::kName) || OperandBesideConstant(g, *add, 1.0, true) != erf->outputs[0]) return false;
  Node* mul = SoleConsumer(g, u, add->outputs[0]);
  if (!mul || !IsOp(*mul, binary::Mul::kName)) return false;
  const int other = OtherInput(*mul, add->outputs[0]);
  Node* last = nullptr;        // the node whose output becomes Gelu's
  Node* half_of_x = nullptr;   // Mul(x, 0.5) in the (x * 0.5) * g association
  if (other == x) {
    last = SoleConsumer(g, u, mul->outputs[0]);
    if (!last || !IsOp(*last, binary::Mul::kName) || OperandBesideConstant(g, *last, 0.5, true) != mul->outputs[0]) return false;
  } else {
    if (other == kNoValue || u.consumers[static_cast<size_t>(other)] != 1 || u.is_output[static_cast<size_t>(other)])
      return false;
    for (Node& n : g.nodes)
      if (n.outputs.size() == 1 && n.outputs[0] == other) half_of_x = &n;
    if (!half_of_x || removed[static_cast<size_t>(half_of_x - g.nodes.data())] || !IsOp(*half_of_x, binary::Mul::kName) ||
        OperandBesideConstant(g, *half_of_x, 0.5, true) != x)
      return false;
    last = mul;
  }
  for (Node* dead : {&scale, erf, add, last == mul ? half_of_x : mul})
    removed[static_cast<size_t>(dead - g.nodes.data())] = 1;
  last->op_type = op::kGelu;
  last->domain.clear();
  last->opset = 20;  // Gelu's first opset; the schema is looked up by the node's own opset
  last->inputs = {x};
  last->attrs = AttrMap{};
  last->schema = nullptr;
  return true;
}

// SiLU as exporters spell it, x * Sigmoid(x) (either operand order): the Mul becomes one Swish
// (alpha 1), which FuseActivation can then move into the producing conv's epilogue. Written out,
// x has two readers, so no activation fuses and, in an NHWC conv chain, the layout pass cannot
// push the conv's transpose past the Mul (its other operand does not carry it yet): EfficientNet
// and YOLO-style nets paid a transpose pair and an elementwise pass per SiLU. Anchored on the
// Sigmoid.
bool FuseSwishPattern(Graph& g, const Uses& u, Node& sigmoid, std::vector<char>& removed) {
  if (!IsOp(sigmoid, op::kSigmoid) || sigmoid.inputs.size() != 1 || sigmoid.outputs.size() != 1) return false;
  const int x = sigmoid.inputs[0];
  if (x == kNoValue || !FusableDType(ValueDType(g, x))) return false;
  Node* mul = SoleConsumer(g, u, sigmoid.outputs[0]);
  if (!mul || !IsOp(*mul, binary::Mul::kName) || OtherInput(*mul, sigmoid.outputs[0]) != x) return false;
  removed[static_cast<size_t>(&sigmoid - g.nodes.data())] = 1;
  mul->op_type = op::kSwish;
  mul->domain.clear();
  mul->opset = unary::Swish::kSince;  // the schema is looked up by the node's own opset
  mul->inputs = {x};
  mul->attrs = AttrMap{};             // alpha defaults to 1
  mul->schema = nullptr;
  return true;
}

// Base op (no activation yet) -> activation: the activation becomes the base's epilogue.
bool FuseActivation(Graph& g, const Uses& u, Node& base, std::vector<char>& removed) {
  const char* fused = nullptr;
  if (IsOp(base, op::kConv) || IsOp(base, op::kFusedConv, kOneflowDomain)) fused = op::kFusedConv;
  else if (IsOp(base, op::kMatMul) || IsOp(base, op::kFusedMatMul, kOneflowDomain)) fused = op::kFusedMatMul;
  else if (IsOp(base, op::kGemm) || IsOp(base, op::kFusedGemm, kOneflowDomain)) fused = op::kFusedGemm;
  if (!fused || base.attrs.GetString("activation", "None") != "None") return false;
  if (!FusableDType(ValueDType(g, base.outputs[0]))) return false;
  Node* act = SoleConsumer(g, u, base.outputs[0]);
  if (!act || act->inputs.empty() || act->inputs[0] != base.outputs[0]) return false;
  // Any unary row (graph/ops/unary_ops.h) can be an epilogue: the activation attribute names the
  // row, activation_params holds its parameters in the row's order.
  std::vector<float> params;
  std::string name = op::kClip;
  if (IsOp(*act, op::kClip)) {
    float lo = -3.4028234663852886e38f, hi = 3.4028234663852886e38f;
    for (size_t i = 1; i < 3; ++i) {
      if (!act->has_input(i)) continue;
      const Tensor* c = ConstantOf(g, *act, i);
      if (!c || c->numel() != 1) return false;
      (i == 1 ? lo : hi) = static_cast<float>(c->GetAsDouble(0));
    }
    params = {lo, hi};
  } else {
    const UnaryOpInfo* row = FindUnaryOp(act->domain, act->op_type);
    if (!row || !row->standalone) return false;
    float p[unary::kMaxParams];
    if (!TryReadUnaryParams(*row, act->attrs, p)) return false;  // left to the op's own kernel to reject
    params.assign(p, p + row->params.count);
    name = row->token;
  }
  if (act->outputs.size() != 1) return false;
  MakeFused(base, fused);
  base.attrs.set("activation", Attribute::String(name));
  base.attrs.set("activation_params", Attribute::Floats(params));
  Absorb(base, *act, removed, g);
  return true;
}

}  // namespace

int FuseOps(Graph& g) {
  int total = 0;
  using Rule = bool (*)(Graph&, const Uses&, Node&, std::vector<char>&);
  // Order matters: BN folding and bias/residual first, so the activation lands on the final node.
  const Rule rules[] = {FuseGeluPattern, FuseSwishPattern, FoldBatchNorm, FuseMatMulBias, FuseConvResidual,
                        FuseActivation};
  for (Rule rule : rules) {
    for (;;) {
      Uses u = CountValueUses(g);
      std::vector<char> removed(g.nodes.size(), 0);
      int changed = 0;
      for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (removed[i] || g.nodes[i].outputs.empty() || g.nodes[i].outputs[0] == kNoValue) continue;
        // A node rewritten in this sweep changes the use counts: recount before touching more.
        if (rule(g, u, g.nodes[i], removed)) {
          ++changed;
          break;
        }
      }
      if (!changed) break;
      std::vector<Node> kept;
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (!removed[i]) kept.push_back(std::move(g.nodes[i]));
      g.nodes = std::move(kept);
      total += changed;
    }
  }
  if (total > 0 && !g.opset_imports.count(kOneflowDomain)) g.opset_imports[kOneflowDomain] = kOneflowDomainVersion;
  return total;
}

}  // namespace oneflow
