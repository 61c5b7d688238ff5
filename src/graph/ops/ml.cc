// Op family: ai.onnx.ml, the classic-ML domain scikit-learn converters write (skl2onnx): the
// tensor-only ops. Kernels: kernels/cpu/ml.cc.
//   Binarizer(X) -> Y            Y = X > threshold ? 1 : 0, X's type (float, double, int32, int64)
//   ArrayFeatureExtractor(X [..., F], Y int64 [k] or [1, k]) -> Z [..., k]
//                                Z[..., j] = X[..., Y[j]]; a 1-D X gives [1, k]
//   TreeEnsemble(X [N, F]) -> Y [N, n_targets]   (opset 5; the trees: tree_ensemble.h)
#include <cmath>
#include <limits>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/tree_ensemble.h"

namespace oneflow {
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
  }
  const int64_t leaves = static_cast<int64_t>(s.leaf_targets.size()), branches = static_cast<int64_t>(count);
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
  // Every tree must end in leaves: a walk over branch nodes that meets a node on its own path
  // would never stop. Iterative depth-first search; state 1 = on the path, 2 = done.
  std::vector<uint8_t> state(count, 0);
  for (int64_t root : s.roots) {
    OF_CHECK(root >= 0 && root < branches, kInvalidModel, node, ": tree root ", root, " is not a node index");
    const Spec::Branch& r = s.nodes[static_cast<size_t>(root)];
    const bool leaf = r.child_is_leaf[0] && r.child_is_leaf[1] && r.child[0] == r.child[1];
    OF_CHECK(!leaf || root < leaves, kInvalidModel, node, ": tree root ", root, " is a leaf outside leaf_targetids");
    s.root_is_leaf.push_back(leaf);
    if (leaf) continue;
    std::vector<std::pair<int64_t, int>> stack = {{root, 0}};
    if (state[static_cast<size_t>(root)] == 0) state[static_cast<size_t>(root)] = 1;
    else stack.clear();
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
  return s;
}

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

}  // namespace

void RegisterMlOps(OpRegistry& r) {
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
  r.Register(OpSchema(OpId::kArrayFeatureExtractor).Since(1).Input("X").Input("Y").Output("Z")
                 .Infer(InferArrayFeatureExtractor));
}

}  // namespace oneflow
