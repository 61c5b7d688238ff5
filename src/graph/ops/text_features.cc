// Op family: text features. TfIdfVectorizer (opset 9): counts the n-grams of a pool in each row of
// token ids (skip-grams too) and weighs the counts.
//   TfIdfVectorizer(X [C] or [N, C] int32/int64) -> Y [width] or [N, width] float32
// Attributes and their checks: text_features.h. Kernel: kernels/cpu/tfidf_vectorizer.cc.
#include "graph/ops/text_features.h"

#include <algorithm>
#include <map>

#include "graph/infer_util.h"
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {

TfIdfSpec ParseTfIdfSpec(const AttrMap& attrs, const std::string& node) {
  TfIdfSpec s;
  const std::string& mode = attrs.GetString("mode");
  if (mode == "TF") s.mode = TfIdfMode::kTf;
  else if (mode == "IDF") s.mode = TfIdfMode::kIdf;
  else if (mode == "TFIDF") s.mode = TfIdfMode::kTfIdf;
  else Fail(ErrorCode::kInvalidModel, node, ": mode must be TF, IDF or TFIDF, got '", mode, "'");
  s.min_gram = attrs.GetInt("min_gram_length");
  s.max_gram = attrs.GetInt("max_gram_length");
  s.max_skip = attrs.GetInt("max_skip_count");
  OF_CHECK(s.min_gram >= 1 && s.min_gram <= s.max_gram && s.max_gram <= kMaxWindowAttr, kInvalidModel, node,
           ": need 1 <= min_gram_length <= max_gram_length <= 2^31, got ", s.min_gram, " and ", s.max_gram);
  OF_CHECK(s.max_skip >= 0 && s.max_skip <= kMaxWindowAttr, kInvalidModel, node,
           ": max_skip_count must be in [0, 2^31], got ", s.max_skip);
  OF_CHECK(!attrs.has("pool_strings") || attrs.GetStrings("pool_strings").empty(), kUnsupported, node,
           ": a pool of strings needs string tensors, which are not supported (pool_int64s is)");
  const std::vector<int64_t> pool = attrs.GetInts("pool_int64s", {});
  const std::vector<int64_t>& starts = attrs.GetInts("ngram_counts");
  const int64_t pool_size = static_cast<int64_t>(pool.size());
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t begin = starts[i], end = i + 1 < starts.size() ? starts[i + 1] : pool_size;
    const int64_t n = static_cast<int64_t>(i) + 1;
    OF_CHECK(begin >= 0 && begin <= end && end <= pool_size, kInvalidModel, node, ": ngram_counts[", i, "] = ",
             begin, " does not start a run of the pool (", pool_size, " entries) before the next group");
    OF_CHECK((end - begin) % n == 0, kInvalidModel, node, ": the ", n, "-grams take ", end - begin,
             " pool entries, not a multiple of ", n);
    for (int64_t at = begin; at < end; at += n)
      s.grams.emplace_back(pool.begin() + at, pool.begin() + at + n);
  }
  s.columns = attrs.GetInts("ngram_indexes");
  OF_CHECK(s.columns.size() == s.grams.size(), kInvalidModel, node, ": ngram_indexes has ", s.columns.size(),
           " entries for the pool's ", s.grams.size(), " n-grams");
  for (int64_t c : s.columns) {
    OF_CHECK(c >= 0 && c < kMaxWindowAttr, kInvalidModel, node, ": ngram_indexes holds ", c,
             ", outside [0, 2^31)");
    s.width = std::max(s.width, c + 1);
  }
  // One weight per n-gram of the pool; a column takes the weight of the n-gram counted into it
  // (as onnxruntime reads them).
  const std::vector<float> weights = attrs.GetFloats("weights", {});
  OF_CHECK(weights.empty() || weights.size() == s.columns.size(), kInvalidModel, node, ": weights has ",
           weights.size(), " entries for the pool's ", s.columns.size(), " n-grams");
  if (!weights.empty()) {
    std::map<int64_t, float> by_column;
    for (size_t k = 0; k < weights.size(); ++k) by_column[s.columns[k]] = weights[k];
    s.weights.assign(by_column.begin(), by_column.end());
  }
  return s;
}

namespace {

void InferTfIdfVectorizer(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (x.dtype != DType::kInt32 && x.dtype != DType::kInt64)
    ctx.Error("X must hold int32 or int64 token ids, got ", x.ToString());
  if (x.has_rank && x.rank() != 1 && x.rank() != 2) ctx.Error("X must be [C] or [N, C], got ", x.ToString());
  const TfIdfSpec s = ParseTfIdfSpec(ctx.attrs(), ctx.node());
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(DType::kFloat32));
    return;
  }
  std::vector<Dim> out;
  if (x.rank() == 2) out.push_back(x.dims[0]);
  out.push_back(Dim::Known(s.width));
  ctx.set_output(0, TensorType::Of(DType::kFloat32, out));
}

}  // namespace

void RegisterTextFeatureOps(OpRegistry& r) {
  r.Register(OpSchema(op::kTfIdfVectorizer).Since(9).Input("X").Output("Y").RequiredAttr("max_gram_length", AttrKind::kInt)
                 .RequiredAttr("min_gram_length", AttrKind::kInt).RequiredAttr("max_skip_count", AttrKind::kInt)
                 .RequiredAttr("mode", AttrKind::kString).RequiredAttr("ngram_counts", AttrKind::kInts)
                 .RequiredAttr("ngram_indexes", AttrKind::kInts).OptionalAttr("pool_int64s", AttrKind::kInts)
                 .OptionalAttr("pool_strings", AttrKind::kStrings).OptionalAttr("weights", AttrKind::kFloats)
                 .Infer(InferTfIdfVectorizer));
}

}  // namespace oneflow
