// graph/ops/tree_ensemble.h: the two encodings of ai.onnx.ml's trees, parsed into one spec.
#include "graph/ops/tree_ensemble.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "base/error.h"
#include "graph/infer_util.h"

namespace oneflow {
namespace {

using Spec = TreeEnsembleSpec;

// Every tree must end in leaves: a walk over branch nodes that meets a node on its own path would
// never stop. Iterative depth-first search from each root; state 1 = on the path, 2 = done.
void CheckTreesEnd(const Spec& s, const std::string& node) {
  std::vector<uint8_t> state(s.nodes.size(), 0);
  for (size_t t = 0; t < s.roots.size(); ++t) {
    if (s.root_is_leaf[t]) continue;
    const int64_t root = s.roots[t];
    if (state[static_cast<size_t>(root)] != 0) continue;
    state[static_cast<size_t>(root)] = 1;
    std::vector<std::pair<int64_t, int>> stack = {{root, 0}};
    while (!stack.empty()) {
      auto& [at, side] = stack.back();
      if (side == 2) {
        state[static_cast<size_t>(at)] = 2;
        stack.pop_back();
        continue;
      }
      const Spec::Branch& b = s.nodes[static_cast<size_t>(at)];
      const int this_side = side++;
      if (b.child_is_leaf[this_side]) continue;
      const int64_t child = b.child[this_side];
      OF_CHECK(state[static_cast<size_t>(child)] != 1, kInvalidModel, node, ": node ", child,
               " is reached again from its own branch (the trees have a cycle)");
      if (state[static_cast<size_t>(child)] == 0) {
        state[static_cast<size_t>(child)] = 1;
        stack.push_back({child, 0});
      }
    }
  }
}

// A float list attribute, or its *_as_tensor form (opset 3); empty when neither is given.
std::vector<double> FloatsOrTensor(const AttrMap& attrs, const std::string& name, const std::string& node) {
  std::vector<double> out;
  if (attrs.has(name + "_as_tensor")) {
    const Tensor& t = attrs.GetTensor(name + "_as_tensor");
    OF_CHECK(IsFloatDType(t.dtype()), kInvalidModel, node, ": ", name, "_as_tensor must be a float tensor");
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.GetAsDouble(i));
  } else if (attrs.has(name)) {
    for (float v : attrs.GetFloats(name)) out.push_back(v);
  }
  return out;
}

}  // namespace

TreeEnsembleSpec ParseTreeEnsembleSpec(const AttrMap& attrs, const std::string& node) {
  using Spec = TreeEnsembleSpec;
  Spec s;
  const int64_t aggregate = attrs.GetInt("aggregate_function"), post = attrs.GetInt("post_transform");
  OF_CHECK(aggregate >= 0 && aggregate <= 3, kInvalidModel, node, ": aggregate_function must be 0 to 3, got ", aggregate);
  OF_CHECK(post >= 0 && post <= 4, kInvalidModel, node, ": post_transform must be 0 to 4, got ", post);
  // onnxruntime and the ONNX reference disagree on the post-transforms (the reference skips them).
  OF_CHECK(post == 0, kUnsupported, node, ": post_transform ", post, " is not supported (only NONE)");
  s.aggregate = static_cast<Spec::Aggregate>(aggregate);
  s.targets = attrs.GetInt("n_targets", 1);
  OF_CHECK(s.targets >= 1 && s.targets <= kMaxWindowAttr, kInvalidModel, node, ": n_targets must be in [1, 2^31], got ",
           s.targets);
  const std::vector<int64_t>& features = attrs.GetInts("nodes_featureids");
  const Tensor& modes = attrs.GetTensor("nodes_modes");
  const Tensor& splits = attrs.GetTensor("nodes_splits");
  const std::vector<int64_t>& true_ids = attrs.GetInts("nodes_truenodeids");
  const std::vector<int64_t>& false_ids = attrs.GetInts("nodes_falsenodeids");
  const std::vector<int64_t>& true_leafs = attrs.GetInts("nodes_trueleafs");
  const std::vector<int64_t>& false_leafs = attrs.GetInts("nodes_falseleafs");
  const std::vector<int64_t> missing = attrs.GetInts("nodes_missing_value_tracks_true", {});
  const size_t count = features.size();
  OF_CHECK(modes.dtype() == DType::kUInt8, kInvalidModel, node, ": nodes_modes must be a uint8 tensor");
  OF_CHECK(IsFloatDType(splits.dtype()), kInvalidModel, node, ": nodes_splits must be a float tensor");
  for (const auto& [name, size] : {std::pair<const char*, size_t>{"nodes_modes", static_cast<size_t>(modes.numel())},
                                   {"nodes_splits", static_cast<size_t>(splits.numel())},
                                   {"nodes_truenodeids", true_ids.size()}, {"nodes_falsenodeids", false_ids.size()},
                                   {"nodes_trueleafs", true_leafs.size()}, {"nodes_falseleafs", false_leafs.size()}})
    OF_CHECK(size == count, kInvalidModel, node, ": ", name, " has ", size, " entries for ", count, " nodes");
  OF_CHECK(missing.empty() || missing.size() == count, kInvalidModel, node, ": nodes_missing_value_tracks_true has ",
           missing.size(), " entries for ", count, " nodes");
  s.leaf_targets = attrs.GetInts("leaf_targetids");
  const Tensor& weights = attrs.GetTensor("leaf_weights");
  OF_CHECK(IsFloatDType(weights.dtype()) && static_cast<size_t>(weights.numel()) == s.leaf_targets.size(),
           kInvalidModel, node, ": leaf_weights must be a float tensor with one weight per leaf_targetids entry");
  for (size_t j = 0; j < s.leaf_targets.size(); ++j) {
    OF_CHECK(s.leaf_targets[j] >= 0 && s.leaf_targets[j] < s.targets, kInvalidModel, node, ": leaf ", j,
             " adds to target ", s.leaf_targets[j], ", outside [0, ", s.targets, ")");
    s.leaf_weights.push_back(weights.GetAsDouble(static_cast<int64_t>(j)));
    s.leaf_offsets.push_back(static_cast<int64_t>(j) + 1);
  }
  const int64_t leaves = s.leaves(), branches = static_cast<int64_t>(count);
  // Membership sets, NaN-terminated, in the order the membership nodes appear in nodes_modes.
  std::vector<double> member_values;
  if (attrs.has("membership_values")) {
    const Tensor& m = attrs.GetTensor("membership_values");
    OF_CHECK(IsFloatDType(m.dtype()), kInvalidModel, node, ": membership_values must be a float tensor");
    for (int64_t i = 0; i < m.numel(); ++i) member_values.push_back(m.GetAsDouble(i));
  }
  size_t next_member = 0;
  s.nodes.resize(count);
  for (size_t i = 0; i < count; ++i) {
    Spec::Branch& b = s.nodes[i];
    const uint8_t mode = modes.data<uint8_t>()[i];
    OF_CHECK(mode <= Spec::kMember, kInvalidModel, node, ": nodes_modes[", i, "] = ", int{mode}, " is not a mode (0 to 6)");
    b.mode = static_cast<Spec::Mode>(mode);
    b.feature = features[i];
    OF_CHECK(b.feature >= 0 && b.feature < kMaxWindowAttr, kInvalidModel, node, ": node ", i, " reads feature ",
             b.feature);
    s.features = std::max(s.features, b.feature + 1);
    b.split = splits.GetAsDouble(static_cast<int64_t>(i));
    b.missing_goes_true = !missing.empty() && missing[i] != 0;
    const int64_t ids[2] = {false_ids[i], true_ids[i]};
    const int64_t is_leaf[2] = {false_leafs[i], true_leafs[i]};
    for (int side = 0; side < 2; ++side) {
      b.child[side] = ids[side];
      b.child_is_leaf[side] = is_leaf[side] != 0;
      OF_CHECK(ids[side] >= 0 && ids[side] < (b.child_is_leaf[side] ? leaves : branches), kInvalidModel, node,
               ": node ", i, "'s ", side ? "true" : "false", " child ", ids[side], " is not a ",
               b.child_is_leaf[side] ? "leaf" : "node", " index");
    }
    if (b.mode == Spec::kMember) {
      b.members_begin = s.members.size();
      while (next_member < member_values.size() && !std::isnan(member_values[next_member]))
        s.members.push_back(member_values[next_member++]);
      OF_CHECK(next_member < member_values.size(), kInvalidModel, node, ": membership node ", i,
               " has no NaN-terminated set left in membership_values");
      ++next_member;  // the NaN
      b.members_end = s.members.size();
    }
  }
  s.roots = attrs.GetInts("tree_roots");
  OF_CHECK(!s.roots.empty(), kInvalidModel, node, ": tree_roots is empty");
  for (int64_t root : s.roots) {
    OF_CHECK(root >= 0 && root < branches, kInvalidModel, node, ": tree root ", root, " is not a node index");
    // A tree that is one leaf: a root whose two children are the same leaf, the leaf with its index.
    const TreeEnsembleSpec::Branch& r = s.nodes[static_cast<size_t>(root)];
    const bool leaf = r.child_is_leaf[0] && r.child_is_leaf[1] && r.child[0] == r.child[1];
    OF_CHECK(!leaf || root < leaves, kInvalidModel, node, ": tree root ", root, " is a leaf outside leaf_targetids");
    s.root_is_leaf.push_back(leaf);
  }
  CheckTreesEnd(s, node);
  return s;
}

TreeEnsembleSpec::PostTransform ParseMlPostTransform(const AttrMap& attrs, const std::string& node) {
  using Post = TreeEnsembleSpec::PostTransform;
  static const std::pair<const char*, Post> kPosts[] = {{"NONE", Post::kNone}, {"SOFTMAX", Post::kSoftmax},
                                                        {"LOGISTIC", Post::kLogistic}, {"SOFTMAX_ZERO", Post::kSoftmaxZero},
                                                        {"PROBIT", Post::kProbit}};
  const std::string post = attrs.GetString("post_transform", "NONE");
  for (const auto& [name, value] : kPosts)
    if (post == name) return value;
  Fail(ErrorCode::kInvalidModel, node, ": post_transform must be NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT, got '",
       post, "'");
}

TreeEnsembleSpec ParseTreeEnsembleLegacySpec(const AttrMap& attrs, const std::string& node, bool classifier) {
  Spec s;
  const std::string aggregate = attrs.GetString("aggregate_function", "SUM");
  static const std::pair<const char*, Spec::Aggregate> kAggregates[] = {
      {"AVERAGE", Spec::Aggregate::kAverage}, {"SUM", Spec::Aggregate::kSum}, {"MIN", Spec::Aggregate::kMin},
      {"MAX", Spec::Aggregate::kMax}};
  bool known = false;
  for (const auto& [name, value] : kAggregates)
    if (aggregate == name) s.aggregate = value, known = true;
  OF_CHECK(known, kInvalidModel, node, ": aggregate_function must be SUM, AVERAGE, MIN or MAX, got '", aggregate, "'");
  s.post = ParseMlPostTransform(attrs, node);

  // The nodes, named (tree id, node id).
  const std::vector<int64_t>& tree_ids = attrs.GetInts("nodes_treeids");
  const std::vector<int64_t>& node_ids = attrs.GetInts("nodes_nodeids");
  const std::vector<int64_t>& features = attrs.GetInts("nodes_featureids");
  const std::vector<std::string>& modes = attrs.GetStrings("nodes_modes");
  const std::vector<int64_t>& true_ids = attrs.GetInts("nodes_truenodeids");
  const std::vector<int64_t>& false_ids = attrs.GetInts("nodes_falsenodeids");
  const std::vector<double> values = FloatsOrTensor(attrs, "nodes_values", node);
  const std::vector<int64_t> missing = attrs.GetInts("nodes_missing_value_tracks_true", {});
  const size_t count = tree_ids.size();
  for (const auto& [name, size] : {std::pair<const char*, size_t>{"nodes_nodeids", node_ids.size()},
                                   {"nodes_featureids", features.size()}, {"nodes_modes", modes.size()},
                                   {"nodes_truenodeids", true_ids.size()}, {"nodes_falsenodeids", false_ids.size()},
                                   {"nodes_values", values.size()}})
    OF_CHECK(size == count, kInvalidModel, node, ": ", name, " has ", size, " entries for ", count, " nodes");
  OF_CHECK(missing.empty() || missing.size() == count, kInvalidModel, node, ": nodes_missing_value_tracks_true has ",
           missing.size(), " entries for ", count, " nodes");
  static const std::pair<const char*, Spec::Mode> kModes[] = {
      {"BRANCH_LEQ", Spec::kLeq}, {"BRANCH_LT", Spec::kLt}, {"BRANCH_GTE", Spec::kGte}, {"BRANCH_GT", Spec::kGt},
      {"BRANCH_EQ", Spec::kEq},   {"BRANCH_NEQ", Spec::kNeq}};
  // Leaves and branches get their own indices; `index` maps a node's name to (is leaf, index).
  std::map<std::pair<int64_t, int64_t>, std::pair<bool, int64_t>> index;
  std::vector<size_t> branch_at;  // the attribute position of each branch
  int64_t leaves = 0;
  for (size_t i = 0; i < count; ++i) {
    const bool leaf = modes[i] == "LEAF";
    bool mode_known = leaf;
    for (const auto& [name, mode] : kModes) mode_known = mode_known || modes[i] == name;
    OF_CHECK(mode_known, kInvalidModel, node, ": nodes_modes[", i, "] = '", modes[i],
             "' is not LEAF or BRANCH_LEQ/LT/GTE/GT/EQ/NEQ");
    const int64_t at = leaf ? leaves++ : static_cast<int64_t>(branch_at.size());
    if (!leaf) branch_at.push_back(i);
    OF_CHECK(index.emplace(std::make_pair(tree_ids[i], node_ids[i]), std::make_pair(leaf, at)).second, kInvalidModel,
             node, ": node (tree ", tree_ids[i], ", id ", node_ids[i], ") is listed twice");
  }
  // Branches, their children resolved within their tree.
  std::map<std::pair<int64_t, int64_t>, bool> has_parent;
  s.nodes.resize(branch_at.size());
  for (size_t k = 0; k < branch_at.size(); ++k) {
    const size_t i = branch_at[k];
    Spec::Branch& b = s.nodes[k];
    for (const auto& [name, mode] : kModes)
      if (modes[i] == name) b.mode = mode;
    b.feature = features[i];
    OF_CHECK(b.feature >= 0 && b.feature < kMaxWindowAttr, kInvalidModel, node, ": node ", i, " reads feature ", b.feature);
    s.features = std::max(s.features, b.feature + 1);
    b.split = values[i];
    b.missing_goes_true = !missing.empty() && missing[i] != 0;
    const int64_t ids[2] = {false_ids[i], true_ids[i]};
    for (int side = 0; side < 2; ++side) {
      const auto it = index.find({tree_ids[i], ids[side]});
      OF_CHECK(it != index.end(), kInvalidModel, node, ": node (tree ", tree_ids[i], ", id ", node_ids[i], ")'s ",
               side ? "true" : "false", " child ", ids[side], " is not a node of its tree");
      b.child_is_leaf[side] = it->second.first;
      b.child[side] = it->second.second;
      has_parent[{tree_ids[i], ids[side]}] = true;
    }
  }
  // Each tree's root: its one node no other node points to.
  std::map<int64_t, std::pair<bool, int64_t>> root_of;
  for (size_t i = 0; i < count; ++i) {
    if (has_parent.count({tree_ids[i], node_ids[i]})) continue;
    OF_CHECK(!root_of.count(tree_ids[i]), kInvalidModel, node, ": tree ", tree_ids[i], " has more than one root");
    root_of[tree_ids[i]] = index[{tree_ids[i], node_ids[i]}];
  }
  OF_CHECK(!root_of.empty(), kInvalidModel, node, ": the ensemble has no trees");
  for (const auto& [tree, root] : root_of) {
    s.roots.push_back(root.second);
    s.root_is_leaf.push_back(root.first);
  }
  CheckTreesEnd(s, node);

  // The leaves' weights: (tree id, node id, target or class id, weight) entries.
  const std::string prefix = classifier ? "class_" : "target_";
  const std::vector<int64_t>& w_trees = attrs.GetInts(prefix + "treeids");
  const std::vector<int64_t>& w_nodes = attrs.GetInts(prefix + "nodeids");
  const std::vector<int64_t>& w_ids = attrs.GetInts(prefix + "ids");
  const std::vector<double> weights = FloatsOrTensor(attrs, prefix + "weights", node);
  OF_CHECK(w_nodes.size() == w_trees.size() && w_ids.size() == w_trees.size() && weights.size() == w_trees.size(),
           kInvalidModel, node, ": ", prefix, "treeids, ", prefix, "nodeids, ", prefix, "ids and ", prefix,
           "weights must have one length");
  if (classifier) {
    const bool strings = attrs.has("classlabels_strings");
    OF_CHECK(strings != attrs.has("classlabels_int64s"), kInvalidModel, node,
             ": exactly one of classlabels_int64s and classlabels_strings must be set");
    s.targets = static_cast<int64_t>(strings ? attrs.GetStrings("classlabels_strings").size()
                                             : attrs.GetInts("classlabels_int64s").size());
    OF_CHECK(s.targets >= 1, kInvalidModel, node, ": ", strings ? "classlabels_strings" : "classlabels_int64s", " is empty");
  } else {
    s.targets = attrs.GetInt("n_targets", 1);
  }
  OF_CHECK(s.targets >= 1 && s.targets <= kMaxWindowAttr, kInvalidModel, node, ": ", classifier ? "the class count" : "n_targets",
           " must be in [1, 2^31], got ", s.targets);
  std::vector<std::vector<std::pair<int64_t, double>>> per_leaf(static_cast<size_t>(leaves));
  for (size_t k = 0; k < w_trees.size(); ++k) {
    const auto it = index.find({w_trees[k], w_nodes[k]});
    OF_CHECK(it != index.end() && it->second.first, kInvalidModel, node, ": weight ", k, " names (tree ", w_trees[k],
             ", id ", w_nodes[k], "), which is not a leaf");
    OF_CHECK(w_ids[k] >= 0 && w_ids[k] < s.targets, kInvalidModel, node, ": weight ", k, " adds to ",
             classifier ? "class " : "target ", w_ids[k], ", outside [0, ", s.targets, ")");
    per_leaf[static_cast<size_t>(it->second.second)].push_back({w_ids[k], weights[k]});
  }
  for (const auto& entries : per_leaf) {
    for (const auto& [target, weight] : entries) {
      s.leaf_targets.push_back(target);
      s.leaf_weights.push_back(weight);
    }
    s.leaf_offsets.push_back(static_cast<int64_t>(s.leaf_targets.size()));
  }
  s.base_values = FloatsOrTensor(attrs, "base_values", node);
  OF_CHECK(s.base_values.empty() || static_cast<int64_t>(s.base_values.size()) == s.targets ||
               (classifier && s.targets == 2 && s.base_values.size() == 1),
           kInvalidModel, node, ": base_values has ", s.base_values.size(), " entries for ", s.targets,
           classifier ? " classes" : " targets");
  return s;
}

}  // namespace oneflow
