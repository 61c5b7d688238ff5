// Op family: signal processing (opsets 17-20). Kernels: kernels/cpu/signal.cc.
//
// HannWindow, HammingWindow, BlackmanWindow take a scalar size N and write N samples w[n] of their
// window in output_datatype; periodic windows (the default) use the period N (the first N of an
// N + 1 symmetric window), symmetric ones N - 1, as numpy's and PyTorch's window functions do.
//
// Complex tensors are real ones with a last dim of 2 (real, imaginary); a last dim of 1 is real.
//   DFT(input [..., 1|2], dft_length?, axis?) -> [..., 2] (or [..., 1] for the inverse one-sided)
//       the discrete Fourier transform along `axis` (an attribute, default 1, until opset 19; an
//       input, default -2, from opset 20), zero-padded or truncated to dft_length; onesided keeps
//       the first dft_length / 2 + 1 bins; inverse divides by dft_length, and with onesided takes a
//       one-sided spectrum to a real signal of dft_length (default 2 (bins - 1)), as numpy's irfft
//   STFT(signal [batch, length, 1|2], frame_step, window?, frame_length?) -> [batch, frames, bins, 2]
//       the DFT of each windowed frame of frame_length (default: the window's length) samples,
//       frame_step apart; frames = 1 + (length - frame_length) / frame_step; onesided (default 1)
//       keeps frame_length / 2 + 1 bins
//   MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)
//       -> [dft_length / 2 + 1, num_mel_bins]: triangular filters evenly spaced on the mel scale,
//       as the ONNX reference computes them
#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

void InferWindow(InferContext& ctx) {
  const TensorType& size = ctx.input_type(0);
  if (size.dtype != DType::kInt32 && size.dtype != DType::kInt64)
    ctx.Error("size must be int32 or int64, got ", DTypeName(size.dtype));
  if (size.has_rank && size.rank() != 0 && !(size.rank() == 1 && size.dims[0].known() && size.dims[0].value == 1))
    ctx.Error("size must be a scalar, got ", size.ToString());
  const int64_t code = ctx.attrs().GetInt("output_datatype");
  const DType out = static_cast<DType>(code);
  if (code <= 0 || code > INT32_MAX || !IsKnownDType(static_cast<int32_t>(code)) || out == DType::kString ||
      out == DType::kBool)
    Fail(ErrorCode::kUnsupported, ctx.node(), ": output_datatype ", code, " is not a numeric type we support");
  Dim n = Dim::Unknown();
  if (const Tensor* v = ctx.input_value(0)) {
    const int64_t len = v->GetAsInt64(0);
    if (len < 0) ctx.Error("size must be >= 0, got ", len);
    n = Dim::Known(len);
  }
  ctx.set_output(0, TensorType::Of(out, {n}));
}

OpSchema Window(const char* name) {
  return std::move(OpSchema(name).Since(17).ShapeInput("size").Output("output")
                       .Attr("output_datatype", Attribute::Int(static_cast<int64_t>(DType::kFloat32)))
                       .Attr("periodic", Attribute::Int(1)).Infer(InferWindow));
}

// A scalar integer input (or a one-element 1-D one), known statically when it is a constant.
int64_t ScalarIntInput(InferContext& ctx, size_t i, const char* name) {
  if (!ctx.has_input(i)) return -1;
  const TensorType& t = ctx.input_type(i);
  if (t.dtype != DType::kInt32 && t.dtype != DType::kInt64)
    ctx.Error(name, " must be int32 or int64, got ", t.ToString());
  if (t.fully_known() && NumElements(t.ToShape()) != 1) ctx.Error(name, " must be a scalar, got ", t.ToString());
  const Tensor* v = ctx.input_value(i);
  return v ? v->GetAsInt64(0) : -2;  // -2: present but not known statically
}

// Signal lengths, bounded so the transforms' index arithmetic stays far from overflow.
constexpr int64_t kMaxSignalLength = int64_t{1} << 31;

void CheckComplexOrReal(InferContext& ctx, const TensorType& x, const char* name) {
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64 && x.dtype != DType::kFloat16 &&
      x.dtype != DType::kBFloat16)
    ctx.Error(name, " must be a float tensor, got ", x.ToString());
  if (x.has_rank && x.rank() >= 1 && x.dims.back().known() && x.dims.back().value != 1 && x.dims.back().value != 2)
    ctx.Error(name, "'s last dim must be 1 (real) or 2 (complex), got ", x.ToString());
}

void InferDft(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  CheckComplexOrReal(ctx, x, "input");
  const bool inverse = ctx.attrs().GetInt("inverse") != 0, onesided = ctx.attrs().GetInt("onesided") != 0;
  const int64_t length = ScalarIntInput(ctx, 1, "dft_length");
  if (length == 0 || length < -2 || length > kMaxSignalLength)
    ctx.Error("dft_length must be in [1, 2^31], got ", length);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const int64_t r = x.rank();
  if (r < 2) ctx.Error("input must have a signal axis and the complex dim, got ", x.ToString());
  int64_t axis = ctx.opset() >= 20 ? -2 : ctx.attrs().GetInt("axis", 1);
  if (ctx.opset() >= 20 && ctx.has_input(2)) {
    const int64_t a = ScalarIntInput(ctx, 2, "axis");
    if (a == -2 && !ctx.input_value(2)) {  // the axis is data: only the rank is known
      std::vector<Dim> dims(static_cast<size_t>(r), Dim::Unknown());
      dims.back() = Dim::Known(inverse && onesided ? 1 : 2);
      ctx.set_output(0, TensorType::Of(x.dtype, dims));
      return;
    }
    axis = a;
  }
  // The axis counts the complex dim in the rank but may not name it.
  if (axis < -r || axis >= r - 1 || axis == -1) ctx.Error("axis ", axis, " is not a signal axis of ", x.ToString());
  if (axis < 0) axis += r;
  std::vector<Dim> dims = x.dims;
  const Dim n = dims[static_cast<size_t>(axis)];
  Dim out = n;
  if (length > 0) out = Dim::Known(length);
  else if (length == -2) out = Dim::Unknown();
  else if (inverse && onesided) out = n.known() ? Dim::Known(2 * (n.value - 1)) : Dim::Unknown();
  if (inverse && onesided && out.known() && out.value < 1) ctx.Error("the inverse one-sided DFT of ", x.ToString(), " has no samples");
  if (!inverse && onesided && out.known()) out = Dim::Known(out.value / 2 + 1);
  dims[static_cast<size_t>(axis)] = out;
  dims.back() = Dim::Known(inverse && onesided ? 1 : 2);
  ctx.set_output(0, TensorType::Of(x.dtype, dims));
}

void InferStft(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  CheckComplexOrReal(ctx, x, "signal");
  if (x.has_rank && x.rank() != 3) ctx.Error("signal must be [batch, length, 1 or 2], got ", x.ToString());
  const int64_t step = ScalarIntInput(ctx, 1, "frame_step");
  if (step == -1) ctx.Error("frame_step is required");
  if (step != -2 && (step < 1 || step > kMaxSignalLength)) ctx.Error("frame_step must be in [1, 2^31], got ", step);
  Dim frame = Dim::Unknown();
  if (ctx.has_input(2)) {
    const TensorType& w = ctx.input_type(2);
    if (w.dtype != x.dtype) ctx.Error("window must have the signal's type ", DTypeName(x.dtype), ", got ", w.ToString());
    if (w.has_rank && w.rank() != 1) ctx.Error("window must be 1-D, got ", w.ToString());
    if (w.has_rank) frame = w.dims[0];
  }
  const int64_t length = ScalarIntInput(ctx, 3, "frame_length");
  if (length != -1 && length != -2) {
    if (length < 1 || length > kMaxSignalLength) ctx.Error("frame_length must be in [1, 2^31], got ", length);
    if (frame.known() && frame.value != length)
      ctx.Error("frame_length ", length, " differs from the window's length ", frame.value);
    frame = Dim::Known(length);
  }
  if (!ctx.has_input(2) && length == -1) ctx.Error("STFT needs a window or a frame_length");
  Dim frames = Dim::Unknown(), bins = Dim::Unknown();
  const bool onesided = ctx.attrs().GetInt("onesided") != 0;
  if (frame.known()) bins = Dim::Known(onesided ? frame.value / 2 + 1 : frame.value);
  if (frame.known() && step > 0 && x.has_rank && x.dims[1].known()) {
    if (x.dims[1].value < frame.value)
      ctx.Error("the signal (", x.dims[1].value, " samples) is shorter than a frame (", frame.value, ")");
    frames = Dim::Known(1 + (x.dims[1].value - frame.value) / step);
  }
  ctx.set_output(0, TensorType::Of(x.dtype, {x.has_rank ? x.dims[0] : Dim::Unknown(), frames, bins, Dim::Known(2)}));
}

void InferMelWeightMatrix(InferContext& ctx) {
  const int64_t mel = ScalarIntInput(ctx, 0, "num_mel_bins");
  const int64_t dft = ScalarIntInput(ctx, 1, "dft_length");
  ScalarIntInput(ctx, 2, "sample_rate");
  for (size_t i : {size_t{3}, size_t{4}})
    if (!IsFloatDType(ctx.input_type(i).dtype))
      ctx.Error(i == 3 ? "lower_edge_hertz" : "upper_edge_hertz", " must be a float scalar, got ",
                ctx.input_type(i).ToString());
  if (mel != -2 && (mel < 1 || mel > kMaxSignalLength)) ctx.Error("num_mel_bins must be in [1, 2^31], got ", mel);
  if (dft != -2 && (dft < 1 || dft > kMaxSignalLength)) ctx.Error("dft_length must be in [1, 2^31], got ", dft);
  const int64_t code = ctx.attrs().GetInt("output_datatype");
  const DType out = static_cast<DType>(code);
  if (code <= 0 || code > INT32_MAX || !IsKnownDType(static_cast<int32_t>(code)) || out == DType::kString ||
      DTypeSize(out) == 0)
    Fail(ErrorCode::kUnsupported, ctx.node(), ": output_datatype ", code, " is not a numeric type we support");
  ctx.set_output(0, TensorType::Of(out, {dft > 0 ? Dim::Known(dft / 2 + 1) : Dim::Unknown(),
                                         mel > 0 ? Dim::Known(mel) : Dim::Unknown()}));
}

}  // namespace

void RegisterSignalOps(OpRegistry& r) {
  for (const char* op : {op::kHannWindow, op::kHammingWindow, op::kBlackmanWindow}) r.Register(Window(op));
  r.Register(OpSchema(op::kDFT).Since(17).Until(19).Input("input").OptionalShapeInput("dft_length").Output("output")
                 .Attr("axis", Attribute::Int(1)).Attr("inverse", Attribute::Int(0)).Attr("onesided", Attribute::Int(0))
                 .Infer(InferDft));
  r.Register(OpSchema(op::kDFT).Since(20).Input("input").OptionalShapeInput("dft_length").OptionalShapeInput("axis")
                 .Output("output").Attr("inverse", Attribute::Int(0)).Attr("onesided", Attribute::Int(0))
                 .Infer(InferDft));
  r.Register(OpSchema(op::kSTFT).Since(17).Input("signal").ShapeInput("frame_step").OptionalInput("window")
                 .OptionalShapeInput("frame_length").Output("output").Attr("onesided", Attribute::Int(1))
                 .Infer(InferStft));
  r.Register(OpSchema(op::kMelWeightMatrix).Since(17).ShapeInput("num_mel_bins").ShapeInput("dft_length")
                 .Input("sample_rate").Input("lower_edge_hertz").Input("upper_edge_hertz").Output("output")
                 .Attr("output_datatype", Attribute::Int(static_cast<int64_t>(DType::kFloat32)))
                 .Infer(InferMelWeightMatrix));
}

}  // namespace oneflow
