// The trees of ai.onnx.ml's tree-ensemble ops, parsed and checked once: shape inference (ops/ml.cc)
// and the CPU kernels (kernels/cpu/ml.cc) read a TreeEnsembleSpec. Two encodings map onto it:
//   TreeEnsemble (opset 5)     branch node i tests feature nodes_featureids[i] against
//                              nodes_splits[i] (or a membership set) and goes to a node index or a
//                              leaf index (nodes_trueleafs / nodes_falseleafs); leaf j adds
//                              leaf_weights[j] to target leaf_targetids[j]
//   TreeEnsembleRegressor / TreeEnsembleClassifier (opsets 1-3)
//                              nodes named (tree id, node id), a mode string per node (LEAF or a
//                              BRANCH_* comparison), children by node id within the tree; a leaf
//                              adds any number of (target or class id, weight) entries; base_values
//                              and a post_transform follow the aggregation
// A target no leaf reaches aggregates to 0 under every aggregation (what onnxruntime does).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/attribute.h"

namespace oneflow {

struct TreeEnsembleSpec {
  enum class Aggregate { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };
  enum class PostTransform { kNone = 0, kSoftmax = 1, kLogistic = 2, kSoftmaxZero = 3, kProbit = 4 };
  enum Mode : uint8_t { kLeq = 0, kLt = 1, kGte = 2, kGt = 3, kEq = 4, kNeq = 5, kMember = 6 };
  struct Branch {
    int64_t feature = 0;
    Mode mode = kLeq;
    double split = 0;
    bool missing_goes_true = false;  // NaN takes the true branch (else the comparison decides: false)
    int64_t child[2] = {0, 0};       // [false, true]
    bool child_is_leaf[2] = {false, false};
    size_t members_begin = 0, members_end = 0;  // a membership node's set in `members`
  };
  std::vector<Branch> nodes;
  std::vector<double> members;
  // Leaf j adds leaf_weights[k] to target leaf_targets[k] for k in [leaf_offsets[j], leaf_offsets[j + 1]).
  std::vector<int64_t> leaf_offsets = {0};
  std::vector<int64_t> leaf_targets;
  std::vector<double> leaf_weights;
  std::vector<int64_t> roots;
  std::vector<bool> root_is_leaf;  // a tree that is one leaf (then roots[t] is a leaf index)
  std::vector<double> base_values;  // per target, added after the aggregation; empty: none
  int64_t targets = 0;
  int64_t features = 0;  // 1 + the largest feature index a node reads
  Aggregate aggregate = Aggregate::kSum;
  PostTransform post = PostTransform::kNone;

  int64_t leaves() const { return static_cast<int64_t>(leaf_offsets.size()) - 1; }
};

// TreeEnsemble (opset 5). Checks sizes, indices and that every tree is a tree (no branch reaches
// itself); errors name `node_desc`. Its post_transform other than NONE is refused as unsupported
// (onnxruntime and the ONNX reference disagree on them for this op).
TreeEnsembleSpec ParseTreeEnsembleSpec(const AttrMap& attrs, const std::string& node_desc);

// TreeEnsembleRegressor (classifier false) or TreeEnsembleClassifier: the same checks; a
// classifier's targets are its classes (classlabels_int64s or classlabels_strings).
TreeEnsembleSpec ParseTreeEnsembleLegacySpec(const AttrMap& attrs, const std::string& node_desc, bool classifier);

// ai.onnx.ml's `post_transform` string (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT), which the tree
// ensembles and the linear models share; anything else is kInvalidModel naming `node_desc`.
TreeEnsembleSpec::PostTransform ParseMlPostTransform(const AttrMap& attrs, const std::string& node_desc);

}  // namespace oneflow
