// CPU kernel: TfIdfVectorizer (graph/ops/text_features.cc). The pool's n-grams go into one hash map
// per length at kernel creation. Per row and skip distance d (1 to max_skip_count + 1), every
// position p starts the n-grams x[p], x[p + d], ..., x[p + (n - 1) d] for n in [min, max]; each
// one found in the pool adds 1 to its column. Unigrams do not depend on d, so they are counted at
// d = 1 only. Rows are independent and run in parallel.
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "graph/ops/text_features.h"
#include "kernels/cpu/isa_region.h"
#include "kernels/kernel.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

struct GramHash {
  size_t operator()(const std::vector<int64_t>& g) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int64_t v : g) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};
using GramColumns = std::unordered_map<std::vector<int64_t>, int64_t, GramHash>;

class TfIdfVectorizerKernel final : public OpKernel {
 public:
  explicit TfIdfVectorizerKernel(const KernelInitContext& c) : spec_(ParseTfIdfSpec(c.attrs(), c.node().Describe())) {
    // No n-gram is longer than the pool's longest, whatever max_gram_length says.
    for (const auto& g : spec_.grams) longest_ = std::max(longest_, static_cast<int64_t>(g.size()));
    longest_ = std::min(longest_, spec_.max_gram);
    by_length_.resize(static_cast<size_t>(longest_) + 1);
    for (size_t k = 0; k < spec_.grams.size(); ++k) {
      const int64_t n = static_cast<int64_t>(spec_.grams[k].size());
      if (n <= longest_) by_length_[static_cast<size_t>(n)].insert_or_assign(spec_.grams[k], spec_.columns[k]);
    }  // a repeated n-gram counts into the column it is given last
  }

  void Compute(KernelContext& ctx) override {
    const Tensor& x = ctx.input(0);
    OF_CHECK(x.rank() == 1 || x.rank() == 2, kInvalidArgument, ctx.node_desc(), ": X must be [C] or [N, C], got ",
             ShapeToString(x.shape()));
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, length = x.dim(static_cast<int64_t>(x.rank()) - 1);
    Tensor& y = ctx.output(0);
    float* out = y.data<float>();
    std::memset(out, 0, static_cast<size_t>(y.numel()) * sizeof(float));
    auto count_rows = [&](auto* ids, int64_t begin, int64_t end) {
      std::vector<int64_t> gram;
      for (int64_t r = begin; r < end; ++r) {
        const auto* row = ids + r * length;
        float* counts = out + r * spec_.width;
        int64_t shortest = spec_.min_gram;
        // Past the distance where no n-gram of a counted length fits, larger ones find nothing either.
        for (int64_t d = 1; d <= spec_.max_skip + 1 && shortest <= longest_ && (shortest - 1) * d < length; ++d) {
          for (int64_t p = 0; p < length; ++p) {
            gram.clear();
            for (int64_t n = 1; n <= longest_ && p + (n - 1) * d < length; ++n) {
              gram.push_back(static_cast<int64_t>(row[p + (n - 1) * d]));
              if (n < shortest) continue;
              const auto hit = by_length_[static_cast<size_t>(n)].find(gram);
              if (hit != by_length_[static_cast<size_t>(n)].end()) counts[hit->second] += 1.0f;
            }
          }
          if (shortest == 1) shortest = 2;  // unigrams are the same at every skip distance
        }
        // IDF: 1 where counted; then IDF and TF-IDF scale by the weights (only columns an n-gram
        // counts into can be nonzero, and those are the weighted ones).
        if (spec_.mode == TfIdfMode::kIdf)
          for (int64_t c = 0; c < spec_.width; ++c) counts[c] = counts[c] > 0 ? 1.0f : 0.0f;
        if (spec_.mode != TfIdfMode::kTf)
          for (const auto& [c, w] : spec_.weights) counts[c] *= w;
      }
    };
    const double skips = static_cast<double>(std::min<int64_t>(spec_.max_skip + 1, std::max<int64_t>(length, 1)));
    const double cost = static_cast<double>(length) * skips * static_cast<double>(longest_) * 40.0;
    ctx.pool().ParallelFor(rows, cost, [&](int64_t begin, int64_t end) {
      if (x.dtype() == DType::kInt32) count_rows(x.data<int32_t>(), begin, end);
      else count_rows(x.data<int64_t>(), begin, end);
    });
  }

 private:
  TfIdfSpec spec_;
  int64_t longest_ = 0;                 // the longest n-gram counted
  std::vector<GramColumns> by_length_;  // index n: the n-grams of the pool and their columns
};
ONEFLOW_KERNEL_CLASS(TfIdfVectorizer, TfIdfVectorizerKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
