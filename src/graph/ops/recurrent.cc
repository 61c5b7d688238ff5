// Op family: recurrent layers (ONNX RNN, GRU, LSTM): attributes (RecurrentSpec), schemas, shape
// inference, and the gradient rule that emits the ai.oneflow <Op>Grad ops (backpropagation through
// time in kernels/cpu/recurrent.cc). Opset 7 is the form every later opset kept until 14 added
// `layout`; models of opsets 7-12 reach it through the importer's upgrade to opset 13.
#include <algorithm>
#include <cctype>
#include <string>

#include "graph/grad_context.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/recurrent_spec.h"

namespace oneflow {

const char* RecurrentCellName(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kRnn: return op::kRNN;
    case RecurrentCell::kGru: return op::kGRU;
    case RecurrentCell::kLstm: return op::kLSTM;
  }
  return "?";
}

namespace {

struct ActivationInfo {
  const char* lower_name;
  RnnActivation kind;
  bool reads_alpha, reads_beta;
  float default_alpha, default_beta;  // the defaults of the ONNX operator of that name
};

constexpr ActivationInfo kActivations[] = {
    {"relu", RnnActivation::kRelu, false, false, 0.0f, 0.0f},
    {"tanh", RnnActivation::kTanh, false, false, 0.0f, 0.0f},
    {"sigmoid", RnnActivation::kSigmoid, false, false, 0.0f, 0.0f},
    {"affine", RnnActivation::kAffine, true, true, 1.0f, 0.0f},
    {"leakyrelu", RnnActivation::kLeakyRelu, true, false, 0.01f, 0.0f},
    {"thresholdedrelu", RnnActivation::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {"scaledtanh", RnnActivation::kScaledTanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", RnnActivation::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", RnnActivation::kElu, true, false, 1.0f, 0.0f},
    {"softsign", RnnActivation::kSoftsign, false, false, 0.0f, 0.0f},
    {"softplus", RnnActivation::kSoftplus, false, false, 0.0f, 0.0f},
};

// The spec's defaults: RNN Tanh; GRU Sigmoid, Tanh; LSTM Sigmoid, Tanh, Tanh.
std::vector<std::string> DefaultActivations(RecurrentCell cell) {
  switch (cell) {
    case RecurrentCell::kRnn: return {"Tanh"};
    case RecurrentCell::kGru: return {"Sigmoid", "Tanh"};
    case RecurrentCell::kLstm: return {"Sigmoid", "Tanh", "Tanh"};
  }
  return {};
}

}  // namespace

RecurrentSpec ParseRecurrentSpec(RecurrentCell cell, const AttrMap& attrs, const std::string& node_desc) {
  auto error = [&](const auto&... args) { Fail(ErrorCode::kInvalidArgument, node_desc, ": ", args...); };
  RecurrentSpec s;
  s.cell = cell;
  s.gates = cell == RecurrentCell::kRnn ? 1 : cell == RecurrentCell::kGru ? 3 : 4;
  s.per_direction = cell == RecurrentCell::kRnn ? 1 : cell == RecurrentCell::kGru ? 2 : 3;
  const std::string direction = attrs.GetString("direction", "forward");
  if (direction == "bidirectional") {
    s.num_directions = 2;
  } else if (direction == "reverse") {
    s.reverse = true;
  } else if (direction != "forward") {
    error("direction must be forward, reverse or bidirectional, got '", direction, "'");
  }
  s.hidden_size = attrs.GetInt("hidden_size", 0);
  // The bound keeps gates * hidden (and twice that, B's length) far from int64 overflow; no
  // real layer comes near it, and a mangled file must get an error, not a wrapped shape.
  constexpr int64_t kMaxHidden = int64_t{1} << 40;
  if (s.hidden_size < 0 || s.hidden_size > kMaxHidden)
    error("hidden_size must be positive and at most 2^40, got ", s.hidden_size);
  s.clip = attrs.GetFloat("clip", 0.0f);
  if (attrs.has("clip") && !(s.clip > 0.0f)) error("clip must be a positive threshold, got ", s.clip);
  s.linear_before_reset = attrs.GetInt("linear_before_reset", 0) != 0;
  s.input_forget = attrs.GetInt("input_forget", 0) != 0;
  s.layout = static_cast<int>(attrs.GetInt("layout", 0));
  if (s.layout != 0 && s.layout != 1) error("layout must be 0 or 1, got ", s.layout);

  std::vector<std::string> names = attrs.has("activations") ? attrs.GetStrings("activations") : std::vector<std::string>{};
  if (names.empty()) {
    for (int d = 0; d < s.num_directions; ++d)
      for (const std::string& n : DefaultActivations(cell)) names.push_back(n);
  }
  const size_t want = static_cast<size_t>(s.num_directions * s.per_direction);
  if (names.size() != want)
    error("activations lists ", names.size(), " functions; a ", direction, " ", RecurrentCellName(cell), " takes ",
          want, " (", s.per_direction, " per direction)");
  const std::vector<float> alphas = attrs.GetFloats("activation_alpha", {});
  const std::vector<float> betas = attrs.GetFloats("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& a : kActivations)
      if (lower == a.lower_name) info = &a;
    if (!info)
      error("unknown activation '", name,
            "' (supported: Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
            "Softsign, Softplus)");
    RnnActivationFn fn;
    fn.kind = info->kind;
    fn.alpha = info->default_alpha;
    fn.beta = info->default_beta;
    if (info->reads_alpha && next_alpha < alphas.size()) fn.alpha = alphas[next_alpha++];
    if (info->reads_beta && next_beta < betas.size()) fn.beta = betas[next_beta++];
    s.activations.push_back(fn);
  }
  return s;
}

namespace {

// Input and output positions shared by the three ops (LSTM alone has initial_c, P and Y_c).
enum : size_t { kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitialH = 5, kInitialC = 6, kP = 7 };

RecurrentCell CellOf(const std::string& op) {
  if (op == op::kGRU || op == op::kGRUGrad) return RecurrentCell::kGru;
  if (op == op::kLSTM || op == op::kLSTMGrad) return RecurrentCell::kLstm;
  return RecurrentCell::kRnn;
}

// Checks one input's static shape against `want` (dims of -1 are not checked).
void ExpectShape(InferContext& ctx, size_t i, const char* name, const std::vector<int64_t>& want) {
  const TensorType& t = ctx.input_type(i);
  if (!t.has_rank) return;
  bool ok = static_cast<size_t>(t.rank()) == want.size();
  for (size_t d = 0; ok && d < want.size(); ++d)
    if (want[d] >= 0 && t.dims[d].known() && t.dims[d].value != want[d]) ok = false;
  if (!ok) {
    std::string w = "[";
    for (size_t d = 0; d < want.size(); ++d) w += (d ? ", " : "") + (want[d] < 0 ? std::string("?") : std::to_string(want[d]));
    ctx.Error(name, " must have shape ", w, "], got ", t.ToString());
  }
}

int64_t KnownDim(const TensorType& t, size_t d) { return t.has_rank && t.dims[d].known() ? t.dims[d].value : -1; }
// Input dim d as the output takes it: known, symbolic or unknown.
Dim DimOf(const TensorType& t, size_t d) { return t.has_rank ? t.dims[d] : Dim::Unknown(); }
Dim KnownOrUnknown(int64_t v) { return v < 0 ? Dim::Unknown() : Dim::Known(v); }

// [num_directions, batch, hidden] (layout 0) or [batch, num_directions, hidden] (layout 1).
std::vector<Dim> StateDims(const RecurrentSpec& s, const Dim& batch, int64_t hidden) {
  const Dim nd = Dim::Known(s.num_directions);
  return s.layout ? std::vector<Dim>{batch, nd, KnownOrUnknown(hidden)} : std::vector<Dim>{nd, batch, KnownOrUnknown(hidden)};
}

void InferRecurrent(InferContext& ctx, RecurrentCell cell) {
  const RecurrentSpec s = ParseRecurrentSpec(cell, ctx.attrs(), ctx.node());
  const TensorType& x = ctx.input_type(kX);
  const TensorType& w = ctx.input_type(kW);
  const DType t = x.dtype;
  if (t != DType::kFloat32 && t != DType::kFloat64)
    ctx.Error(RecurrentCellName(cell), " takes X of float32 or float64 here, got ", DTypeName(t));
  for (size_t i : {kW, kR, kB, kInitialH, kInitialC, kP})
    if (i < ctx.num_inputs() && ctx.has_input(i) && ctx.input_type(i).dtype != t)
      ctx.Error("input ", i, " has type ", DTypeName(ctx.input_type(i).dtype), "; X has ", DTypeName(t));
  if (x.has_rank && x.rank() != 3)
    ctx.Error("X must be 3-D [", s.layout ? "batch, seq, input" : "seq, batch, input", "], got ", x.ToString());
  if (w.has_rank && w.rank() != 3)
    ctx.Error("W must be 3-D [num_directions, ", s.gates, "*hidden, input], got ", w.ToString());
  int64_t hidden = s.hidden_size;
  const int64_t w_rows = KnownDim(w, 1);
  if (w_rows >= 0) {
    if (w_rows % s.gates != 0) ctx.Error("W has ", w_rows, " rows, not a multiple of ", s.gates, " gates");
    if (hidden == 0) hidden = w_rows / s.gates;
    if (w_rows > (int64_t{1} << 42)) ctx.Error("W has ", w_rows, " rows, beyond any recurrent layer this engine runs");
  }
  if (hidden == 0) hidden = -1;  // unknown until W's shape is
  const size_t seq_axis = s.layout ? 1 : 0, batch_axis = s.layout ? 0 : 1;
  const int64_t batch = KnownDim(x, batch_axis);
  const int64_t nd = s.num_directions;
  const int64_t gh = hidden < 0 ? -1 : s.gates * hidden;
  ExpectShape(ctx, kW, "W", {nd, gh, KnownDim(x, 2)});
  ExpectShape(ctx, kR, "R", {nd, gh, hidden});
  if (ctx.has_input(kB)) ExpectShape(ctx, kB, "B", {nd, gh < 0 ? -1 : 2 * gh});
  if (ctx.num_inputs() > kSeqLens && ctx.has_input(kSeqLens)) {
    if (ctx.input_type(kSeqLens).dtype != DType::kInt32)
      ctx.Error("sequence_lens must be int32, got ", DTypeName(ctx.input_type(kSeqLens).dtype));
    ExpectShape(ctx, kSeqLens, "sequence_lens", {batch});
  }
  const std::vector<int64_t> state = s.layout ? std::vector<int64_t>{batch, nd, hidden}
                                              : std::vector<int64_t>{nd, batch, hidden};
  if (ctx.num_inputs() > kInitialH && ctx.has_input(kInitialH)) ExpectShape(ctx, kInitialH, "initial_h", state);
  if (ctx.num_inputs() > kInitialC && ctx.has_input(kInitialC)) ExpectShape(ctx, kInitialC, "initial_c", state);
  if (ctx.num_inputs() > kP && ctx.has_input(kP)) ExpectShape(ctx, kP, "P", {nd, hidden < 0 ? -1 : 3 * hidden});

  const Dim seq_dim = DimOf(x, seq_axis), batch_dim = DimOf(x, batch_axis);
  const Dim nd_dim = Dim::Known(nd), hidden_dim = KnownOrUnknown(hidden);
  const std::vector<Dim> y = s.layout ? std::vector<Dim>{batch_dim, seq_dim, nd_dim, hidden_dim}
                                      : std::vector<Dim>{seq_dim, nd_dim, batch_dim, hidden_dim};
  if (ctx.num_outputs() > 0) ctx.set_output(0, x.has_rank ? TensorType::Of(t, y) : TensorType::UnknownShape(t));
  for (size_t o = 1; o < ctx.num_outputs(); ++o)
    ctx.set_output(o, x.has_rank ? TensorType::Of(t, StateDims(s, batch_dim, hidden)) : TensorType::UnknownShape(t));
}

// <Op>Grad(X, W, R, B, sequence_lens, initial_h[, initial_c, P], dY, dY_h[, dY_c])
//   -> dX, dW, dR, dB, d_initial_h[, d_initial_c, dP]: every gradient has its input's shape (dB,
// d_initial_h, d_initial_c and dP also when the forward had no such input: zeros then stand in).
void InferRecurrentGrad(InferContext& ctx, RecurrentCell cell) {
  const RecurrentSpec s = ParseRecurrentSpec(cell, ctx.attrs(), ctx.node());
  const TensorType& x = ctx.input_type(kX);
  const TensorType& w = ctx.input_type(kW);
  const DType t = x.dtype;
  ctx.set_output(0, x);
  ctx.set_output(1, w);
  ctx.set_output(2, ctx.input_type(kR));
  const int64_t gh = KnownDim(w, 1);
  const int64_t hidden = gh < 0 ? -1 : gh / s.gates;
  const Dim nd = Dim::Known(s.num_directions);
  ctx.set_output(3, TensorType::Of(t, {nd, KnownOrUnknown(gh < 0 ? -1 : 2 * gh)}));
  const std::vector<Dim> state = StateDims(s, DimOf(x, s.layout ? 0 : 1), hidden);
  ctx.set_output(4, TensorType::Of(t, state));
  if (cell == RecurrentCell::kLstm) {
    ctx.set_output(5, TensorType::Of(t, state));
    ctx.set_output(6, TensorType::Of(t, {nd, KnownOrUnknown(hidden < 0 ? -1 : 3 * hidden)}));
  }
}

// Backpropagation through time is one ai.oneflow op per cell: its kernel reruns the forward to
// keep every step's gates (the forward op's outputs do not hold them) and walks the steps back.
void GradRecurrent(GradContext& c) {
  const RecurrentCell cell = CellOf(c.node().op_type);
  const bool lstm = cell == RecurrentCell::kLstm;
  if (c.needs_input_grad(kSeqLens)) c.NoGradient(kSeqLens, "sequence_lens is an integer length");
  const size_t num_forward_inputs = lstm ? 8 : 6;
  std::vector<std::string> inputs;
  for (size_t i = 0; i < num_forward_inputs; ++i) inputs.push_back(c.has_input(i) ? c.input(i) : "");
  const size_t num_outputs = lstm ? 3 : 2;
  for (size_t o = 0; o < num_outputs; ++o) inputs.push_back(c.has_output(o) ? c.output_grad(o) : "");
  const char* grad_op = lstm ? op::kLSTMGrad : cell == RecurrentCell::kGru ? op::kGRUGrad : op::kRNNGrad;
  const std::vector<std::string> g = c.Emit(grad_op, inputs, c.attrs(), lstm ? 7 : 5, kOneflowDomain);
  // Gradient output k belongs to forward input k, skipping sequence_lens (input 4).
  for (size_t k = 0; k < g.size(); ++k) {
    const size_t input = k < 4 ? k : k + 1;
    if (c.has_input(input) && c.needs_input_grad(input)) c.SetInputGrad(input, g[k]);
  }
}

OpSchema RecurrentSchema(const char* name, RecurrentCell cell, int since) {
  OpSchema s(name);
  s.Since(since).Input("X").Input("W").Input("R").OptionalInput("B").OptionalInput("sequence_lens")
      .OptionalInput("initial_h");
  if (cell == RecurrentCell::kLstm) s.OptionalInput("initial_c").OptionalInput("P");
  s.OptionalOutput("Y").OptionalOutput("Y_h");
  if (cell == RecurrentCell::kLstm) s.OptionalOutput("Y_c");
  s.OptionalAttr("activation_alpha", AttrKind::kFloats).OptionalAttr("activation_beta", AttrKind::kFloats)
      .OptionalAttr("activations", AttrKind::kStrings).OptionalAttr("clip", AttrKind::kFloat)
      .Attr("direction", Attribute::String("forward")).OptionalAttr("hidden_size", AttrKind::kInt);
  if (cell == RecurrentCell::kGru) s.Attr("linear_before_reset", Attribute::Int(0));
  if (cell == RecurrentCell::kLstm) s.Attr("input_forget", Attribute::Int(0));
  if (since >= 14) s.Attr("layout", Attribute::Int(0));
  return s;
}

OpSchema RecurrentGradSchema(const char* name, RecurrentCell cell) {
  OpSchema s(name, kOneflowDomain);
  s.Since(1).Input("X").Input("W").Input("R").OptionalInput("B").OptionalInput("sequence_lens")
      .OptionalInput("initial_h");
  if (cell == RecurrentCell::kLstm) s.OptionalInput("initial_c").OptionalInput("P");
  s.OptionalInput("dY").OptionalInput("dY_h");
  if (cell == RecurrentCell::kLstm) s.OptionalInput("dY_c");
  s.Output("dX").Output("dW").Output("dR").Output("dB").Output("d_initial_h");
  if (cell == RecurrentCell::kLstm) s.Output("d_initial_c").Output("dP");
  s.OptionalAttr("activation_alpha", AttrKind::kFloats).OptionalAttr("activation_beta", AttrKind::kFloats)
      .OptionalAttr("activations", AttrKind::kStrings).OptionalAttr("clip", AttrKind::kFloat)
      .Attr("direction", Attribute::String("forward")).OptionalAttr("hidden_size", AttrKind::kInt)
      .Attr("layout", Attribute::Int(0));
  if (cell == RecurrentCell::kGru) s.Attr("linear_before_reset", Attribute::Int(0));
  if (cell == RecurrentCell::kLstm) s.Attr("input_forget", Attribute::Int(0));
  return s;
}

}  // namespace

void RegisterRecurrentOps(OpRegistry& r) {
  struct Row {
    const char* name;
    const char* grad;
    RecurrentCell cell;
  };
  for (const Row& row : {Row{op::kRNN, op::kRNNGrad, RecurrentCell::kRnn}, Row{op::kGRU, op::kGRUGrad, RecurrentCell::kGru},
                         Row{op::kLSTM, op::kLSTMGrad, RecurrentCell::kLstm}}) {
    const RecurrentCell cell = row.cell;
    auto infer = [cell](InferContext& ctx) { InferRecurrent(ctx, cell); };
    r.Register(RecurrentSchema(row.name, cell, 7).Until(13).Infer(infer).Grad(GradRecurrent));
    r.Register(RecurrentSchema(row.name, cell, 14).Infer(infer).Grad(GradRecurrent));
    r.Register(RecurrentGradSchema(row.grad, cell).Infer([cell](InferContext& ctx) { InferRecurrentGrad(ctx, cell); }));
  }
}

}  // namespace oneflow
