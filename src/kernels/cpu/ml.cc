// CPU kernels of the ai.onnx.ml ops (graph/ops/ml.cc): Binarizer, ArrayFeatureExtractor,
// TreeEnsemble, TreeEnsembleRegressor and TreeEnsembleClassifier (rows in parallel; per row every
// tree walked from its root to a leaf: TreeWalker), LinearRegressor, LinearClassifier, Normalizer and
// OneHotEncoder (rows in parallel).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "graph/ops/linear_model.h"
#include "graph/ops/tree_ensemble.h"

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa_region.h"
#include "kernels/kernel.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

void BinarizerKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const double threshold = static_cast<double>(ctx.attrs().GetFloat("threshold"));
  DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    // NaN is refused, as onnxruntime and scikit-learn's Binarizer refuse it.
    for (int64_t i = 0; i < x.numel(); ++i)
      OF_CHECK(!std::isnan(static_cast<double>(in[i])), kInvalidArgument, ctx.node_desc(), ": X holds NaN at element ", i);
    ctx.pool().ParallelFor(x.numel(), 1.0, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = static_cast<T>(static_cast<double>(in[i]) > threshold ? 1 : 0);
    });
  });
}
ONEFLOW_KERNEL(Binarizer, BinarizerKernel);

void ArrayFeatureExtractorKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  OF_CHECK(x.rank() >= 1, kInvalidArgument, ctx.node_desc(), ": X must have at least one dimension");
  const int64_t features = x.dim(static_cast<int64_t>(x.rank()) - 1);
  const int64_t k = indices.numel();
  const int64_t* idx = indices.data<int64_t>();
  for (int64_t j = 0; j < k; ++j)
    OF_CHECK(idx[j] >= 0 && idx[j] < features, kInvalidArgument, ctx.node_desc(), ": index ", idx[j],
             " (Y[", j, "]) is outside X's last dimension of ", features);
  Tensor& z = ctx.output(0);
  const int64_t rows = features == 0 ? 0 : x.numel() / features;  // no features: no index passed the check
  if (x.dtype() == DType::kString) {  // objects, copied one by one
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j) z.strings()[r * k + j] = x.strings()[r * features + idx[j]];
    return;
  }
  const size_t item = DTypeSize(x.dtype());
  const char* in = static_cast<const char*>(x.raw());
  char* out = static_cast<char*>(z.raw());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(out + static_cast<size_t>(r * k + j) * item, in + static_cast<size_t>(r * features + idx[j]) * item,
                  item);
}
ONEFLOW_KERNEL(ArrayFeatureExtractor, ArrayFeatureExtractorKernel);

using TreeSpec = TreeEnsembleSpec;

// Walks every tree of `spec` for blocks of rows and aggregates their leaves per target. The trees
// are recast at construction into compact nodes (24 bytes: split, feature, the two next steps,
// a leaf as ~index), and a block of rows walks one tree after another while that tree is in
// cache; ensembles of only `x <= split` branches without missing-value tracking (what
// scikit-learn's converters write) take a loop with no mode dispatch.
class TreeWalker {
 public:
  static constexpr int64_t kBlockRows = 64;

  explicit TreeWalker(const TreeSpec& spec) : spec_(spec) {
    nodes_.reserve(spec.nodes.size());
    leq_only_ = true;
    for (const TreeSpec::Branch& b : spec.nodes) {
      Node n;
      n.split = b.split;
      n.feature = static_cast<int32_t>(b.feature);
      for (int side = 0; side < 2; ++side)
        n.next[side] = static_cast<int32_t>(b.child_is_leaf[side] ? ~b.child[side] : b.child[side]);
      nodes_.push_back(n);
      leq_only_ = leq_only_ && b.mode == TreeSpec::kLeq && !b.missing_goes_true;
    }
    for (size_t t = 0; t < spec.roots.size(); ++t)
      roots_.push_back(static_cast<int32_t>(spec.root_is_leaf[t] ? ~spec.roots[t] : spec.roots[t]));
  }

  // rows [n, features] (row stride `stride`) -> acc [n, targets] and reached [n, targets].
  void Aggregate(const double* rows, int64_t n, int64_t stride, double* acc, char* reached) const {
    const int64_t targets = spec_.targets;
    std::fill_n(acc, n * targets, 0.0);
    std::fill_n(reached, n * targets, 0);
    switch (spec_.aggregate) {
      case TreeSpec::Aggregate::kSum: case TreeSpec::Aggregate::kAverage:
        AddLeaves(rows, n, stride, acc, reached, [](double a, double w, char) { return a + w; });
        break;
      case TreeSpec::Aggregate::kMin:
        AddLeaves(rows, n, stride, acc, reached, [](double a, double w, char seen) { return seen ? std::min(a, w) : w; });
        break;
      case TreeSpec::Aggregate::kMax:
        AddLeaves(rows, n, stride, acc, reached, [](double a, double w, char seen) { return seen ? std::max(a, w) : w; });
        break;
    }
    if (spec_.aggregate == TreeSpec::Aggregate::kAverage)
      for (int64_t i = 0; i < n * targets; ++i) acc[i] /= static_cast<double>(roots_.size());
  }

 private:
  // Tree by tree, each row's leaf folds its (target, weight) entries into acc with `combine`.
  template <typename Combine>
  void AddLeaves(const double* rows, int64_t n, int64_t stride, double* acc, char* reached, Combine combine) const {
    const int64_t targets = spec_.targets;
    const int64_t* offsets = spec_.leaf_offsets.data();
    const int64_t* leaf_targets = spec_.leaf_targets.data();
    const double* weights = spec_.leaf_weights.data();
    for (size_t t = 0; t < roots_.size(); ++t)
      for (int64_t r = 0; r < n; ++r) {
        const int64_t leaf = LeafOf(roots_[t], rows + r * stride);
        double* a = acc + r * targets;
        char* seen = reached + r * targets;
        for (int64_t k = offsets[leaf]; k < offsets[leaf + 1]; ++k) {
          const int64_t target = leaf_targets[k];
          a[target] = combine(a[target], weights[k], seen[target]);
          seen[target] = 1;
        }
      }
  }

  struct Node {
    double split;
    int32_t feature;
    int32_t next[2];  // [false, true]: a node index, or ~leaf index
  };

  bool Goes(size_t at, double v) const {
    const TreeSpec::Branch& b = spec_.nodes[at];
    if (std::isnan(v) && b.missing_goes_true) return true;
    switch (b.mode) {
      case TreeSpec::kLeq: return v <= b.split;
      case TreeSpec::kLt: return v < b.split;
      case TreeSpec::kGte: return v >= b.split;
      case TreeSpec::kGt: return v > b.split;
      case TreeSpec::kEq: return v == b.split;
      case TreeSpec::kNeq: return v != b.split;
      case TreeSpec::kMember:
        return std::find(spec_.members.begin() + static_cast<std::ptrdiff_t>(b.members_begin),
                         spec_.members.begin() + static_cast<std::ptrdiff_t>(b.members_end), v) !=
               spec_.members.begin() + static_cast<std::ptrdiff_t>(b.members_end);
    }
    return false;
  }

  // The leaf a row reaches from `at` (the spec checked the trees end in leaves).
  int64_t LeafOf(int32_t at, const double* row) const {
    if (leq_only_) {
      while (at >= 0) {
        const Node& n = nodes_[static_cast<size_t>(at)];
        at = n.next[row[n.feature] <= n.split ? 1 : 0];
      }
    } else {
      while (at >= 0) {
        const Node& n = nodes_[static_cast<size_t>(at)];
        at = n.next[Goes(static_cast<size_t>(at), row[n.feature]) ? 1 : 0];
      }
    }
    return ~at;
  }

  const TreeSpec& spec_;
  std::vector<Node> nodes_;
  std::vector<int32_t> roots_;
  bool leq_only_ = true;
};

// Aggregates X's rows in parallel blocks and calls fn(first row, rows in the block, acc, reached)
// with acc/reached [rows, targets]. X is [N, F] or one row [F], float, double, int64 or int32
// (integers go through float, as onnxruntime compares them with its float thresholds).
template <typename Fn>
void ForEachRowBlock(const Tensor& x, const TreeSpec& spec, const TreeWalker& walker, KernelContext& ctx, Fn&& fn) {
  OF_CHECK((x.rank() == 2 || x.rank() == 1) && x.shape().back() >= spec.features, kInvalidArgument, ctx.node_desc(),
           ": X ", ShapeToString(x.shape()), " must be [N, F] with F > ", spec.features - 1, " (the largest feature read)");
  const int64_t features = x.shape().back(), rows = x.rank() == 2 ? x.dim(0) : 1, used = spec.features;
  const int64_t blocks = (rows + TreeWalker::kBlockRows - 1) / TreeWalker::kBlockRows;
  const double cost = static_cast<double>(spec.roots.size()) * 20.0 * TreeWalker::kBlockRows;
  ctx.pool().ParallelFor(blocks, cost, [&](int64_t begin, int64_t end) {
    const size_t block = static_cast<size_t>(TreeWalker::kBlockRows);
    std::vector<double> in_rows(block * static_cast<size_t>(std::max<int64_t>(used, 1))),
        acc(block * static_cast<size_t>(spec.targets));
    std::vector<char> reached(acc.size());
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t r0 = blk * TreeWalker::kBlockRows, n = std::min(TreeWalker::kBlockRows, rows - r0);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t f = 0; f < used; ++f) {
            const T v = in[(r0 + r) * features + f];
            in_rows[static_cast<size_t>(r * used + f)] =
                std::is_integral_v<T> ? static_cast<double>(static_cast<float>(v)) : static_cast<double>(v);
          }
        walker.Aggregate(in_rows.data(), n, used, acc.data(), reached.data());
        fn(r0, n, acc.data(), reached.data());
      }
    });
  });
}

// TreeEnsemble (opset 5): the aggregate per target, in X's type.
class TreeEnsembleKernel final : public OpKernel {
 public:
  explicit TreeEnsembleKernel(const KernelInitContext& c)
      : spec_(ParseTreeEnsembleSpec(c.attrs(), c.node().Describe())), walker_(spec_) {}

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    OF_CHECK(x.rank() == 2, kInvalidArgument, ctx.node_desc(), ": X ", ShapeToString(x.shape()), " must be [N, F]");
    Tensor& y = ctx.output(0);
    const int64_t targets = spec_.targets;
    ForEachRowBlock(x, spec_, walker_, ctx, [&](int64_t r0, int64_t n, const double* acc, const char*) {
      DispatchFloating(y.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        for (int64_t i = 0; i < n * targets; ++i) y.data<T>()[r0 * targets + i] = static_cast<T>(acc[i]);
      });
    });
  }

 private:
  TreeEnsembleSpec spec_;
  TreeWalker walker_;
};
ONEFLOW_KERNEL_CLASS(TreeEnsemble, TreeEnsembleKernel);

// ---- TreeEnsembleRegressor / TreeEnsembleClassifier: base values and post-transforms, in float
// as onnxruntime computes them.

float Logistic(float x) {  // 1 / (1 + e^-x), from e^-|x| so it cannot overflow
  const float v = 1.0f / (1.0f + std::exp(-std::fabs(x)));
  return x < 0 ? 1.0f - v : v;
}

// sqrt(2) * erfinv(2p - 1): Winitzki's closed form, refined by Newton steps on erf (so exact
// where onnxruntime keeps the approximation's ~1e-4 error). 0 -> -inf, 1 -> +inf, else NaN outside.
float Probit(float p) {
  const double y = 2.0 * static_cast<double>(p) - 1.0;
  if (!(y > -1.0 && y < 1.0)) return y == -1.0 ? -INFINITY : y == 1.0 ? INFINITY : NAN;
  const double a = 0.147, l = std::log((1.0 - y) * (1.0 + y)), t = 2.0 / (M_PI * a) + 0.5 * l;
  double x = std::copysign(std::sqrt(std::sqrt(t * t - l / a) - t), y);
  for (int i = 0; i < 3; ++i) x -= (std::erf(x) - y) / (2.0 / std::sqrt(M_PI) * std::exp(-x * x));
  return static_cast<float>(std::sqrt(2.0) * x);
}

// The post-transform over one row of scores (in place).
void PostTransform(TreeSpec::PostTransform post, float* z, int64_t n) {
  switch (post) {
    case TreeSpec::PostTransform::kNone: return;
    case TreeSpec::PostTransform::kLogistic:
      for (int64_t i = 0; i < n; ++i) z[i] = Logistic(z[i]);
      return;
    case TreeSpec::PostTransform::kProbit:
      for (int64_t i = 0; i < n; ++i) z[i] = Probit(z[i]);
      return;
    case TreeSpec::PostTransform::kSoftmax:
    case TreeSpec::PostTransform::kSoftmaxZero: {
      // SOFTMAX_ZERO: an exact-zero score stays (near) zero and takes no part in the sum.
      const bool zero_stays = post == TreeSpec::PostTransform::kSoftmaxZero;
      const float m = *std::max_element(z, z + n);
      float sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool kept = !zero_stays || std::fabs(z[i]) > 1e-7f;
        z[i] = kept ? std::exp(z[i] - m) : z[i] * std::exp(-m);
        if (kept) sum += z[i];
      }
      for (int64_t i = 0; i < n; ++i) z[i] /= sum;
      return;
    }
  }
}

// Y [N, n_targets] float = post_transform(aggregate + base_values).
class TreeEnsembleRegressorKernel final : public OpKernel {
 public:
  explicit TreeEnsembleRegressorKernel(const KernelInitContext& c)
      : spec_(ParseTreeEnsembleLegacySpec(c.attrs(), c.node().Describe(), false)), walker_(spec_) {}

  void Compute(KernelContext& ctx) override {
    float* y = ctx.output(0).data<float>();
    const int64_t targets = spec_.targets;
    ForEachRowBlock(ctx.input(0), spec_, walker_, ctx, [&](int64_t r0, int64_t n, const double* acc, const char*) {
      for (int64_t r = 0; r < n; ++r) {
        float* z = y + (r0 + r) * targets;
        for (int64_t k = 0; k < targets; ++k)
          z[k] = static_cast<float>(acc[r * targets + k] +
                                    (spec_.base_values.empty() ? 0.0 : spec_.base_values[static_cast<size_t>(k)]));
        PostTransform(spec_.post, z, targets);
      }
    });
  }

 private:
  TreeEnsembleSpec spec_;
  TreeWalker walker_;
};
ONEFLOW_KERNEL_CLASS(TreeEnsembleRegressor, TreeEnsembleRegressorKernel);

// Y [N] int64 labels and Z [N, classes] float scores. More than two classes: Z =
// post_transform(sums + base_values), Y the label of the largest score among the classes a leaf
// reached (ties to the first). Two classes follow onnxruntime's binary rules, which is what
// scikit-learn converters rely on: when every weight names one class (the "binary case", e.g. a
// random forest's P(class 1), or a boosted model's log-odds), that one score s decides Y
// (s > 0.5 when all weights are positive, else s > 0) and Z is [1 - s, s] (probabilities) or
// [-s, s] ([logistic(-s), logistic(s)] under LOGISTIC); with weights for both classes Z is the
// post-transform of both sums.
class TreeEnsembleClassifierKernel final : public OpKernel {
 public:
  explicit TreeEnsembleClassifierKernel(const KernelInitContext& c)
      : spec_(ParseTreeEnsembleLegacySpec(c.attrs(), c.node().Describe(), true)),
        walker_(spec_),
        labels_(c.attrs().GetInts("classlabels_int64s", {})) {
    if (c.attrs().has("classlabels_strings")) {  // rows pick a class index; Compute writes its name
      names_ = c.attrs().GetStrings("classlabels_strings");
      labels_.resize(names_.size());
      std::iota(labels_.begin(), labels_.end(), int64_t{0});
    }
    const std::vector<int64_t> ids(spec_.leaf_targets.begin(), spec_.leaf_targets.end());
    one_class_weighted_ = !ids.empty() && std::all_of(ids.begin(), ids.end(), [&](int64_t i) { return i == ids[0]; });
    all_positive_ = std::all_of(spec_.leaf_weights.begin(), spec_.leaf_weights.end(), [](double w) { return w >= 0; });
    OF_CHECK(!(spec_.targets == 2 && spec_.post == TreeSpec::PostTransform::kProbit && one_class_weighted_), kUnsupported,
             c.node().Describe(), ": PROBIT on a one-score binary classifier is not supported (onnxruntime leaves the "
             "second score undefined)");
  }

  void Compute(KernelContext& ctx) override {
    Tensor& labels = ctx.output(0);
    std::vector<int64_t> class_index(names_.empty() ? 0 : static_cast<size_t>(labels.numel()));
    int64_t* y = names_.empty() ? labels.data<int64_t>() : class_index.data();
    float* z_out = ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
    const int64_t classes = spec_.targets;
    ForEachRowBlock(ctx.input(0), spec_, walker_, ctx, [&](int64_t r0, int64_t n, const double* accs, const char* seen) {
      std::vector<float> scratch(z_out ? 0 : static_cast<size_t>(classes));  // scores when Z is not wanted
      for (int64_t i = 0; i < n; ++i) {
        const int64_t r = r0 + i;
        Row(accs + i * classes, seen + i * classes, &y[r], z_out ? z_out + r * classes : scratch.data(), z_out != nullptr);
      }
    });
    for (size_t r = 0; r < class_index.size(); ++r) labels.strings()[r] = names_[static_cast<size_t>(class_index[r])];
  }

 private:
  // One row's label and (into `scores`, [classes]) its scores, post-transformed when `want_scores`.
  void Row(const double* acc, const char* reached, int64_t* y, float* scores, bool want_scores) const {
    const int64_t classes = spec_.targets;
    const std::vector<double>& base = spec_.base_values;
    if (classes != 2) {
      int64_t best = -1;
      for (int64_t k = 0; k < classes; ++k) {
        const bool scored = reached[k] || !base.empty();
        scores[k] = static_cast<float>(acc[k] + (base.empty() ? 0.0 : base[static_cast<size_t>(k)]));
        if (scored && (best < 0 || scores[k] > scores[best])) best = k;
      }
      *y = labels_[static_cast<size_t>(std::max<int64_t>(best, 0))];
      if (want_scores) PostTransform(spec_.post, scores, classes);
      return;
    }
    Binary(acc, reached, y, want_scores ? scores : nullptr);
  }

  void Binary(const double* acc, const char* reached, int64_t* y, float* z) const {
    const std::vector<double>& base = spec_.base_values;
    double s0 = acc[0], s1 = acc[1];
    bool h0 = reached[0] != 0, h1 = reached[1] != 0, single = false;
    if (base.size() == 2) {
      if (h1) {
        s1 = base[1] + (h0 ? s0 : 0.0);
        s0 = -s1;
      } else {
        s0 += base[0];
        s1 += base[1];
      }
    } else {
      if (base.size() == 1) s0 += base[0];
      single = !h1;
    }
    const double p = h1 ? s1 : h0 || base.size() == 1 ? s0 : 0.0;
    const bool positive = one_class_weighted_ && all_positive_ ? p > 0.5 : p > 0;
    *y = labels_[positive ? 1 : 0];
    if (!z) return;
    const float s = static_cast<float>(p);
    if (!single) {
      z[0] = static_cast<float>(h0 || base.size() == 2 ? s0 : 0.0);
      z[1] = static_cast<float>(s1);
      PostTransform(spec_.post, z, 2);
    } else if (one_class_weighted_ && all_positive_) {
      const float q = spec_.post == TreeSpec::PostTransform::kLogistic ? Logistic(s) : s;
      z[0] = 1.0f - q;
      z[1] = q;
    } else if (spec_.post == TreeSpec::PostTransform::kLogistic) {
      z[0] = Logistic(-s);
      z[1] = Logistic(s);
    } else {
      z[0] = -s;
      z[1] = s;
    }
  }

  TreeEnsembleSpec spec_;
  TreeWalker walker_;
  std::vector<int64_t> labels_;
  std::vector<std::string> names_;  // classlabels_strings; labels_ is then 0..classes-1
  bool one_class_weighted_ = false, all_positive_ = true;
};
ONEFLOW_KERNEL_CLASS(TreeEnsembleClassifier, TreeEnsembleClassifierKernel);

// ---- LinearRegressor / LinearClassifier (graph/ops/linear_model.h), Normalizer, OneHotEncoder -------

// Runs fn(row, x_row as doubles) for every row of X [N, F] (a 1-D X is one row), rows in parallel.
template <typename Fn>
void ForEachFeatureRow(const Tensor& x, int64_t features, KernelContext& ctx, Fn&& fn) {
  OF_REQUIRE(x.rank() == 1 || x.rank() == 2, ctx.node_desc(), ": X must be [N, F] or [F], got ", DescribeValue(x));
  const int64_t n = x.rank() == 1 ? 1 : x.dim(0);
  OF_REQUIRE(x.numel() == n * features, ctx.node_desc(), ": X is ", DescribeValue(x), " but the model reads ",
             features, " features per row");
  DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    ctx.pool().ParallelFor(n, static_cast<double>(features) * 4.0, [&](int64_t begin, int64_t end) {
      std::vector<double> row(static_cast<size_t>(features));
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t f = 0; f < features; ++f) row[static_cast<size_t>(f)] = static_cast<double>(in[r * features + f]);
        fn(r, row.data());
      }
    });
  });
}

// scores [N, rows] = X W^T + b for X [N, F] (a 1-D X is one row), through the GEMM in float as
// onnxruntime computes them; X of another type is converted to float first.
std::vector<float> LinearScores(const Tensor& x, const LinearModelSpec& s, KernelContext& ctx, int64_t& n) {
  OF_REQUIRE(x.rank() == 1 || x.rank() == 2, ctx.node_desc(), ": X must be [N, F] or [F], got ", DescribeValue(x));
  n = x.rank() == 1 ? 1 : x.dim(0);
  OF_REQUIRE(x.numel() == n * s.features, ctx.node_desc(), ": X is ", DescribeValue(x), " but the model reads ",
             s.features, " features per row");
  std::vector<float> converted;
  const float* a = x.dtype() == DType::kFloat32 ? x.data<float>() : nullptr;
  if (!a) {
    converted.resize(static_cast<size_t>(x.numel()));
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) converted[static_cast<size_t>(i)] = static_cast<float>(in[i]);
    });
    a = converted.data();
  }
  std::vector<float> scores(static_cast<size_t>(n * s.rows));
  GemmEpilogue bias;
  bias.col_bias = s.intercepts.data();
  if (n > 0)
    Sgemm(n, s.rows, s.features, 1.0f, GemmOperand::Raw(a, s.features), GemmOperand::Raw(s.coefficients.data(), s.features, true),
          0.0f, scores.data(), s.rows, &bias, &ctx.pool());
  return scores;
}

class LinearRegressorKernel final : public OpKernel {
 public:
  explicit LinearRegressorKernel(const KernelInitContext& c) : spec_(ParseLinearRegressorSpec(c.attrs(), c.node().Describe())) {}
  void Compute(KernelContext& ctx) override {
    int64_t n = 0;
    std::vector<float> scores = LinearScores(ctx.input(0), spec_, ctx, n);
    float* y = ctx.output(0).data<float>();
    std::copy(scores.begin(), scores.end(), y);
    for (int64_t r = 0; r < n; ++r) PostTransform(spec_.post, y + r * spec_.rows, spec_.rows);
  }

 private:
  LinearModelSpec spec_;
};
ONEFLOW_KERNEL_CLASS(LinearRegressor, LinearRegressorKernel);

class LinearClassifierKernel final : public OpKernel {
 public:
  explicit LinearClassifierKernel(const KernelInitContext& c)
      : spec_(ParseLinearClassifierSpec(c.attrs(), c.node().Describe())) {
    OF_CHECK(!(spec_.binary && spec_.post == TreeSpec::PostTransform::kProbit), kUnsupported, c.node().Describe(),
             ": PROBIT on a one-row binary classifier is not supported (onnxruntime's output for it is undefined)");
  }

  void Compute(KernelContext& ctx) override {
    Tensor& labels = ctx.output(0);
    const int64_t cols = spec_.score_columns();
    float* z = ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
    // 0 for NONE, else 0.5: the one-row, one-label form's threshold (the ONNX reference's).
    const float threshold = spec_.post == TreeSpec::PostTransform::kNone ? 0.0f : 0.5f;
    int64_t n = 0;
    const std::vector<float> scores = LinearScores(ctx.input(0), spec_, ctx, n);
    std::vector<float> scratch(z ? 0 : static_cast<size_t>(cols));
    for (int64_t r = 0; r < n; ++r) {
      float* out = z ? z + r * cols : scratch.data();
      const float* raw = scores.data() + r * spec_.rows;
      int64_t best = -1;  // the label's index; -1: none (the one-label form below its threshold)
      if (spec_.binary) {
        // onnxruntime's binary rule: the score's sign picks the label; Z is [1 - p, p] with p the
        // logistic of the score under LOGISTIC, else the score itself (no other transform applies).
        best = raw[0] > 0 ? 1 : 0;
        out[1] = spec_.post == TreeSpec::PostTransform::kLogistic ? Logistic(raw[0]) : raw[0];
        out[0] = 1.0f - out[1];
      } else {
        std::copy(raw, raw + cols, out);
        PostTransform(spec_.post, out, cols);
        if (cols > 1) best = std::max_element(out, out + cols) - out;
        else if (out[0] >= threshold) best = 0;
      }
      if (spec_.string_labels.empty()) labels.data<int64_t>()[r] = best < 0 ? 0 : spec_.int_labels[static_cast<size_t>(best)];
      else labels.strings()[r] = best < 0 ? std::string() : spec_.string_labels[static_cast<size_t>(best)];
    }
  }

 private:
  LinearModelSpec spec_;
};
ONEFLOW_KERNEL_CLASS(LinearClassifier, LinearClassifierKernel);

// Y = X / (max x, sum |x| or sqrt(sum x^2)) per row, in float; a zero divisor leaves the row as is.
// MAX divides by the largest value, not the largest magnitude: the spec's formula and onnxruntime's
// (scikit-learn's "max" norm takes magnitudes, so rows whose largest magnitude is negative differ).
void NormalizerKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::string norm = ctx.attrs().GetString("norm");
  const bool max = norm == "MAX", l1 = norm == "L1";  // else L2 (inference checked)
  const int64_t features = x.numel() == 0 ? 0 : x.dim(x.rank() - 1);
  float* y = ctx.output(0).data<float>();
  if (features == 0) return;
  ForEachFeatureRow(x, features, ctx, [&](int64_t r, const double* row) {
    double div = 0;
    for (int64_t f = 0; f < features; ++f) {
      const double v = row[f];
      div = max ? (f == 0 ? v : std::max(div, v)) : l1 ? div + std::fabs(v) : div + v * v;
    }
    if (!max && !l1) div = std::sqrt(div);
    for (int64_t f = 0; f < features; ++f)
      y[r * features + f] = static_cast<float>(div == 0 ? row[f] : row[f] / div);
  });
}
ONEFLOW_KERNEL(Normalizer, NormalizerKernel);

// Y[..., c] = 1 where X's element is category c. Numbers are compared as int64 (a float truncated),
// as onnxruntime does; an element in no category gives a row of zeros, or an error when zeros=0.
class OneHotEncoderKernel final : public OpKernel {
 public:
  explicit OneHotEncoderKernel(const KernelInitContext& c) : zeros_(c.attrs().GetInt("zeros") != 0) {
    const AttrMap& a = c.attrs();
    const std::vector<std::string> strings = a.has("cats_strings") ? a.GetStrings("cats_strings") : std::vector<std::string>{};
    const std::vector<int64_t> ints = a.GetInts("cats_int64s", {});
    for (size_t i = strings.size(); i-- > 0;) by_string_[strings[i]] = static_cast<int64_t>(i);  // first wins
    for (size_t i = ints.size(); i-- > 0;) by_int_[ints[i]] = static_cast<int64_t>(i);
    categories_ = static_cast<int64_t>(strings.empty() ? ints.size() : strings.size());
  }

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    float* y = ctx.output(0).data<float>();
    std::fill(y, y + x.numel() * categories_, 0.0f);
    auto place = [&](int64_t i, int64_t category, const auto& value) {
      if (category >= 0) y[i * categories_ + category] = 1.0f;
      else OF_REQUIRE(zeros_, ctx.node_desc(), ": element ", i, " (", value, ") is in no category and zeros=0");
    };
    if (x.dtype() == DType::kString) {
      OF_REQUIRE(!by_string_.empty(), ctx.node_desc(), ": X holds strings but the categories are integers");
      for (int64_t i = 0; i < x.numel(); ++i) {
        auto it = by_string_.find(x.strings()[i]);
        place(i, it == by_string_.end() ? -1 : it->second, x.strings()[i]);
      }
      return;
    }
    OF_REQUIRE(!by_int_.empty(), ctx.node_desc(), ": X holds numbers but the categories are strings");
    DispatchNumeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = static_cast<double>(in[i]);
        auto it = std::isfinite(v) && std::fabs(v) < 9.2e18 ? by_int_.find(static_cast<int64_t>(in[i])) : by_int_.end();
        place(i, it == by_int_.end() ? -1 : it->second, v);
      }
    });
  }

 private:
  bool zeros_;
  int64_t categories_ = 0;
  std::unordered_map<std::string, int64_t> by_string_;
  std::unordered_map<int64_t, int64_t> by_int_;
};
ONEFLOW_KERNEL_CLASS(OneHotEncoder, OneHotEncoderKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
