// CPU kernels of the ai.onnx.ml ops (graph/ops/ml.cc): Binarizer, ArrayFeatureExtractor.
#include <cmath>
#include <cstring>

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

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
