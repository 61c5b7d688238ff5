// Elementwise fusion: a connected group of elementwise nodes (activations, Add/Sub/Mul/Div/Pow/
// Max/Min, Clip with constant bounds) whose intermediates nobody else reads becomes one
// ai.oneflow FusedElementwise running a register program (graph/fused_elementwise_program.h), so the
// group reads its operands once and writes one result instead of a tensor per node.
//
// A group has one shape: every member produces the group output's static shape (known or the same
// symbol), so nothing is recomputed per element that the unfused graph computed per row. Operands
// from outside the group are scalar constants (folded into the program), or tensors that broadcast
// to that shape along one contiguous block of dims (same shape, a scalar, a bias over trailing
// dims, a per-row statistic).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "graph/fused_elementwise_program.h"
#include "graph/ops/unary_ops.h"
#include "graph/op_schema.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

namespace oneflow {
namespace {

bool IsFusableDType(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

const TensorType& TypeOf(const Graph& g, int v) { return g.values[static_cast<size_t>(v)].type; }

// A dim the pass can compare: known, or a named symbol.
bool Comparable(const Dim& d) { return d.known() || !d.symbol.empty(); }
bool IsOne(const Dim& d) { return d.known() && d.value == 1; }

// The value of a one-element float constant input, when `v` is one.
bool ScalarConstant(const Graph& g, int v, float* out) {
  const Tensor& t = g.values[static_cast<size_t>(v)].constant;
  if (!t.defined() || t.numel() != 1 || !IsFloatDType(t.dtype())) return false;
  *out = static_cast<float>(t.GetAsDouble(0));
  return true;
}

// Whether a tensor of type `t` can be read by FusedElementwise for an output of dims `out`: dtype
// `dt`, rank <= out's, each dim 1 or out's, and the dims that are not 1 one contiguous block among
// out's dims that are not 1 (see MakeOperandIndexMap).
bool Broadcasts(const TensorType& t, const std::vector<Dim>& out, DType dt) {
  if (t.dtype != dt || !t.has_rank || t.dims.size() > out.size()) return false;
  const size_t lead = out.size() - t.dims.size();
  int state = 0;  // 0: before the block, 1: inside, 2: after
  for (size_t d = 0; d < t.dims.size(); ++d) {
    const Dim &a = t.dims[d], &o = out[lead + d];
    if (IsOne(o)) continue;  // a dim of one never breaks the block
    const bool equal = Comparable(a) && a == o;
    if (!equal && !IsOne(a)) return false;
    if (equal) {
      if (state == 2) return false;
      state = 1;
    } else if (state == 1) {
      state = 2;
    }
  }
  return true;
}

// How a node becomes instructions: its op and its scalar parameters.
struct Lowering {
  EwOp op = EwOp::kCount;
  std::vector<float> params;
  int data_inputs = 1;  // tensor operands the instruction reads (1 unary, 2 binary)
};

// The lowering of `n`, when it is an elementwise node this pass fuses.
bool Lower(const Graph& g, const Node& n, Lowering* out) {
  if (n.outputs.size() != 1 || !n.has_output(0) || n.inputs.empty()) return false;
  Lowering l;
  const std::string& op = n.op_type;
  if (const UnaryOpInfo* row = FindUnaryOp(n.domain, op); row && row->standalone) {  // graph/ops/unary_ops.h
    l.op = EwOpOfRow(row->id);
    float p[unary::kMaxParams];
    if (!TryReadUnaryParams(*row, n.attrs, p)) return false;  // left to the op's own kernel to reject
    l.params.assign(p, p + row->params.count);
  } else if (!n.domain.empty()) {
    return false;
  } else if (op == op::kClip) {
    float b[2] = {-INFINITY, INFINITY};
    for (size_t i = 1; i < 3; ++i)
      if (n.has_input(i) && !ScalarConstant(g, n.inputs[i], &b[i - 1])) return false;
    l = {EwOp::kClip, {b[0], b[1]}};
  } else if (const BinaryOpInfo* bt = FindBinaryOp(n.domain, op)) {  // graph/ops/binary_ops.h
    if (n.inputs.size() != 2 || !n.has_input(1)) return false;
    l.op = EwOpOfBinary(bt->id);
    l.data_inputs = 2;
    float e = 0.0f;
    // Pow by a constant scalar: the special cases the CPU kernel computes without pow().
    if (l.op == EwOp::kPow && ScalarConstant(g, n.inputs[1], &e)) {
      const std::pair<float, EwOp> special[] = {{2.0f, EwOp::kSquare}, {3.0f, EwOp::kCube},
                                                {0.5f, EwOp::kPowHalf}, {-1.0f, EwOp::kReciprocal}};
      for (const auto& [exponent, unary] : special)
        if (e == exponent) l = {unary, {}, 1};
    }
  } else {
    return false;
  }
  const TensorType& t = TypeOf(g, n.outputs[0]);
  if (!IsFusableDType(t.dtype) || !t.has_rank) return false;
  for (const Dim& d : t.dims)
    if (!Comparable(d)) return false;
  for (int i = 0; i < l.data_inputs; ++i) {
    if (TypeOf(g, n.inputs[static_cast<size_t>(i)]).dtype != t.dtype) return false;
  }
  *out = std::move(l);
  return true;
}

struct Analysis {
  std::vector<int> producer;                // per value
  std::vector<std::vector<int>> consumers;  // per value: reading nodes (repeated per read)
  std::vector<char> is_output;
};

Analysis Analyze(const Graph& g) {
  Analysis a;
  a.producer = g.Producers();
  a.consumers.assign(g.values.size(), {});
  a.is_output.assign(g.values.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs)
      if (v != kNoValue) a.consumers[static_cast<size_t>(v)].push_back(static_cast<int>(n));
  for (int v : g.outputs) a.is_output[static_cast<size_t>(v)] = 1;
  return a;
}

// Groups stop growing here (a program of 32 nodes plus its loads stays near kEwMaxInstructions).
constexpr size_t kMaxGroupNodes = 32;

// Whether every operand of `n` that the group would read is the group's shape or broadcasts to it.
bool OperandsFit(const Graph& g, const Node& n, const Lowering& l, const std::vector<Dim>& dims, DType dt) {
  for (int i = 0; i < l.data_inputs; ++i) {
    const int v = n.inputs[static_cast<size_t>(i)];
    float unused;
    if (!ScalarConstant(g, v, &unused) && !Broadcasts(TypeOf(g, v), dims, dt)) return false;
  }
  return true;
}

// Whether the group's tensor operands broadcast to exactly `dims` (the rank and every dim that is
// not 1 come from some operand), so shape inference of the fused node reproduces the group's type.
bool LeavesSpan(const Graph& g, const std::vector<int>& leaves, const std::vector<Dim>& dims) {
  size_t max_rank = 0;
  for (int v : leaves) max_rank = std::max(max_rank, TypeOf(g, v).dims.size());
  if (max_rank != dims.size()) return false;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (IsOne(dims[d])) continue;
    bool found = false;
    for (int v : leaves) {
      const auto& t = TypeOf(g, v).dims;
      const size_t lead = dims.size() - t.size();
      found = found || (d >= lead && t[d - lead] == dims[d]);
    }
    if (!found) return false;
  }
  return true;
}

// Emits the program of `group` (members in topological order): SSA temporaries first, then
// registers by linear scan (a temporary's register is free after its last read).
bool BuildProgram(const Graph& g, const std::vector<int>& members, const std::vector<Lowering>& lowered,
                  std::vector<int>* inputs, EwProgram* prog) {
  struct Tmp {
    EwOp op;
    int a = 0, b = 0;  // temporaries (unary/binary), input index (kLoad), constant index (kConst)
    int param = 0;
  };
  std::vector<Tmp> code;
  std::map<int, int> temp_of;  // value -> temporary
  std::vector<float>& consts = prog->constants;
  auto constant = [&](float c) {
    for (size_t i = 0; i < consts.size(); ++i)
      if (std::memcmp(&consts[i], &c, sizeof c) == 0) return static_cast<int>(i);
    consts.push_back(c);
    return static_cast<int>(consts.size()) - 1;
  };
  auto operand = [&](int v) {
    if (auto it = temp_of.find(v); it != temp_of.end()) return it->second;
    float c;
    Tmp t;
    if (ScalarConstant(g, v, &c)) {
      t = {EwOp::kConst, constant(c)};
    } else {
      auto pos = std::find(inputs->begin(), inputs->end(), v);
      if (pos == inputs->end()) pos = inputs->insert(pos, v);
      t = {EwOp::kLoad, static_cast<int>(pos - inputs->begin())};
    }
    code.push_back(t);
    return temp_of[v] = static_cast<int>(code.size()) - 1;
  };
  for (size_t m = 0; m < members.size(); ++m) {
    const Node& n = g.nodes[static_cast<size_t>(members[m])];
    const Lowering& l = lowered[m];
    Tmp t{l.op};
    t.a = operand(n.inputs[0]);
    if (l.data_inputs == 2) t.b = operand(n.inputs[1]);
    if (l.params.size() == 1) {
      t.param = constant(l.params[0]);
    } else if (!l.params.empty()) {  // several parameters must be contiguous: appended as they are
      t.param = static_cast<int>(consts.size());
      consts.insert(consts.end(), l.params.begin(), l.params.end());
    }
    code.push_back(t);
    temp_of[n.outputs[0]] = static_cast<int>(code.size()) - 1;
  }
  // Linear scan: last read of each temporary, then reuse freed registers.
  std::vector<int> last(code.size(), -1);
  for (size_t i = 0; i < code.size(); ++i) {
    if (EwIsUnary(code[i].op) || EwIsBinary(code[i].op)) last[static_cast<size_t>(code[i].a)] = static_cast<int>(i);
    if (EwIsBinary(code[i].op)) last[static_cast<size_t>(code[i].b)] = static_cast<int>(i);
  }
  std::vector<int> reg(code.size(), -1), free_regs;
  int used = 0;
  for (size_t i = 0; i < code.size(); ++i) {
    const Tmp& t = code[i];
    EwInstr in{t.op, 0, t.a, t.param};
    if (EwIsUnary(t.op) || EwIsBinary(t.op)) in.a = reg[static_cast<size_t>(t.a)];
    if (EwIsBinary(t.op)) in.b = reg[static_cast<size_t>(t.b)];
    // Operands read for the last time here free their registers before the result takes one.
    std::vector<int> sources;
    if (EwIsUnary(t.op) || EwIsBinary(t.op)) sources.push_back(t.a);
    if (EwIsBinary(t.op) && t.b != t.a) sources.push_back(t.b);
    for (int src : sources)
      if (last[static_cast<size_t>(src)] == static_cast<int>(i)) free_regs.push_back(reg[static_cast<size_t>(src)]);
    if (free_regs.empty()) {
      reg[i] = used++;
    } else {
      reg[i] = free_regs.back();
      free_regs.pop_back();
    }
    in.dst = reg[i];
    prog->code.push_back(in);
  }
  prog->num_registers = used;
  return used <= kEwMaxRegisters && prog->code.size() <= static_cast<size_t>(kEwMaxInstructions) &&
         inputs->size() <= static_cast<size_t>(kEwMaxInputs) && consts.size() <= static_cast<size_t>(kEwMaxConstants);
}

// The members in depth-first post-order from the root (operands before readers, one subtree
// finished before the next starts), which keeps few temporaries alive: a balanced tree of n leaves
// needs about log2(n) registers, where a level-by-level order would need n / 2.
// `in` marks the members with 1; visited members are marked 2.
std::vector<int> PostOrder(const Graph& g, const Analysis& a, int root, std::vector<char>& in) {
  std::vector<int> out;
  in[static_cast<size_t>(root)] = 2;
  std::vector<std::pair<int, size_t>> stack = {{root, 0}};  // node, next input to visit
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    const Node& node = g.nodes[static_cast<size_t>(n)];
    if (next < node.inputs.size()) {
      const int v = node.inputs[next++];
      const int p = v == kNoValue ? kNoValue : a.producer[static_cast<size_t>(v)];
      if (p != kNoValue && in[static_cast<size_t>(p)] == 1) {
        in[static_cast<size_t>(p)] = 2;
        stack.push_back({p, 0});  // `n` and `next` are not used after this
      }
      continue;
    }
    out.push_back(n);
    stack.pop_back();
  }
  return out;
}

}  // namespace

int FuseElementwise(Graph& g) {
  const Analysis a = Analyze(g);
  const std::vector<int> order = g.TopologicalOrder();
  std::vector<Lowering> lowering(g.nodes.size());
  std::vector<char> fusable(g.nodes.size(), 0), taken(g.nodes.size(), 0), removed(g.nodes.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n) fusable[n] = Lower(g, g.nodes[n], &lowering[n]);

  int groups = 0;
  std::vector<char> in(g.nodes.size(), 0);  // members of the group being built (cleared after each)
  std::vector<int> members;
  // Roots from the end, so each group reaches as far upstream as it can.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    for (int m : members) in[static_cast<size_t>(m)] = 0;
    members.clear();
    const size_t root = static_cast<size_t>(*it);
    if (!fusable[root] || taken[root]) continue;
    const Node& rn = g.nodes[root];
    const TensorType& rt = TypeOf(g, rn.outputs[0]);
    if (!OperandsFit(g, rn, lowering[root], rt.dims, rt.dtype)) continue;
    members.push_back(static_cast<int>(root));
    in[root] = 1;
    // Grow to a fixed point: a producer joins when it is fusable, has the group's shape, its
    // operands fit, and every reader of its output is already a member (and it is no graph output).
    for (bool grew = true; grew && members.size() < kMaxGroupNodes;) {
      grew = false;
      for (size_t m = 0; m < members.size() && members.size() < kMaxGroupNodes; ++m) {
        for (int v : g.nodes[static_cast<size_t>(members[m])].inputs) {
          if (v == kNoValue || a.producer[static_cast<size_t>(v)] == kNoValue) continue;
          const size_t p = static_cast<size_t>(a.producer[static_cast<size_t>(v)]);
          if (in[p] || taken[p] || !fusable[p] || a.is_output[static_cast<size_t>(v)]) continue;
          const TensorType& pt = TypeOf(g, v);
          if (pt.dtype != rt.dtype || pt.dims != rt.dims) continue;
          bool private_value = true;
          for (int c : a.consumers[static_cast<size_t>(v)]) private_value = private_value && in[static_cast<size_t>(c)];
          if (!private_value || !OperandsFit(g, g.nodes[p], lowering[p], rt.dims, rt.dtype)) continue;
          in[p] = 1;
          members.push_back(static_cast<int>(p));
          grew = true;
        }
      }
    }
    if (members.size() < 2) continue;
    members = PostOrder(g, a, static_cast<int>(root), in);
    std::vector<Lowering> lowered;
    for (int m : members) lowered.push_back(lowering[static_cast<size_t>(m)]);
    std::vector<int> inputs;
    EwProgram prog;
    if (!BuildProgram(g, members, lowered, &inputs, &prog) || inputs.empty() || !LeavesSpan(g, inputs, rt.dims))
      continue;
    // The root becomes the fused node (it keeps its output and its place); the others go.
    for (int m : members) {
      taken[static_cast<size_t>(m)] = 1;
      if (static_cast<size_t>(m) != root) removed[static_cast<size_t>(m)] = 1;
    }
    Node& fused = g.nodes[root];
    MakeOneflowOp(g, fused, op::kFusedElementwise);
    fused.inputs = inputs;
    prog.ToAttrs(fused.attrs);
    ++groups;
  }
  if (groups > 0) RemoveMarkedNodes(g, removed);
  return groups;
}

}  // namespace oneflow
