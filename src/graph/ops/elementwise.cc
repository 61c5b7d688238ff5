// Op family: elementwise (schemas, attribute defaults, opset ranges, shape inference).
// Opset notes: ops that predate opset 13 with no semantic change since are registered Since(13);
// later revisions that only widened the type lists (Add-14, Relu-14, Elu-22, Mod-28, ...) are
// covered by the same schema since the kernels accept the wider types.
#include <cmath>
#include <cstring>
#include <tuple>

#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/binary_ops.h"
#include "graph/ops/grad_rules.h"
#include "graph/ops/sbp_rules.h"
#include "graph/ops/unary_ops.h"

namespace oneflow {
namespace {

void InferSameShapeBool(InferContext& ctx) {
  TensorType t = ctx.input_type(0);
  t.dtype = DType::kBool;
  ctx.set_output(0, t);
}

// Broadcast of inputs 0 and 1 with input 0's dtype; the dtypes may differ (Pow's exponent).
void InferBroadcastDType0(InferContext& ctx) {
  TensorType out = ctx.input_type(0);
  const TensorType& b = ctx.input_type(1);
  if (!out.has_rank || !b.has_rank) out = TensorType::UnknownShape(out.dtype);
  else out.dims = BroadcastDims(out.dims, b.dims, ctx);
  ctx.set_output(0, out);
}

// Output = X's type; the other inputs must share its dtype (Clip bounds, PRelu slope).
void InferSameAsInput0SameDType(InferContext& ctx) {
  CheckSameDType(ctx);
  ctx.set_output(0, ctx.input_type(0));
}

void InferWhere(InferContext& ctx) {
  if (ctx.input_dtype(0) != DType::kBool) ctx.Error("condition must be bool, got ", DTypeName(ctx.input_dtype(0)));
  if (ctx.input_dtype(1) != ctx.input_dtype(2)) {
    ctx.Error("X and Y must share one dtype, got ", DTypeName(ctx.input_dtype(1)), " and ", DTypeName(ctx.input_dtype(2)));
  }
  TensorType out = ctx.input_type(1);
  for (size_t i : {0, 2}) {
    const TensorType& t = ctx.input_type(i);
    if (!out.has_rank || !t.has_rank) out = TensorType::UnknownShape(out.dtype);
    else out.dims = BroadcastDims(out.dims, t.dims, ctx);
  }
  ctx.set_output(0, out);
}

DType CastTarget(const InferContext& ctx, int64_t code) {
  OF_CHECK(code >= INT32_MIN && code <= INT32_MAX && IsKnownDType(static_cast<int32_t>(code)) &&
               code != static_cast<int64_t>(DType::kString),
           kUnsupported, ctx.node(), ": cast to element type ", code,
           " is not supported (string and float6 types are not implemented)");
  const std::string& round_mode = ctx.attrs().GetString("round_mode", "up");
  if (round_mode != "up" && round_mode != "down" && round_mode != "nearest")
    ctx.Error("round_mode must be \"up\", \"down\" or \"nearest\", got \"", round_mode, "\"");
  return static_cast<DType>(code);
}

void InferCast(InferContext& ctx) {
  TensorType t = ctx.input_type(0);
  if (t.dtype == DType::kString) Fail(ErrorCode::kUnsupported, ctx.node(), ": casts from string are not supported");
  t.dtype = CastTarget(ctx, ctx.attrs().GetInt("to"));
  ctx.set_output(0, t);
}

// BitCast (opset 26): the same bytes read as another type of the same width.
void InferBitCast(InferContext& ctx) {
  TensorType t = ctx.input_type(0);
  const DType from = t.dtype;
  t.dtype = CastTarget(ctx, ctx.attrs().GetInt("to"));
  if (from == DType::kString) Fail(ErrorCode::kUnsupported, ctx.node(), ": BitCast from string is not supported");
  if (DTypeSize(from) != DTypeSize(t.dtype))
    ctx.Error("BitCast needs types of one width: ", DTypeName(from), " has ", DTypeSize(from) * 8, " bits, ",
              DTypeName(t.dtype), " ", DTypeSize(t.dtype) * 8);
  ctx.set_output(0, t);
}

void InferCastLike(InferContext& ctx) {
  TensorType t = ctx.input_type(0);
  t.dtype = CastTarget(ctx, static_cast<int64_t>(ctx.input_dtype(1)));
  ctx.set_output(0, t);
}

void InferDropout(InferContext& ctx) {
  // training_mode=true draws random masks, which we do not do; ratio 0 keeps everything (identity).
  const Tensor* training = ctx.input_value(2);
  const Tensor* ratio = ctx.input_value(1);
  const bool training_on = training && training->numel() == 1 && training->GetAsDouble(0) != 0.0;
  const bool ratio_unknown = ctx.has_input(1) && !ratio;  // decided at run time
  const bool ratio_zero = ctx.has_input(1) && ratio && ratio->numel() == 1 && ratio->GetAsDouble(0) == 0.0;
  OF_CHECK(!training_on || ratio_unknown || ratio_zero, kUnsupported, ctx.node(),
           ": Dropout with training_mode=true is not supported (inference only)");
  ctx.set_output(0, ctx.input_type(0));
  if (ctx.num_outputs() > 1) {
    TensorType mask = ctx.input_type(0);
    mask.dtype = DType::kBool;
    ctx.set_output(1, mask);
  }
}

OpSchema Unary(const char* name, int since = 13) {
  return std::move(OpSchema(name).Since(since).Input("X").Output("Y").Infer(InferSameAsInput0));
}

// The row's parameters as attributes with their defaults.
void AddParamAttrs(OpSchema& s, const unary::ParamList& params) {
  for (int i = 0; i < params.count; ++i) {
    const unary::Param& p = params.items[i];
    if (p.choices) {
      const char* bar = std::strchr(p.choices, '|');
      s.Attr(p.name, Attribute::String(bar ? std::string(p.choices, bar) : std::string(p.choices)));
    } else {
      s.Attr(p.name, Attribute::Float(p.value));
    }
  }
}

// dX = dY * f'(input 1): dY and the saved forward value (X, or Y where the row says so) share a shape.
void InferDerivative(InferContext& ctx) {
  CheckSameDType(ctx);
  ctx.set_output(0, ctx.input_type(0));
}

// The schema of a unary row (graph/ops/unary_ops.h) and, when it has Bwd, of its ai.oneflow
// <Op>Grad op (inputs dY and the saved X or Y; the forward op's attributes).
void RegisterUnaryRow(OpRegistry& r, const UnaryOpInfo& op) {
  OpSchema s(op.name, op.domain);
  s.Since(op.since).Input("X").Output("Y").Infer(InferSameAsInput0);
  AddParamAttrs(s, op.params);
  s.Sbp(ElementwiseSbp(op.linearity == unary::Linearity::kLinear ? Linear::kAll : Linear::kNone));
  s.Precision(op.follows_low_precision ? PrecisionClass::kFollow : PrecisionClass::kKeep);
  if (op.grad == unary::GradFrom::kNone) {
    s.Grad(UnaryGradRule(op.name));
  } else {
    const bool from_y = op.grad == unary::GradFrom::kY;
    s.Grad(DerivativeOpRule(OpName(op.grad_op), from_y));
    OpSchema g(op.grad_op);
    g.Since(1).Input("dY").Input(from_y ? "Y" : "X").Output("dX").Infer(InferDerivative);
    AddParamAttrs(g, op.params);
    g.Sbp(ElementwiseSbp(Linear::kFirst));  // linear in dY
    r.Register(std::move(g));
  }
  r.Register(std::move(s));
}

PrecisionClass PrecisionOf(const BinaryOpInfo& row) {
  return row.follows_low_precision ? PrecisionClass::kFollow : PrecisionClass::kKeep;
}

SbpFn SbpOf(const BinaryOpInfo& row) {
  switch (row.linearity) {
    case binary::Linearity::kBoth: return ElementwiseSbp(Linear::kAll);
    case binary::Linearity::kEither: return ElementwiseSbp(Linear::kAny);
    case binary::Linearity::kFirst: return ElementwiseSbp(Linear::kFirst);
    case binary::Linearity::kNone: break;
  }
  return ElementwiseSbp(Linear::kNone);
}

OpSchema Binary(const char* name, InferFn fn, int since = 13) {
  return std::move(OpSchema(name).Since(since).Input("A").Input("B").Output("C").Infer(std::move(fn)));
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& r) {
  // ---- Arithmetic -------------------------------------------------------------------------------
  // The standalone rows of binary_ops.h, each with its (composite) gradient rule; a row's
  // formula serves Pow, Max and Min below too, whose schemas differ (mixed types, variadic).
  const std::pair<BinaryOpId, GradFn> rows[] = {
      {BinaryOpId::kAdd, GradAdd}, {BinaryOpId::kSub, GradSub}, {BinaryOpId::kMul, GradMul}, {BinaryOpId::kDiv, GradDiv}};
  for (const auto& [id, grad] : rows) {
    const BinaryOpInfo& row = BinaryInfo(id);
    r.Register(Binary(row.name, InferBroadcast).Grad(grad).Precision(PrecisionOf(row)).Sbp(SbpOf(row)));
  }
  r.Register(Binary(op::kMod, InferBroadcast).Attr("fmod", Attribute::Int(0)));
  r.Register(OpSchema(binary::Pow::kName).Since(13).Input("X").Input("Y").Output("Z").Infer(InferBroadcastDType0)
                 .Grad(GradPow).Precision(PrecisionOf(BinaryInfo(BinaryOpId::kPow))).Sbp(SbpOf(BinaryInfo(BinaryOpId::kPow))));
  r.Register(OpSchema(op::kPRelu).Since(13).Input("X").Input("slope").Output("Y").Infer(InferSameAsInput0SameDType)
                 .Grad(GradPRelu));
  // Variadic Min/Max (the rows' formulas pairwise), Sum and Mean. Sum passes partial sums through.
  using Variadic = std::tuple<const char*, GradFn, Linear>;  // explicit: clang cannot deduce a tuple of a function
  for (const auto& [op, grad, linear] : {Variadic{binary::Min::kName, GradMinMax, Linear::kNone},
                                         Variadic{binary::Max::kName, GradMinMax, Linear::kNone},
                                         Variadic{op::kMean, GradMean, Linear::kNone}, Variadic{op::kSum, GradSum, Linear::kAll}}) {
    r.Register(OpSchema(op).Since(13).VariadicInput("data_0").Output("result").Infer(InferBroadcast).Grad(grad)
                   .Sbp(ElementwiseSbp(linear)));
  }

  // ---- Unary math and activations: the rows of unary_ops.h -----------------------------------------
  for (const UnaryOpInfo& op : kUnaryOps)
    if (op.standalone) RegisterUnaryRow(r, op);

  r.Register(OpSchema(op::kShrink).Since(13).Input("input").Output("output")
                 .Attr("bias", Attribute::Float(0.0f)).Attr("lambd", Attribute::Float(0.5f)).Infer(InferSameAsInput0)
                 .Grad(GradShrink));
  r.Register(OpSchema(op::kClip).Since(13).Input("input").OptionalInput("min").OptionalInput("max").Output("output")
                 .Infer(InferSameAsInput0SameDType).Grad(GradClip));

  // ---- Comparison and logic ---------------------------------------------------------------------
  for (const char* op : {op::kEqual, op::kLess, op::kLessOrEqual, op::kGreater, op::kGreaterOrEqual, op::kAnd, op::kOr, op::kXor}) {
    OpSchema schema = Binary(op, InferBroadcastToBool);
    if (op == std::string_view(op::kEqual)) schema.TakesStrings();  // Equal compares strings too (opset 19)
    r.Register(std::move(schema));
  }
  r.Register(Unary(op::kNot));
  r.Register(Unary(op::kIsNaN).Infer(InferSameShapeBool));
  r.Register(Unary(op::kIsInf)
                 .Attr("detect_negative", Attribute::Int(1))
                 .Attr("detect_positive", Attribute::Int(1))
                 .Infer(InferSameShapeBool));
  r.Register(OpSchema(op::kWhere).Since(13).Input("condition").Input("X").Input("Y").Output("output").Infer(InferWhere).Grad(GradWhere));

  // ---- Bit ops ----------------------------------------------------------------------------------
  r.Register(OpSchema(op::kBitShift).Since(13).Input("X").Input("Y").Output("Z")
                 .RequiredAttr("direction", AttrKind::kString).Infer(InferBroadcast));
  for (const char* op : {op::kBitwiseAnd, op::kBitwiseOr, op::kBitwiseXor}) r.Register(Binary(op, InferBroadcast, 18));
  r.Register(Unary(op::kBitwiseNot, 18));

  // ---- Type conversion and pass-through ---------------------------------------------------------
  r.Register(OpSchema(op::kCast).Since(13).Input("input").Output("output")
                 .RequiredAttr("to", AttrKind::kInt)
                 .Attr("saturate", Attribute::Int(1))          // float8 targets only (Cast-19)
                 .Attr("round_mode", Attribute::String("up"))  // float8e8m0 targets only (Cast-25)
                 .Infer(InferCast).Grad(GradCast));
  r.Register(OpSchema(op::kBitCast).Since(26).Input("input").Output("output").RequiredAttr("to", AttrKind::kInt)
                 .Infer(InferBitCast));
  r.Register(OpSchema(op::kCastLike).Since(15).Input("input").TypeOnlyInput("target_type").Output("output")
                 .Attr("saturate", Attribute::Int(1))
                 .Attr("round_mode", Attribute::String("up"))
                 .Infer(InferCastLike).Grad(GradCastLike));
  r.Register(OpSchema(op::kIdentity).Since(13).Input("input").Accepting(kAnyKind).Output("output").TakesStrings().Infer(InferSameAsInput0).Grad(GradPassThrough)
                 .Precision(PrecisionClass::kFollow).View());
  r.Register(OpSchema(op::kDropout).Since(13).Input("data").OptionalInput("ratio").OptionalInput("training_mode")
                 .Output("output").OptionalOutput("mask").OptionalAttr("seed", AttrKind::kInt).Infer(InferDropout)
                 .Grad(GradPassThrough));
}

}  // namespace oneflow
