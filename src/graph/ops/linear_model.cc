// Parsing of ai.onnx.ml's LinearRegressor and LinearClassifier (graph/ops/linear_model.h).
#include "graph/ops/linear_model.h"

#include <cmath>

namespace oneflow {
namespace {

// coefficients as [rows, features] with `rows` given; intercepts (optional) one per row.
void ReadCoefficients(const AttrMap& attrs, const std::string& node, LinearModelSpec& s) {
  auto fail = [&](const auto&... args) { Fail(ErrorCode::kInvalidModel, node, ": ", args...); };
  if (!attrs.has("coefficients")) fail("coefficients is required");
  s.coefficients = attrs.GetFloats("coefficients");
  if (s.rows < 1) fail("the model has ", s.rows, " coefficient rows");
  if (s.coefficients.empty() || s.coefficients.size() % static_cast<size_t>(s.rows) != 0)
    fail(s.coefficients.size(), " coefficients do not split into ", s.rows, " rows");
  s.features = static_cast<int64_t>(s.coefficients.size()) / s.rows;
  s.intercepts = attrs.GetFloats("intercepts", {});
  if (s.intercepts.empty()) s.intercepts.assign(static_cast<size_t>(s.rows), 0.0f);
  if (static_cast<int64_t>(s.intercepts.size()) != s.rows)
    fail("there are ", s.intercepts.size(), " intercepts for ", s.rows, " coefficient rows");
  s.post = ParseMlPostTransform(attrs, node);
}

}  // namespace

LinearModelSpec ParseLinearRegressorSpec(const AttrMap& attrs, const std::string& node) {
  LinearModelSpec s;
  s.rows = attrs.GetInt("targets", 1);
  ReadCoefficients(attrs, node, s);
  return s;
}

LinearModelSpec ParseLinearClassifierSpec(const AttrMap& attrs, const std::string& node) {
  LinearModelSpec s;
  const bool strings = attrs.has("classlabels_strings");
  OF_CHECK(strings != attrs.has("classlabels_ints"), kInvalidModel, node,
           ": exactly one of classlabels_ints and classlabels_strings must be set");
  if (strings) s.string_labels = attrs.GetStrings("classlabels_strings");
  else s.int_labels = attrs.GetInts("classlabels_ints");
  const int64_t labels = s.label_count();
  OF_CHECK(labels >= 1, kInvalidModel, node, ": the model has no class labels");
  // The intercepts count the coefficient rows when given; else the coefficients split one per label
  // unless they are one row of a binary model (that needs the intercept to say so).
  const std::vector<float> intercepts = attrs.GetFloats("intercepts", {});
  s.rows = intercepts.empty() ? labels : static_cast<int64_t>(intercepts.size());
  ReadCoefficients(attrs, node, s);
  s.binary = s.rows == 1 && labels == 2;
  OF_CHECK(s.rows == labels || s.rows == 1, kInvalidModel, node, ": ", s.rows, " coefficient rows for ", labels,
           " class labels (one row per label, or one row)");
  return s;
}

}  // namespace oneflow
