// The attributes of ai.onnx.ml TreeEnsemble (opset 5), parsed and checked once: shape inference
// (ops/ml.cc) and the CPU kernel (kernels/cpu/ml.cc) read a TreeEnsembleSpec.
//
// Branch node i tests feature nodes_featureids[i] against nodes_splits[i] (or, for a membership
// node, against its set) and goes to its true or false child: a node index, or a leaf index where
// nodes_trueleafs / nodes_falseleafs say so. A leaf adds leaf_weights[j] to target
// leaf_targetids[j]; the trees' contributions are aggregated per target (post_transform NONE).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/attribute.h"

namespace oneflow {

struct TreeEnsembleSpec {
  enum class Aggregate { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };
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
  std::vector<int64_t> leaf_targets;
  std::vector<double> leaf_weights;
  std::vector<int64_t> roots;
  std::vector<bool> root_is_leaf;  // a tree that is one leaf (the leaf with the root's index)
  int64_t targets = 0;
  int64_t features = 0;  // 1 + the largest feature index a node reads
  Aggregate aggregate = Aggregate::kSum;
};

// Checks sizes, indices and that every tree is a tree (no branch reaches itself); errors name
// `node_desc`. A post-transform other than NONE is refused as unsupported.
TreeEnsembleSpec ParseTreeEnsembleSpec(const AttrMap& attrs, const std::string& node_desc);

}  // namespace oneflow
