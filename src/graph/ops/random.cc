// Op family: random tensors. Each node draws from a generator of its own, seeded by the `seed`
// attribute when given (so two sessions of one model draw the same numbers run for run) and from
// the system's entropy otherwise; the generator advances with every run, so constant folding
// leaves these nodes alone (OpSchema::random). Kernels: kernels/cpu/random.cc.
//   RandomNormal() / RandomUniform() -> `shape` of `dtype`    N(mean, scale^2) / U[low, high)
//   RandomNormalLike(x) / RandomUniformLike(x) -> x's shape, `dtype` or x's dtype
//   Bernoulli(p) -> p's shape: 1 with probability p, else 0, as `dtype` or p's dtype
//   Multinomial(logits [batch, classes]) -> [batch, sample_size] class indices (int32 or int64)
//                                           drawn from softmax(logits) per row
#include <string>

#include "base/narrow_types.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

// The `dtype` attribute, or `fallback` when it is absent; `allowed` says which it may be.
DType OutputDType(const InferContext& ctx, DType fallback, bool (*allowed)(DType), const char* allowed_what) {
  DType dtype = fallback;
  if (ctx.attrs().has("dtype")) {
    const int64_t code = ctx.attrs().GetInt("dtype");
    if (!IsKnownDType(static_cast<int32_t>(code))) ctx.Error("dtype ", code, " is not a known element type");
    dtype = static_cast<DType>(code);
  }
  if (dtype != DType::kUndefined && !allowed(dtype))
    ctx.Error("dtype ", DTypeName(dtype), " is not allowed; it must be ", allowed_what);
  return dtype;
}

bool FloatOnly(DType t) { return t == DType::kFloat16 || t == DType::kFloat32 || t == DType::kFloat64; }
bool BernoulliOutput(DType t) { return DTypeSize(t) > 0 && !IsNarrowDType(t) && t != DType::kBFloat16; }
bool IndexOutput(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

void InferRandomFromShape(InferContext& ctx) {
  Shape shape = ctx.attrs().GetInts("shape");
  for (int64_t d : shape)
    if (d < 0) ctx.Error("shape ", ShapeToString(shape), " has a negative dimension");
  NumElements(shape);  // throws on overflow
  ctx.set_output(0, TensorType::Of(OutputDType(ctx, DType::kFloat32, FloatOnly, "float16, float32 or float64"), shape));
}

void InferRandomLike(InferContext& ctx) {
  TensorType out = ctx.input_type(0);
  out.dtype = OutputDType(ctx, out.dtype, FloatOnly, "float16, float32 or float64");
  ctx.set_output(0, out);
}

void InferBernoulli(InferContext& ctx) {
  TensorType out = ctx.input_type(0);
  if (!FloatOnly(out.dtype) && out.dtype != DType::kUndefined)
    ctx.Error("input must be float16, float32 or float64 probabilities, got ", out.ToString());
  out.dtype = OutputDType(ctx, out.dtype, BernoulliOutput, "a numeric or bool type");
  ctx.set_output(0, out);
}

void InferMultinomial(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!FloatOnly(x.dtype) && x.dtype != DType::kUndefined)
    ctx.Error("input must be float16, float32 or float64, got ", x.ToString());
  if (x.has_rank && x.rank() != 2) ctx.Error("input must be [batch_size, class_size], got ", x.ToString());
  const int64_t samples = ctx.attrs().GetInt("sample_size");
  if (samples < 1) ctx.Error("sample_size must be at least 1, got ", samples);
  const DType dtype = OutputDType(ctx, DType::kInt32, IndexOutput, "int32 or int64");
  ctx.set_output(0, TensorType::Of(dtype, {x.has_rank ? x.dims[0] : Dim::Unknown(), Dim::Known(samples)}));
}

}  // namespace

void RegisterRandomOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kRandomNormal).Since(1).Output("output").RequiredAttr("shape", AttrKind::kInts)
      .Attr("dtype", Attribute::Int(1)).Attr("mean", Attribute::Float(0.0f)).Attr("scale", Attribute::Float(1.0f))
      .OptionalAttr("seed", AttrKind::kFloat).Random().Infer(InferRandomFromShape)
      .Doc("Samples of N(mean, scale^2) in a tensor of `shape`."));
  r.Register(OpSchema(OpId::kRandomUniform).Since(1).Output("output").RequiredAttr("shape", AttrKind::kInts)
      .Attr("dtype", Attribute::Int(1)).Attr("low", Attribute::Float(0.0f)).Attr("high", Attribute::Float(1.0f))
      .OptionalAttr("seed", AttrKind::kFloat).Random().Infer(InferRandomFromShape)
      .Doc("Samples of U[low, high) in a tensor of `shape`."));
  r.Register(OpSchema(OpId::kRandomNormalLike).Since(1).TypeOnlyInput("input").Output("output")
      .OptionalAttr("dtype", AttrKind::kInt).Attr("mean", Attribute::Float(0.0f)).Attr("scale", Attribute::Float(1.0f))
      .OptionalAttr("seed", AttrKind::kFloat).Random().Infer(InferRandomLike)
      .Doc("Samples of N(mean, scale^2) shaped like `input`."));
  r.Register(OpSchema(OpId::kRandomUniformLike).Since(1).TypeOnlyInput("input").Output("output")
      .OptionalAttr("dtype", AttrKind::kInt).Attr("low", Attribute::Float(0.0f)).Attr("high", Attribute::Float(1.0f))
      .OptionalAttr("seed", AttrKind::kFloat).Random().Infer(InferRandomLike)
      .Doc("Samples of U[low, high) shaped like `input`."));
  r.Register(OpSchema(OpId::kBernoulli).Since(15).Input("input").Output("output")
      .OptionalAttr("dtype", AttrKind::kInt).OptionalAttr("seed", AttrKind::kFloat).Random().Infer(InferBernoulli)
      .Doc("1 with probability input[i] (which must be in [0, 1]), else 0."));
  r.Register(OpSchema(OpId::kMultinomial).Since(7).Input("input").Output("output")
      .Attr("dtype", Attribute::Int(6)).Attr("sample_size", Attribute::Int(1)).OptionalAttr("seed", AttrKind::kFloat)
      .Random().Infer(InferMultinomial)
      .Doc("Per row of unnormalized log-probabilities, sample_size class indices drawn with replacement."));
}

}  // namespace oneflow
