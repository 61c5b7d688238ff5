// CPU kernels of the ai.onnx.ml ops (graph/ops/ml.cc): Binarizer, ArrayFeatureExtractor,
// TreeEnsemble (rows in parallel; per row every tree walked from its root to a leaf).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "graph/ops/tree_ensemble.h"

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
  const size_t item = DTypeSize(x.dtype());
  const int64_t rows = features == 0 ? 0 : x.numel() / features;  // no features: no index passed the check
  const char* in = static_cast<const char*>(x.raw());
  char* out = static_cast<char*>(z.raw());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(out + static_cast<size_t>(r * k + j) * item, in + static_cast<size_t>(r * features + idx[j]) * item,
                  item);
}
ONEFLOW_KERNEL(ArrayFeatureExtractor, ArrayFeatureExtractorKernel);

class TreeEnsembleKernel final : public OpKernel {
 public:
  explicit TreeEnsembleKernel(const KernelInitContext& c) : spec_(ParseTreeEnsembleSpec(c.attrs(), c.node().Describe())) {}

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    OF_CHECK(x.rank() == 2 && x.dim(1) >= spec_.features, kInvalidArgument, ctx.node_desc(), ": X ",
             ShapeToString(x.shape()), " must be [N, F] with F > ", spec_.features - 1, " (the largest feature read)");
    Tensor& y = ctx.output(0);
    if (x.dtype() == DType::kFloat64) Run<double>(x, y, ctx);
    else Run<float>(x, y, ctx);
  }

 private:
  using Spec = TreeEnsembleSpec;

  bool Goes(const Spec::Branch& b, double v) const {
    if (std::isnan(v) && b.missing_goes_true) return true;
    switch (b.mode) {
      case Spec::kLeq: return v <= b.split;
      case Spec::kLt: return v < b.split;
      case Spec::kGte: return v >= b.split;
      case Spec::kGt: return v > b.split;
      case Spec::kEq: return v == b.split;
      case Spec::kNeq: return v != b.split;
      case Spec::kMember:
        return std::find(spec_.members.begin() + static_cast<std::ptrdiff_t>(b.members_begin),
                         spec_.members.begin() + static_cast<std::ptrdiff_t>(b.members_end), v) !=
               spec_.members.begin() + static_cast<std::ptrdiff_t>(b.members_end);
    }
    return false;
  }

  // The leaf a row reaches in tree `t` (the spec checked the trees end in leaves).
  int64_t LeafOf(size_t t, const double* row) const {
    if (spec_.root_is_leaf[t]) return spec_.roots[t];
    int64_t at = spec_.roots[t];
    for (;;) {
      const Spec::Branch& b = spec_.nodes[static_cast<size_t>(at)];
      const int side = Goes(b, row[b.feature]) ? 1 : 0;
      if (b.child_is_leaf[side]) return b.child[side];
      at = b.child[side];
    }
  }

  template <typename T>
  void Run(const Tensor& x, Tensor& y, KernelContext& ctx) const {
    const int64_t rows = x.dim(0), features = x.dim(1), targets = spec_.targets;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const double trees = static_cast<double>(spec_.roots.size());
    ctx.pool().ParallelFor(rows, trees * 20.0, [&](int64_t begin, int64_t end) {
      std::vector<double> row(static_cast<size_t>(spec_.features)), acc(static_cast<size_t>(targets));
      std::vector<bool> reached(static_cast<size_t>(targets));
      for (int64_t r = begin; r < end; ++r) {
        for (int64_t f = 0; f < spec_.features; ++f) row[static_cast<size_t>(f)] = static_cast<double>(in[r * features + f]);
        // A target no leaf reaches is 0 under every aggregation (onnxruntime; the ONNX reference
        // leaves the type's extreme under MIN and MAX).
        std::fill(acc.begin(), acc.end(), 0.0);
        std::fill(reached.begin(), reached.end(), false);
        for (size_t t = 0; t < spec_.roots.size(); ++t) {
          const size_t leaf = static_cast<size_t>(LeafOf(t, row.data()));
          const size_t target = static_cast<size_t>(spec_.leaf_targets[leaf]);
          double& a = acc[target];
          const double w = spec_.leaf_weights[leaf];
          const bool first = !reached[target];
          reached[target] = true;
          switch (spec_.aggregate) {
            case Spec::Aggregate::kSum: case Spec::Aggregate::kAverage: a += w; break;
            case Spec::Aggregate::kMin: a = first ? w : std::min(a, w); break;
            case Spec::Aggregate::kMax: a = first ? w : std::max(a, w); break;
          }
        }
        if (spec_.aggregate == Spec::Aggregate::kAverage)
          for (double& a : acc) a /= trees;
        for (int64_t k = 0; k < targets; ++k) out[r * targets + k] = static_cast<T>(acc[static_cast<size_t>(k)]);
      }
    });
  }

  TreeEnsembleSpec spec_;
};
ONEFLOW_KERNEL_CLASS(TreeEnsemble, TreeEnsembleKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
