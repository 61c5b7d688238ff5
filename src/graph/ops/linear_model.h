// ai.onnx.ml's linear models, read and checked once: shape inference (ops/ml.cc) and the CPU kernels
// (kernels/cpu/ml.cc) share a LinearModelSpec.
//   LinearRegressor(X [N, F]) -> Y [N, targets]         Y = post_transform(X W^T + b)
//   LinearClassifier(X [N, F]) -> Y [N] labels, Z [N, k]  Z = post_transform(X W^T + b); Y the label of
//                               Z's largest column (ties to the first). One row of coefficients with
//                               two labels is the binary form (scikit-learn's binary LogisticRegression,
//                               LinearSVC), where we follow onnxruntime rather than the ONNX reference:
//                               Y = labels[s > 0], Z = [1 - p, p] with p = logistic(s) under LOGISTIC,
//                               else p = s (the reference writes post_transform([-s, s])). One row with
//                               one label gives that label where Z >= the threshold (0 for NONE, else
//                               0.5), else 0 or "", as the reference does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/attribute.h"
#include "graph/ops/tree_ensemble.h"

namespace oneflow {

struct LinearModelSpec {
  int64_t rows = 0;      // coefficient rows: targets, or classes (1 in the binary form)
  int64_t features = 0;  // coefficients per row: X's last dimension
  std::vector<float> coefficients;  // [rows, features]
  std::vector<float> intercepts;    // [rows], zeros when the model has none
  TreeEnsembleSpec::PostTransform post = TreeEnsembleSpec::PostTransform::kNone;
  // Classifier only: its labels (one of the two), and how many columns Z has.
  std::vector<int64_t> int_labels;
  std::vector<std::string> string_labels;
  bool binary = false;  // one row, two labels: Z's columns are [1 - p, p]
  int64_t score_columns() const { return binary ? 2 : rows; }
  int64_t label_count() const {
    return string_labels.empty() ? static_cast<int64_t>(int_labels.size()) : static_cast<int64_t>(string_labels.size());
  }
};

LinearModelSpec ParseLinearRegressorSpec(const AttrMap& attrs, const std::string& node_desc);
LinearModelSpec ParseLinearClassifierSpec(const AttrMap& attrs, const std::string& node_desc);

}  // namespace oneflow
