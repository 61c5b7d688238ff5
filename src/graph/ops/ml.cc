// Op family: ai.onnx.ml, the classic-ML domain scikit-learn converters write (skl2onnx): the
// tensor-only ops. Kernels: kernels/cpu/ml.cc.
//   Binarizer(X) -> Y            Y = X > threshold ? 1 : 0, X's type (float, double, int32, int64)
//   ArrayFeatureExtractor(X [..., F], Y int64 of k elements, any shape) -> Z [..., k]
//                                Z[..., j] = X[..., Y.flat[j]]; a 1-D X gives [1, k]
//   TreeEnsemble(X [N, F]) -> Y [N, n_targets]   (opset 5; the trees: tree_ensemble.h)
//   TreeEnsembleRegressor(X [N, F]) -> Y [N, n_targets] float       (opsets 1, 3)
//   TreeEnsembleClassifier(X [N, F]) -> Y [N] int64 or string labels, Z [N, classes] float scores  (1, 3)
//   LinearRegressor(X [N, F]) -> Y [N, targets] float; LinearClassifier(X) -> Y [N] labels, Z [N, k] float
//                                (ops/linear_model.h)
//   Normalizer(X [N, C] or [C]) -> Y float   each row over its max |x|, L1 or L2 norm (a zero norm: Y = X)
//   OneHotEncoder(X) -> Y [..., categories] float   1 at the category of each element (strings or integers)
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/linear_model.h"
#include "graph/ops/tree_ensemble.h"

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
  if (!IsMlNumeric(x.dtype) && x.dtype != DType::kString)
    ctx.Error("X must be float, double, int32, int64 or string, got ", x.ToString());
  if (y.dtype != DType::kInt64) ctx.Error("Y (the indices) must be int64, got ", y.ToString());
  if (x.has_rank && x.rank() == 0) ctx.Error("X must have at least one dimension, got ", x.ToString());
  // Y's indices are read flat, whatever its shape (onnxruntime's reading; skl2onnx passes [N, k]).
  Dim count = Dim::Unknown();
  if (y.has_rank) {
    int64_t k = 1;
    for (const Dim& d : y.dims) k = d.known() && k >= 0 ? k * d.value : -1;
    if (k >= 0) count = Dim::Known(k);
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

void InferTreeEnsemble(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (x.dtype != DType::kFloat32 && x.dtype != DType::kFloat64)
    ctx.Error("X must be float32 or float64 (float16 is not supported), got ", x.ToString());
  if (x.has_rank && x.rank() != 2) ctx.Error("X must be [N, F], got ", x.ToString());
  const TreeEnsembleSpec s = ParseTreeEnsembleSpec(ctx.attrs(), ctx.node());
  if (x.has_rank && x.dims[1].known() && x.dims[1].value < s.features)
    ctx.Error("the trees read feature ", s.features - 1, " but X has ", x.dims[1].value);
  ctx.set_output(0, TensorType::Of(x.dtype, {x.has_rank ? x.dims[0] : Dim::Unknown(), Dim::Known(s.targets)}));
}

// TreeEnsembleRegressor / TreeEnsembleClassifier: X float, double, int64 or int32 [N, F] (a 1-D
// X is one row); outputs are float.
void InferTreeEnsembleLegacy(InferContext& ctx, bool classifier) {
  const TensorType& x = ctx.input_type(0);
  if (!IsMlNumeric(x.dtype)) ctx.Error("X must be float, double, int32 or int64, got ", x.ToString());
  if (x.has_rank && x.rank() != 2 && x.rank() != 1) ctx.Error("X must be [N, F] or [F], got ", x.ToString());
  const TreeEnsembleSpec s = ParseTreeEnsembleLegacySpec(ctx.attrs(), ctx.node(), classifier);
  const Dim features = x.has_rank ? x.dims.back() : Dim::Unknown();
  if (features.known() && features.value < s.features)
    ctx.Error("the trees read feature ", s.features - 1, " but X has ", features.value);
  const Dim rows = !x.has_rank ? Dim::Unknown() : x.rank() == 1 ? Dim::Known(1) : x.dims[0];
  if (classifier) {
    const DType label = ctx.attrs().has("classlabels_strings") ? DType::kString : DType::kInt64;
    ctx.set_output(0, TensorType::Of(label, {rows}));
    if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType::Of(DType::kFloat32, {rows, Dim::Known(s.targets)}));
  } else {
    ctx.set_output(0, TensorType::Of(DType::kFloat32, {rows, Dim::Known(s.targets)}));
  }
}

// The rows of X [N, F] (a 1-D X is one row), checked against the F the model reads.
Dim RowsOfFeatureMatrix(InferContext& ctx, int64_t features) {
  const TensorType& x = ctx.input_type(0);
  if (!IsMlNumeric(x.dtype)) ctx.Error("X must be float, double, int32 or int64, got ", x.ToString());
  if (!x.has_rank) return Dim::Unknown();
  if (x.rank() != 1 && x.rank() != 2) ctx.Error("X must be [N, F] or [F], got ", x.ToString());
  const Dim f = x.dims.back();
  if (features >= 0 && f.known() && f.value != features)
    ctx.Error("X has ", f.value, " features but the model has ", features, " coefficients per row");
  return x.rank() == 1 ? Dim::Known(1) : x.dims[0];
}

void InferLinearRegressor(InferContext& ctx) {
  const LinearModelSpec s = ParseLinearRegressorSpec(ctx.attrs(), ctx.node());
  ctx.set_output(0, TensorType::Of(DType::kFloat32, {RowsOfFeatureMatrix(ctx, s.features), Dim::Known(s.rows)}));
}

void InferLinearClassifier(InferContext& ctx) {
  const LinearModelSpec s = ParseLinearClassifierSpec(ctx.attrs(), ctx.node());
  const Dim rows = RowsOfFeatureMatrix(ctx, s.features);
  ctx.set_output(0, TensorType::Of(s.string_labels.empty() ? DType::kInt64 : DType::kString, {rows}));
  if (ctx.num_outputs() > 1) ctx.set_output(1, TensorType::Of(DType::kFloat32, {rows, Dim::Known(s.score_columns())}));
}

void InferNormalizer(InferContext& ctx) {
  const std::string norm = ctx.attrs().GetString("norm");
  if (norm != "MAX" && norm != "L1" && norm != "L2") ctx.Error("norm must be MAX, L1 or L2, got '", norm, "'");
  RowsOfFeatureMatrix(ctx, -1);
  TensorType y = ctx.input_type(0);
  y.dtype = DType::kFloat32;
  ctx.set_output(0, y);
}

void InferOneHotEncoder(InferContext& ctx) {
  const AttrMap& a = ctx.attrs();
  const bool strings = a.has("cats_strings") && !a.GetStrings("cats_strings").empty();
  const bool ints = a.has("cats_int64s") && !a.GetInts("cats_int64s").empty();
  if (strings == ints) ctx.Error("exactly one of cats_int64s and cats_strings must be a non-empty list");
  const TensorType& x = ctx.input_type(0);
  if (x.dtype != DType::kUndefined && (x.dtype == DType::kString) != strings)
    ctx.Error("X is ", x.ToString(), " but the categories are ", strings ? "strings" : "integers");
  if (!strings && x.dtype != DType::kUndefined && !IsMlNumeric(x.dtype))
    ctx.Error("X must be string, int64, int32, float or double, got ", x.ToString());
  const int64_t categories = static_cast<int64_t>(strings ? a.GetStrings("cats_strings").size() : a.GetInts("cats_int64s").size());
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(DType::kFloat32));
    return;
  }
  std::vector<Dim> dims = x.dims;
  dims.push_back(Dim::Known(categories));
  ctx.set_output(0, TensorType::Of(DType::kFloat32, dims));
}

OpSchema TreeEnsembleLegacySchema(OpId id, int since, bool classifier) {
  OpSchema s(id);
  s.Since(since).Input("X").Output("Y");
  if (classifier) s.Output("Z");
  s.Attr("aggregate_function", Attribute::String("SUM")).Attr("post_transform", Attribute::String("NONE"))
      .OptionalAttr("base_values", AttrKind::kFloats).RequiredAttr("nodes_falsenodeids", AttrKind::kInts)
      .RequiredAttr("nodes_featureids", AttrKind::kInts).OptionalAttr("nodes_hitrates", AttrKind::kFloats)
      .OptionalAttr("nodes_missing_value_tracks_true", AttrKind::kInts).RequiredAttr("nodes_modes", AttrKind::kStrings)
      .RequiredAttr("nodes_nodeids", AttrKind::kInts).RequiredAttr("nodes_treeids", AttrKind::kInts)
      .RequiredAttr("nodes_truenodeids", AttrKind::kInts).OptionalAttr("nodes_values", AttrKind::kFloats);
  const std::string w = classifier ? "class_" : "target_";
  s.RequiredAttr(w + "ids", AttrKind::kInts).RequiredAttr(w + "nodeids", AttrKind::kInts)
      .RequiredAttr(w + "treeids", AttrKind::kInts).OptionalAttr(w + "weights", AttrKind::kFloats);
  if (classifier) {
    s.OptionalAttr("classlabels_int64s", AttrKind::kInts).OptionalAttr("classlabels_strings", AttrKind::kStrings);
  } else {
    s.Attr("n_targets", Attribute::Int(1));
  }
  if (since >= 3) {
    s.OptionalAttr("base_values_as_tensor", AttrKind::kTensor).OptionalAttr("nodes_hitrates_as_tensor", AttrKind::kTensor)
        .OptionalAttr("nodes_values_as_tensor", AttrKind::kTensor).OptionalAttr(w + "weights_as_tensor", AttrKind::kTensor);
  }
  if (classifier) s.TakesStrings();  // string class labels (the kernel writes Y's strings itself)
  return s.Infer([classifier](InferContext& ctx) { InferTreeEnsembleLegacy(ctx, classifier); });
}

}  // namespace

void RegisterMlOps(OpRegistry& r) {
  for (const auto& [id, classifier] : {std::pair{OpId::kTreeEnsembleRegressor, false},
                                       std::pair{OpId::kTreeEnsembleClassifier, true}}) {
    r.Register(TreeEnsembleLegacySchema(id, 1, classifier).Until(2));
    r.Register(TreeEnsembleLegacySchema(id, 3, classifier));
  }
  r.Register(OpSchema(OpId::kTreeEnsemble).Since(5).Input("X").Output("Y").Attr("aggregate_function", Attribute::Int(1))
                 .RequiredAttr("leaf_targetids", AttrKind::kInts).RequiredAttr("leaf_weights", AttrKind::kTensor)
                 .OptionalAttr("membership_values", AttrKind::kTensor).OptionalAttr("n_targets", AttrKind::kInt)
                 .RequiredAttr("nodes_falseleafs", AttrKind::kInts).RequiredAttr("nodes_falsenodeids", AttrKind::kInts)
                 .RequiredAttr("nodes_featureids", AttrKind::kInts).OptionalAttr("nodes_hitrates", AttrKind::kTensor)
                 .OptionalAttr("nodes_missing_value_tracks_true", AttrKind::kInts)
                 .RequiredAttr("nodes_modes", AttrKind::kTensor).RequiredAttr("nodes_splits", AttrKind::kTensor)
                 .RequiredAttr("nodes_trueleafs", AttrKind::kInts).RequiredAttr("nodes_truenodeids", AttrKind::kInts)
                 .Attr("post_transform", Attribute::Int(0)).RequiredAttr("tree_roots", AttrKind::kInts)
                 .Infer(InferTreeEnsemble));
  r.Register(OpSchema(OpId::kBinarizer).Since(1).Input("X").Output("Y").Attr("threshold", Attribute::Float(0.0f))
                 .Infer(InferBinarizer));
  r.Register(OpSchema(OpId::kArrayFeatureExtractor).Since(1).Input("X").Input("Y").Output("Z").TakesStrings()
                 .Infer(InferArrayFeatureExtractor));
  r.Register(OpSchema(OpId::kLinearRegressor).Since(1).Input("X").Output("Y").OptionalAttr("coefficients", AttrKind::kFloats)
                 .OptionalAttr("intercepts", AttrKind::kFloats).Attr("post_transform", Attribute::String("NONE"))
                 .Attr("targets", Attribute::Int(1)).Infer(InferLinearRegressor));
  r.Register(OpSchema(OpId::kLinearClassifier).Since(1).Input("X").Output("Y").Output("Z")
                 .OptionalAttr("classlabels_ints", AttrKind::kInts).OptionalAttr("classlabels_strings", AttrKind::kStrings)
                 .RequiredAttr("coefficients", AttrKind::kFloats).OptionalAttr("intercepts", AttrKind::kFloats)
                 .Attr("multi_class", Attribute::Int(0)).Attr("post_transform", Attribute::String("NONE"))
                 .TakesStrings().Infer(InferLinearClassifier));
  r.Register(OpSchema(OpId::kNormalizer).Since(1).Input("X").Output("Y").Attr("norm", Attribute::String("MAX"))
                 .Infer(InferNormalizer));
  r.Register(OpSchema(OpId::kOneHotEncoder).Since(1).Input("X").Output("Y").OptionalAttr("cats_int64s", AttrKind::kInts)
                 .OptionalAttr("cats_strings", AttrKind::kStrings).Attr("zeros", Attribute::Int(1)).TakesStrings()
                 .Infer(InferOneHotEncoder));
}

}  // namespace oneflow
