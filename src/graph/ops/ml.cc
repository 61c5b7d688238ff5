// Op family: ai.onnx.ml, the classic-ML domain scikit-learn converters write (skl2onnx): the
// tensor-only ops. Kernels: kernels/cpu/ml.cc.
//   Binarizer(X) -> Y            Y = X > threshold ? 1 : 0, X's type (float, double, int32, int64)
//   ArrayFeatureExtractor(X [..., F], Y int64 [k] or [1, k]) -> Z [..., k]
//                                Z[..., j] = X[..., Y[j]]; a 1-D X gives [1, k]
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

bool IsMlNumeric(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kInt32 || t == DType::kInt64;
}

void InferBinarizer(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!IsMlNumeric(x.dtype)) ctx.Error("X must be float, double, int32 or int64, got ", x.ToString());
  ctx.set_output(0, x);
}

void InferArrayFeatureExtractor(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& y = ctx.input_type(1);
  if (!IsMlNumeric(x.dtype)) ctx.Error("X must be float, double, int32 or int64, got ", x.ToString());
  if (y.dtype != DType::kInt64) ctx.Error("Y (the indices) must be int64, got ", y.ToString());
  if (x.has_rank && x.rank() == 0) ctx.Error("X must have at least one dimension, got ", x.ToString());
  Dim count = Dim::Unknown();
  if (y.has_rank) {
    if (y.rank() == 1) count = y.dims[0];
    else if (y.rank() == 2 && y.dims[0].known() && y.dims[0].value == 1) count = y.dims[1];
    else if (y.rank() == 2 && !y.dims[0].known()) count = Dim::Unknown();
    else ctx.Error("Y must be [k] or [1, k], got ", y.ToString());
  }
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  std::vector<Dim> out(x.dims.begin(), x.dims.end() - 1);
  if (x.rank() == 1) out.push_back(Dim::Known(1));
  out.push_back(count);
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

}  // namespace

void RegisterMlOps(OpRegistry& r) {
  r.Register(OpSchema(OpId::kBinarizer).Since(1).Input("X").Output("Y").Attr("threshold", Attribute::Float(0.0f))
                 .Infer(InferBinarizer));
  r.Register(OpSchema(OpId::kArrayFeatureExtractor).Since(1).Input("X").Input("Y").Output("Z")
                 .Infer(InferArrayFeatureExtractor));
}

}  // namespace oneflow
