// The opset 1-12 -> 13 upgrade of imported ONNX nodes (onnx_legacy.h).
#include "serialize/onnx_legacy.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"

namespace oneflow {
namespace {

Tensor Int64s(const std::vector<int64_t>& v) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

// Rewrites one graph's nodes; new nodes are inserted where the node they replace stood.
class Upgrader {
 public:
  Upgrader(Graph& g, int from) : g_(g), from_(from) {}

  void Run() {
    std::vector<Node> old = std::move(g_.nodes);
    g_.nodes.clear();
    for (Node& n : old) {
      if (!n.domain.empty()) {
        g_.nodes.push_back(std::move(n));
        continue;
      }
      n.opset = from_;
      if (from_ < 7) UpgradeToOpset7(n);
      Upgrade(n);
      n.opset = 13;
      g_.nodes.push_back(std::move(n));
    }
    g_.opset_imports[""] = 13;
  }

 private:
  [[noreturn]] void Refuse(const Node& n, const std::string& why) const {
    Fail(ErrorCode::kUnsupported, n.Describe(), ": ", why, " (the model's opset ", from_,
         " is upgraded to opset 13 at import)");
  }

  // Removes attribute `name` from `n` and returns it (nullopt when absent).
  static std::optional<Attribute> Take(Node& n, const std::string& name, AttrKind kind) {
    const Attribute* a = n.attrs.find(name);
    if (!a) return std::nullopt;
    OF_CHECK(a->kind == kind, kInvalidModel, n.Describe(), ": attribute '", name, "' is ", AttrKindName(a->kind),
             ", expected ", AttrKindName(kind));
    std::optional<Attribute> taken = *a;
    n.attrs.erase(name);
    return taken;
  }

  int Constant(const Node& n, const std::string& what, Tensor t) {
    return g_.AddConstant(g_.UniqueName((n.name.empty() ? n.op_type : n.name) + "/" + what), std::move(t));
  }

  // A default-domain opset-13 node.
  static Node NewNode(std::string name, const char* op, std::vector<int> inputs, std::vector<int> outputs) {
    Node n;
    n.name = std::move(name);
    n.op_type = op;
    n.opset = 13;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    return n;
  }

  // Input `slot` of `n` becomes `value` (inputs before it that are absent become omitted).
  static void SetInput(Node& n, size_t slot, int value) {
    if (n.inputs.size() <= slot) n.inputs.resize(slot + 1, kNoValue);
    n.inputs[slot] = value;
  }

  // A scalar of the dtype of `n`'s first input where the graph knows it (an input or a constant);
  // else float32. Pad-2 and Clip-6 take floating inputs only, which every such value fits.
  Tensor ScalarLikeInput(const Node& n, double v) const {
    DType dt = DType::kFloat32;
    if (!n.inputs.empty() && n.inputs[0] != kNoValue) {
      const Value& x = g_.values[static_cast<size_t>(n.inputs[0])];
      if (x.type.dtype != DType::kUndefined) dt = x.type.dtype;
    }
    OF_CHECK(dt == DType::kFloat32 || dt == DType::kFloat16 || dt == DType::kFloat64, kInvalidModel, n.Describe(),
             " takes float16, float32 or float64 at opset ", from_, "; its input is ", DTypeName(dt));
    return Tensor::Scalar(dt, v);
  }

  void AttributeToInts(Node& n, const char* attr, size_t slot, bool required) {
    if (const std::optional<Attribute> a = Take(n, attr, AttrKind::kInts)) {
      SetInput(n, slot, Constant(n, attr, Int64s(a->ints)));
    } else if (required) {
      Fail(ErrorCode::kInvalidModel, n.Describe(), " needs the attribute '", attr, "'");
    }
  }

  // The default-domain versions of opsets 2 to 7 (onnx.defs): an op listed with a version above the
  // model's opset changed meaning or spelling between that opset and 7. Ops absent here were the
  // same from opset 1 to 7 (or did not exist yet).
  static const std::vector<int>* NewerVersionsUpTo7(const std::string& op) {
    static const std::map<std::string, std::vector<int>> kVersions = {
        {"Abs", {6}}, {"Add", {6, 7}}, {"And", {7}}, {"AveragePool", {7}}, {"BatchNormalization", {6, 7}},
        {"Cast", {6}}, {"Ceil", {6}}, {"Clip", {6}}, {"Concat", {4}}, {"Div", {6, 7}}, {"Dropout", {6, 7}},
        {"Elu", {6}}, {"Equal", {7}}, {"Exp", {6}}, {"Floor", {6}}, {"Gemm", {6, 7}}, {"GlobalLpPool", {2}},
        {"Greater", {7}}, {"GRU", {3, 7}}, {"HardSigmoid", {6}}, {"InstanceNormalization", {6}},
        {"LeakyRelu", {6}}, {"Less", {7}}, {"Log", {6}}, {"LpPool", {2}}, {"LSTM", {7}}, {"Max", {6}},
        {"Mean", {6}}, {"Min", {6}}, {"Mul", {6, 7}}, {"Neg", {6}}, {"Or", {7}}, {"Pad", {2}}, {"Pow", {7}},
        {"PRelu", {6, 7}}, {"Reciprocal", {6}}, {"Relu", {6}}, {"Reshape", {5}}, {"RNN", {7}}, {"Selu", {6}},
        {"Sigmoid", {6}}, {"Split", {2}}, {"Sqrt", {6}}, {"Sub", {6, 7}}, {"Sum", {6}}, {"Tanh", {6}},
        {"Tile", {6}}, {"Upsample", {7}}, {"Xor", {7}}};
    const auto it = kVersions.find(op);
    return it == kVersions.end() ? nullptr : &it->second;
  }

  // Opsets 1-6: `n` in its opset-7 form, or refused where the older meaning is not reproduced.
  // `consumed_inputs` (opsets 1-5) and `is_test` (before 7) only described memory reuse and the
  // inference mode this engine runs in, so they go; the rest is op by op.
  void UpgradeToOpset7(Node& n) {
    const std::string& op = n.op_type;
    const std::vector<int>* versions = NewerVersionsUpTo7(op);
    n.attrs.erase("consumed_inputs");
    if (versions == nullptr || versions->back() <= from_) return;
    static const std::set<std::string> kBroadcastAttrOps = {"Add", "Sub", "Mul", "Div", "Pow", "And",
                                                            "Or", "Xor", "Equal", "Greater", "Less"};
    if (kBroadcastAttrOps.count(op)) {
      // Before 7, B broadcast only with broadcast=1, aligned with A's trailing dimensions unless
      // `axis` said where; with broadcast=0 the shapes were equal. Both agree with numpy's rules.
      const std::optional<Attribute> broadcast = Take(n, "broadcast", AttrKind::kInt);
      if (const std::optional<Attribute> axis = Take(n, "axis", AttrKind::kInt); axis && broadcast && broadcast->i)
        Refuse(n, "broadcasting B along axis " + std::to_string(axis->i) +
                      " is not reproduced (onnx.version_converter can convert the model to opset 7 or newer)");
    } else if (op == "Gemm") {
      Take(n, "broadcast", AttrKind::kInt);  // C was full-sized or broadcast: opset 7 allows both
    } else if (op == "Dropout" || op == "BatchNormalization") {
      n.attrs.erase("is_test");
    } else if (op == "Concat") {
      if (!n.attrs.has("axis")) n.attrs.set("axis", Attribute::Int(1));  // optional before opset 4
    } else if (op == "Reshape") {
      AttributeToInts(n, "shape", 1, true);  // an attribute before opset 5
    } else if (op == "Pad") {
      if (std::optional<Attribute> paddings = Take(n, "paddings", AttrKind::kInts)) n.attrs.set("pads", *paddings);
    } else if (op == "Split") {
      if (n.inputs.size() > 1) Refuse(n, "Split-1's second input 'split' is not reproduced");
    } else if (op == "Cast") {
      const std::optional<Attribute> to = Take(n, "to", AttrKind::kString);
      if (!to) Fail(ErrorCode::kInvalidModel, n.Describe(), " needs the attribute 'to'");
      n.attrs.set("to", Attribute::Int(OnnxDataTypeCode(n, to->s)));
    } else if (op == "AveragePool") {
      // AveragePool-7 added count_include_pad, its default the old behaviour.
    } else if (op == "RNN" || op == "GRU" || op == "LSTM") {
      // Opset 7 made Y an optional output in place of output_sequence; GRU-3 added
      // linear_before_reset, its default the old behaviour.
      n.attrs.erase("output_sequence");
    } else if (versions->front() == 6 && versions->size() == 1 && op != "Tile") {
      // Opset 6 only dropped consumed_inputs (gone above) and widened the types.
    } else {
      Refuse(n, op + " changed meaning at opset " + std::to_string(versions->back()) +
                    "; its older form is not reproduced (onnx.version_converter can convert the model)");
    }
  }

  // Scan-8 scans a batch: its states are [B, ...] and its scan inputs [B, sequence, ...], and the
  // body sees one batch row. Opset 9 dropped the batch axis; the same computation is an outer Scan
  // over the batch (every input scanned along axis 0, its outputs stacked along axis 0) whose body
  // runs the original Scan on one row:
  //   Scan-8(lens, states, inputs) = Scan(body: Scan(state rows, input rows; original body))(states, inputs)
  void UpgradeBatchedScan(Node& n) {
    const size_t captured = CapturedInputCount(n.attrs);
    const size_t declared = n.inputs.size() - captured;
    const std::optional<Attribute> scans = Take(n, "num_scan_inputs", AttrKind::kInt);
    if (!scans || scans->i < 1 || static_cast<size_t>(scans->i) + 1 > declared)
      Fail(ErrorCode::kInvalidModel, n.Describe(), ": num_scan_inputs must be in [1, ", declared - 1, "]");
    if (n.inputs[0] != kNoValue)
      Refuse(n, "Scan-8's sequence_lens is not reproduced (every batch row scans the whole sequence)");
    const std::optional<Attribute> directions = Take(n, "directions", AttrKind::kInts);
    const Attribute* body = n.attrs.find("body");
    if (!body || body->kind != AttrKind::kGraph) Fail(ErrorCode::kInvalidModel, n.Describe(), " needs a graph 'body'");

    auto row = std::make_shared<Graph>();
    row->name = n.name.empty() ? "scan8_row" : n.name + "_row";
    row->opset_imports[""] = 13;
    Node inner = NewNode(n.name, "Scan", {}, {});
    std::vector<int> outer_values;  // the outer values the body reads, under their own names
    for (size_t i = declared; i < n.inputs.size(); ++i)
      outer_values.push_back(row->AddValue(g_.values[static_cast<size_t>(n.inputs[i])].name));
    for (size_t i = 1; i < declared; ++i)  // one row of each state and scan input
      row->inputs.push_back(row->AddValue(row->UniqueName("row_" + std::to_string(i - 1))));
    row->inputs.insert(row->inputs.end(), outer_values.begin(), outer_values.end());
    inner.inputs = row->inputs;
    row->captured_inputs = captured;
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      const int v = row->AddValue(row->UniqueName("row_out_" + std::to_string(o)));
      row->outputs.push_back(v);
      inner.outputs.push_back(v);
    }
    inner.attrs.set("body", *body);
    inner.attrs.set("num_scan_inputs", Attribute::Int(scans->i));
    if (directions) inner.attrs.set("scan_input_directions", *directions);
    row->nodes.push_back(std::move(inner));

    n.inputs.erase(n.inputs.begin());  // sequence_lens
    n.attrs.set("num_scan_inputs", Attribute::Int(static_cast<int64_t>(declared - 1)));
    n.attrs.set("body", Attribute::Subgraph(std::move(row)));
  }

  // Cast before opset 6 named its target type; the codes are TensorProto.DataType's.
  static int64_t OnnxDataTypeCode(const Node& n, const std::string& name) {
    static const std::map<std::string, int64_t> kCodes = {
        {"FLOAT", 1},  {"UINT8", 2},   {"INT8", 3},     {"UINT16", 4}, {"INT16", 5},   {"INT32", 6},  {"INT64", 7},
        {"STRING", 8}, {"BOOL", 9},    {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}};
    const auto it = kCodes.find(name);
    OF_CHECK(it != kCodes.end(), kInvalidModel, n.Describe(), ": Cast's 'to' names no data type: '", name, "'");
    return it->second;
  }

  void Upgrade(Node& n) {
    const std::string& op = n.op_type;
    if (op == "Split") {
      AttributeToInts(n, "split", 1, false);
    } else if (op == "Squeeze" || op == "ReduceSum") {
      AttributeToInts(n, "axes", 1, false);
    } else if (op == "Unsqueeze") {
      AttributeToInts(n, "axes", 1, true);
    } else if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
      UpgradeCoercedAxis(n);
    } else if (op == "Dropout" && from_ < 12) {
      const std::optional<Attribute> ratio = Take(n, "ratio", AttrKind::kFloat);
      if (ratio) SetInput(n, 1, Constant(n, "ratio", Tensor::Scalar(DType::kFloat32, ratio->f)));
    } else if (op == "Pad" && from_ < 11) {
      AttributeToInts(n, "pads", 1, true);
      const std::optional<Attribute> value = Take(n, "value", AttrKind::kFloat);
      if (value && value->f != 0.0f) SetInput(n, 2, Constant(n, "value", ScalarLikeInput(n, value->f)));
    } else if (op == "Clip" && from_ < 11) {
      const std::optional<Attribute> lo = Take(n, "min", AttrKind::kFloat);
      if (lo) SetInput(n, 1, Constant(n, "min", ScalarLikeInput(n, lo->f)));
      const std::optional<Attribute> hi = Take(n, "max", AttrKind::kFloat);
      if (hi) SetInput(n, 2, Constant(n, "max", ScalarLikeInput(n, hi->f)));
    } else if (op == "Slice" && from_ < 10) {
      AttributeToInts(n, "starts", 1, true);
      AttributeToInts(n, "ends", 2, true);
      AttributeToInts(n, "axes", 3, false);
    } else if (op == "TopK" && from_ < 10) {
      const std::optional<Attribute> k = Take(n, "k", AttrKind::kInt);
      if (!k) Fail(ErrorCode::kInvalidModel, n.Describe(), " needs the attribute 'k'");
      SetInput(n, 1, Constant(n, "k", Int64s({k->i})));
    } else if (op == "Scan" && from_ < 9) {
      UpgradeBatchedScan(n);
    } else if (op == "Upsample" || (op == "Resize" && from_ < 11)) {
      UpgradeUpsample(n);
    } else if (op == "Scatter") {
      n.op_type = "ScatterElements";
    } else if (op == "BatchNormalization") {
      const std::optional<Attribute> spatial = Take(n, "spatial", AttrKind::kInt);
      if (spatial && spatial->i != 1) Refuse(n, "spatial = 0 (statistics per element, not per channel) is not supported");
    }
  }

  // Before opset 13 these ops flatten the input to 2-D at `axis` (default 1) and normalize each
  // row. With `axis` -1 that is the last axis, as in opset 13; otherwise the node becomes
  // Shape(x); Flatten(x, axis) -> op(axis=-1) -> Reshape to the shape of x.
  void UpgradeCoercedAxis(Node& n) {
    const std::optional<Attribute> axis = Take(n, "axis", AttrKind::kInt);
    const int64_t a = axis ? axis->i : 1;
    n.attrs.set("axis", Attribute::Int(-1));
    if (a == -1) return;
    OF_CHECK(!n.inputs.empty() && n.inputs[0] != kNoValue && !n.outputs.empty() && n.outputs[0] != kNoValue,
             kInvalidModel, n.Describe(), " needs an input and an output");
    const std::string base = n.name.empty() ? n.op_type : n.name;
    const int x = n.inputs[0], y = n.outputs[0];
    const int shape = g_.AddValue(g_.UniqueName(base + "/shape"));
    const int flat = g_.AddValue(g_.UniqueName(base + "/2d"));
    const int flat_out = g_.AddValue(g_.UniqueName(base + "/2d_out"));
    g_.nodes.push_back(NewNode(base + "/shape", "Shape", {x}, {shape}));
    Node f = NewNode(base + "/flatten", "Flatten", {x}, {flat});
    f.attrs.set("axis", Attribute::Int(a));
    g_.nodes.push_back(std::move(f));
    n.inputs[0] = flat;
    n.outputs[0] = flat_out;
    Node r = NewNode(base + "/reshape", "Reshape", {flat_out, shape}, {y});
    n.opset = 13;
    g_.nodes.push_back(std::move(n));
    n = std::move(r);  // Run pushes it after the op
  }

  // Upsample-7 (`scales` attribute), Upsample-9/10 and Resize-10 (`scales` input): output index i
  // of a dimension reads input floor(i / scale) (nearest), or interpolates linearly between the
  // input points at i / scale (linear): Resize-13's "asymmetric" transformation.
  void UpgradeUpsample(Node& n) {
    OF_CHECK(!n.inputs.empty() && n.inputs[0] != kNoValue, kInvalidModel, n.Describe(), " has no input X");
    int scales = n.inputs.size() > 1 ? n.inputs[1] : kNoValue;
    if (const std::optional<Attribute> s = Take(n, "scales", AttrKind::kFloats)) {
      Tensor t(DType::kFloat32, {static_cast<int64_t>(s->floats.size())});
      for (size_t i = 0; i < s->floats.size(); ++i) t.data<float>()[i] = s->floats[i];
      scales = Constant(n, "scales", t);
    }
    if (scales == kNoValue) Fail(ErrorCode::kInvalidModel, n.Describe(), " has no scales");
    const std::optional<Attribute> mode = Take(n, "mode", AttrKind::kString);
    const std::string m = mode ? mode->s : "nearest";
    if (m != "nearest" && m != "linear") Refuse(n, "mode '" + m + "' (nearest or linear)");
    const Value& sv = g_.values[static_cast<size_t>(scales)];
    if (sv.constant.defined() && sv.constant.dtype() == DType::kFloat32 && m == "nearest")
      for (int64_t i = 0; i < sv.constant.numel(); ++i)
        if (sv.constant.data<float>()[i] < 1.0f)
          Refuse(n, "nearest downsampling (a scale below 1) rounds differently before opset 11");
    n.op_type = "Resize";
    n.inputs = {n.inputs[0], kNoValue, scales};
    n.attrs.set("mode", Attribute::String(m));
    n.attrs.set("coordinate_transformation_mode", Attribute::String("asymmetric"));
    if (m == "nearest") n.attrs.set("nearest_mode", Attribute::String("floor"));
  }

  Graph& g_;
  const int from_;
};

}  // namespace

void UpgradeLegacyOnnxOpset(Graph& g, int from) {
  OF_CHECK(from >= kMinLegacyOnnxOpset && from < 13, kInternal, "opset ", from, " is not a legacy opset");
  Upgrader(g, from).Run();
}

}  // namespace oneflow
