// QDQ fusion: a quantized model in the QDQ format (what onnxruntime.quantization.quantize_static
// writes by default, and what PyTorch's and TensorRT's toolchains export) spells each integer op as
// float: DequantizeLinear on its inputs, the float op, QuantizeLinear on its output. Run as written
// that is three passes over the data in float; onnxruntime rewrites the groups into its integer
// ops, and so does this pass:
//   DQ(x), DQ(w const) [, DQ(b int32 const)] -> Conv -> Q   =>  QLinearConv
//   DQ(a), DQ(b)        -> MatMul -> Q                      =>  QLinearMatMul
//   DQ(a), DQ(b)        -> Add -> Q                         =>  com.microsoft QLinearAdd
//   DQ(x)               -> GlobalAveragePool -> Q           =>  com.microsoft QLinearGlobalAveragePool
//   DQ(x) -> MaxPool / Flatten / Reshape / Transpose / (Un)Squeeze / Identity -> Q, both with the
//   same scale and zero point                               =>  the op on the quantized tensor
// and quantize_dynamic's spelling of a MatMul (DynamicQuantizeLinear, MatMulInteger, Cast, two
// Muls) => com.microsoft DynamicQuantizeMatMul.
// The fused op reads the DQ nodes' inputs (their quantized tensors, scales and zero points) and
// writes the Q node's output; the DQ nodes stay for any other reader and are otherwise removed as
// dead code. Results may differ from the unfused float path by one quantization step (one
// rounding instead of two), as onnxruntime's do.
//
// What qualifies: 8-bit (u)int8 tensors with float32 scales, activations per tensor; Conv weights
// per tensor or per output channel (axis 0), MatMul's B per tensor or per column (axis 1); the
// float op's output read only by the Q node; a Conv bias quantized as int32 with zero points 0.
#include <string>
#include <vector>

#include "graph/op_schema.h"
#include "passes/pass_util.h"
#include "passes/passes.h"

namespace oneflow {
namespace {

bool Is8Bit(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

const Tensor* ConstantValue(const Graph& g, int v) {
  if (v == kNoValue) return nullptr;
  const Tensor& t = g.values[static_cast<size_t>(v)].constant;
  return t.defined() ? &t : nullptr;
}

// A DequantizeLinear feeding an op, with what the fused op needs from it.
struct Dequantized {
  int quantized = kNoValue, scale = kNoValue, zero_point = kNoValue;  // zero_point may be kNoValue
  DType type = DType::kUndefined;
  bool per_tensor = true;
  int64_t axis = 1;
};

// Whether value `v` is the output of a DequantizeLinear of 8-bit data (or int32 when `allow_int32`)
// with a float32 scale; fills `out`.
bool FromDequantize(const Graph& g, const std::vector<int>& producer, int v, Dequantized& out, bool allow_int32 = false) {
  if (v == kNoValue || producer[static_cast<size_t>(v)] < 0) return false;
  const Node& dq = g.nodes[static_cast<size_t>(producer[static_cast<size_t>(v)])];
  if (dq.op_type != op::kDequantizeLinear || !dq.domain.empty() || dq.attrs.GetInt("block_size", 0) != 0) return false;
  out.quantized = dq.inputs[0];
  out.scale = dq.inputs[1];
  out.zero_point = dq.has_input(2) ? dq.inputs[2] : kNoValue;
  out.type = g.values[static_cast<size_t>(out.quantized)].type.dtype;
  if (!(Is8Bit(out.type) || (allow_int32 && out.type == DType::kInt32))) return false;
  const TensorType& st = g.values[static_cast<size_t>(out.scale)].type;
  if (st.dtype != DType::kFloat32 || !st.has_rank) return false;
  int64_t n = 1;
  for (const Dim& d : st.dims) {
    if (!d.known()) return false;
    n *= d.value;
  }
  out.per_tensor = n == 1;
  if (!out.per_tensor && st.rank() != 1) return false;
  out.axis = dq.attrs.GetInt("axis", 1);
  return true;
}

// A QuantizeLinear to 8 bits with a float32 per-tensor scale, the sole reader of `v`.
const Node* ToQuantize(const Graph& g, const ValueUses& r, int v) {
  const size_t i = static_cast<size_t>(v);
  if (r.consumers[i] != 1 || r.is_output[i]) return nullptr;
  const Node& q = g.nodes[static_cast<size_t>(r.consumer[i])];
  if (q.op_type != op::kQuantizeLinear || !q.domain.empty() || q.inputs[0] != v) return nullptr;
  if (!Is8Bit(g.values[static_cast<size_t>(q.outputs[0])].type.dtype)) return nullptr;
  const TensorType& st = g.values[static_cast<size_t>(q.inputs[1])].type;
  if (st.dtype != DType::kFloat32 || !st.has_rank || st.rank() > 1 || (st.rank() == 1 && !(st.dims[0].known() && st.dims[0].value == 1)))
    return nullptr;
  if (q.attrs.GetInt("block_size", 0) != 0 || q.attrs.GetInt("precision", 0) != 0) return nullptr;
  return &q;
}

// The zero point of a DQ/Q, or a new 0 constant of `type` when it has none.
int ZeroPointOrZero(Graph& g, int zero_point, DType type, const std::string& base) {
  if (zero_point != kNoValue) return zero_point;
  return g.AddConstant(g.UniqueName(base + "_zero_point"), Tensor::Scalar(type, 0.0));
}

class QdqFuser {
 public:
  explicit QdqFuser(Graph& g) : g_(g), readers_(CountValueUses(g)), removed_(g.nodes.size(), 0) {
    producer_.assign(g.values.size(), -1);
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (int v : g.nodes[n].outputs)
        if (v != kNoValue) producer_[static_cast<size_t>(v)] = static_cast<int>(n);
  }

  int Run() {
    int fused = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (!removed_[i] && g_.nodes[i].op_type == op::kMatMulInteger && g_.nodes[i].domain.empty())
        fused += FuseDynamicMatMul(g_.nodes[i]) ? 1 : 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      Node& n = g_.nodes[i];
      if (removed_[i] || !n.domain.empty() || n.outputs.empty() || n.outputs[0] == kNoValue) continue;
      const Node* q = ToQuantize(g_, readers_, n.outputs[0]);
      if (!q || removed_[static_cast<size_t>(q - g_.nodes.data())]) continue;
      bool done = false;
      if (n.op_type == op::kConv) done = FuseConv(n, *q);
      else if (n.op_type == op::kMatMul) done = FuseMatMul(n, *q);
      else if (n.op_type == op::kAdd) done = FuseAdd(n, *q);
      else if (n.op_type == op::kGlobalAveragePool) done = FuseGlobalAveragePool(n, *q);
      else if (IsOrderPreserving(n)) done = FuseOrderPreserving(n, *q);
      if (done) {
        removed_[static_cast<size_t>(q - g_.nodes.data())] = 1;
        ++fused;
      }
    }
    RemoveMarkedNodes(g_, removed_);
    return fused;
  }

 private:
  // Rewrites `n` in place into `op` with `inputs`, writing q's output.
  void Become(Node& n, const Node& q, OpId op, std::vector<int> inputs) {
    n.op_type = OpName(op);
    n.domain = OpDomain(op);
    n.opset = n.domain.empty() ? n.opset : 1;
    if (!n.domain.empty()) g_.opset_imports.emplace(n.domain, 1);
    n.schema = nullptr;
    n.inputs = std::move(inputs);
    n.outputs = {q.outputs[0]};
  }

  int Zero(const Dequantized& d, const std::string& base) { return ZeroPointOrZero(g_, d.zero_point, d.type, base); }
  int QZero(const Node& q, DType type) {
    return ZeroPointOrZero(g_, q.has_input(2) ? q.inputs[2] : kNoValue, type, q.name.empty() ? "q" : q.name);
  }
  DType QType(const Node& q) const { return g_.values[static_cast<size_t>(q.outputs[0])].type.dtype; }

  bool FuseConv(Node& conv, const Node& q) {
    Dequantized x, w, b;
    if (!FromDequantize(g_, producer_, conv.inputs[0], x) || !x.per_tensor) return false;
    if (!FromDequantize(g_, producer_, conv.inputs[1], w) || !ConstantValue(g_, w.quantized)) return false;
    if (!w.per_tensor && w.axis != 0) return false;
    const int rank = static_cast<int>(g_.values[static_cast<size_t>(w.quantized)].constant.rank());
    if (rank < 3 || rank > 5) return false;
    int bias = kNoValue;
    if (conv.has_input(2)) {  // the int32 bias quantize_static writes (scale x_scale * w_scale, zero point 0)
      if (!FromDequantize(g_, producer_, conv.inputs[2], b, true) || b.type != DType::kInt32) return false;
      const Tensor* bz = ConstantValue(g_, b.zero_point);
      if (b.zero_point != kNoValue && (!bz || bz->ToInt64Vector() != std::vector<int64_t>(static_cast<size_t>(bz->numel()), 0)))
        return false;
      bias = b.quantized;
    }
    const std::string base = conv.name.empty() ? "conv" : conv.name;
    std::vector<int> inputs = {x.quantized, x.scale, Zero(x, base + "_x"), w.quantized, w.scale, Zero(w, base + "_w"),
                               q.inputs[1], QZero(q, QType(q))};
    if (bias != kNoValue) inputs.push_back(bias);
    AttrMap attrs = conv.attrs;  // Conv's geometry attributes carry over as they are
    Become(conv, q, OpId::kQLinearConv, std::move(inputs));
    conv.attrs = std::move(attrs);
    return true;
  }

  bool FuseMatMul(Node& mm, const Node& q) {
    Dequantized a, b;
    if (!FromDequantize(g_, producer_, mm.inputs[0], a) || !a.per_tensor) return false;
    if (!FromDequantize(g_, producer_, mm.inputs[1], b)) return false;
    if (!b.per_tensor && !(b.axis == 1 || b.axis == -1)) return false;
    if (!b.per_tensor && g_.values[static_cast<size_t>(b.quantized)].type.rank() != 2) return false;
    const std::string base = mm.name.empty() ? "matmul" : mm.name;
    Become(mm, q, OpId::kQLinearMatMul, {a.quantized, a.scale, Zero(a, base + "_a"), b.quantized, b.scale,
                                         Zero(b, base + "_b"), q.inputs[1], QZero(q, QType(q))});
    mm.attrs = AttrMap();
    return true;
  }

  bool FuseAdd(Node& add, const Node& q) {
    Dequantized a, b;
    if (!FromDequantize(g_, producer_, add.inputs[0], a) || !a.per_tensor) return false;
    if (!FromDequantize(g_, producer_, add.inputs[1], b) || !b.per_tensor) return false;
    if (a.type != b.type || a.type != QType(q)) return false;  // QLinearAdd keeps one type throughout
    Become(add, q, OpId::kMsQLinearAdd, {a.quantized, a.scale, a.zero_point, b.quantized, b.scale, b.zero_point,
                                         q.inputs[1], q.has_input(2) ? q.inputs[2] : kNoValue});
    add.attrs = AttrMap();
    return true;
  }

  bool FuseGlobalAveragePool(Node& pool, const Node& q) {
    Dequantized x;
    if (!FromDequantize(g_, producer_, pool.inputs[0], x) || !x.per_tensor || x.type != QType(q)) return false;
    Become(pool, q, OpId::kMsQLinearGlobalAveragePool,
           {x.quantized, x.scale, x.zero_point, q.inputs[1], q.has_input(2) ? q.inputs[2] : kNoValue});
    pool.attrs = AttrMap();
    return true;
  }

  // The sole reader of value `v` (not a graph output), or nullptr.
  Node* SoleReader(int v) {
    const size_t i = static_cast<size_t>(v);
    if (v == kNoValue || readers_.consumers[i] != 1 || readers_.is_output[i]) return nullptr;
    Node* n = &g_.nodes[static_cast<size_t>(readers_.consumer[i])];
    return removed_[static_cast<size_t>(n - g_.nodes.data())] ? nullptr : n;
  }
  const Node* Producer(int v) const {
    return v == kNoValue || producer_[static_cast<size_t>(v)] < 0 ? nullptr : &g_.nodes[static_cast<size_t>(producer_[static_cast<size_t>(v)])];
  }

  // What onnxruntime.quantization.quantize_dynamic writes for a MatMul:
  //   (xq, xs, xz) = DynamicQuantizeLinear(x); s = Mul(xs, w_scale)
  //   y = Mul(Cast<float>(MatMulInteger(xq, W, xz[, w_zero_point])), s)
  // => y = com.microsoft DynamicQuantizeMatMul(x, W, w_scale[, w_zero_point]): the same arithmetic
  // (the scale product formed in float, the int32 sums times it), in one kernel instead of five
  // passes over the data. `mi` is the MatMulInteger.
  bool FuseDynamicMatMul(Node& mi) {
    const Node* dql = Producer(mi.inputs[0]);
    if (!dql || dql->op_type != op::kDynamicQuantizeLinear || !dql->domain.empty()) return false;
    if (!mi.has_input(2) || mi.inputs[2] != dql->outputs[2] || !ConstantValue(g_, mi.inputs[1])) return false;
    if (mi.has_input(3) && !ConstantValue(g_, mi.inputs[3])) return false;
    Node* cast = SoleReader(mi.outputs[0]);
    if (!cast || cast->op_type != op::kCast || cast->attrs.GetInt("to", 0) != static_cast<int64_t>(DType::kFloat32)) return false;
    Node* mul = SoleReader(cast->outputs[0]);
    if (!mul || mul->op_type != op::kMul || !mul->domain.empty() || mul->inputs.size() != 2) return false;
    const int scale = mul->inputs[0] == cast->outputs[0] ? mul->inputs[1] : mul->inputs[0];
    const Node* product = Producer(scale);
    if (!product || product->op_type != op::kMul || product->inputs.size() != 2) return false;
    const int a_scale = dql->outputs[1];
    const int w_scale = product->inputs[0] == a_scale ? product->inputs[1] : product->inputs[1] == a_scale ? product->inputs[0] : kNoValue;
    const Tensor* ws = ConstantValue(g_, w_scale);
    if (!ws || ws->dtype() != DType::kFloat32 || ws->rank() > 1) return false;
    std::vector<int> inputs = {dql->inputs[0], mi.inputs[1], w_scale};
    if (mi.has_input(3)) inputs.push_back(mi.inputs[3]);
    removed_[static_cast<size_t>(&mi - g_.nodes.data())] = 1;
    removed_[static_cast<size_t>(cast - g_.nodes.data())] = 1;
    const int y = mul->outputs[0];
    Become(*mul, *mul, OpId::kMsDynamicQuantizeMatMul, std::move(inputs));
    mul->outputs = {y};
    mul->attrs = AttrMap();
    return true;
  }

  // Ops that move or select values without arithmetic: with the same scale and zero point on both
  // sides they commute with (de)quantization, so they run on the quantized tensor as it is.
  static bool IsOrderPreserving(const Node& n) {
    if (n.op_type == op::kMaxPool) return !n.has_output(1);  // no Indices output
    return n.op_type == op::kFlatten || n.op_type == op::kReshape || n.op_type == op::kTranspose ||
           n.op_type == op::kSqueeze || n.op_type == op::kUnsqueeze || n.op_type == op::kIdentity;
  }

  // Two constant per-tensor parameters (scales, or zero points; absent = 0) with equal values.
  bool SameParameter(int a, int b) const {
    const Tensor* ta = ConstantValue(g_, a);
    const Tensor* tb = ConstantValue(g_, b);
    const double va = a == kNoValue ? 0.0 : ta && ta->numel() == 1 ? ta->GetAsDouble(0) : -1.0;
    const double vb = b == kNoValue ? 0.0 : tb && tb->numel() == 1 ? tb->GetAsDouble(0) : -2.0;
    return va == vb;
  }

  bool FuseOrderPreserving(Node& n, const Node& q) {
    Dequantized x;
    if (!FromDequantize(g_, producer_, n.inputs[0], x) || !x.per_tensor || x.type != QType(q)) return false;
    if (!SameParameter(x.scale, q.inputs[1]) || !SameParameter(x.zero_point, q.has_input(2) ? q.inputs[2] : kNoValue))
      return false;
    n.inputs[0] = x.quantized;
    n.outputs = {q.outputs[0]};
    n.schema = nullptr;
    return true;
  }

  Graph& g_;
  ValueUses readers_;
  std::vector<int> producer_;
  std::vector<char> removed_;
};

}  // namespace

int FuseQdq(Graph& g) { return QdqFuser(g).Run(); }

}  // namespace oneflow
