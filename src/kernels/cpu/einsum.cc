// CPU kernel: Einsum as a direct sum-of-products loop over the output and contracted labels.
#include "graph/ops/spatial_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// Reads one element into the accumulation type (integers exactly, floats via double).
template <typename A, typename T>
A Load(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<A>(v);
  else return static_cast<A>(CastToDouble(v));
}

// Each output element is the sum, over every assignment of the contracted labels, of the product
// of the inputs' elements. A label's stride in an input is the sum of the strides of every dim it
// names, which makes repeated labels ("ii") walk diagonals; broadcast ellipsis dims get stride 0.
void EinsumKernel(KernelContext& ctx) {
  const std::string node = ctx.node_desc();
  const size_t ni = ctx.num_inputs();
  EinsumSpec spec = ParseEinsum(ctx.attrs().GetString("equation"), ni, node);
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ni; ++i) {
    OF_REQUIRE(ctx.input(i).dtype() == ctx.input(0).dtype(), node, ": einsum inputs must share one dtype");
    shapes.push_back(ctx.input(i).shape());
  }
  EinsumPlan plan = PlanEinsum(spec, shapes, node);
  Tensor& y = ctx.output(0);
  const size_t nl = plan.label_size.size();

  std::vector<int> reduce;
  std::vector<char> in_output(nl, 0);
  for (int l : plan.output) in_output[l] = 1;
  for (size_t l = 0; l < nl; ++l)
    if (plan.label_size[l] >= 0 && !in_output[l]) reduce.push_back(static_cast<int>(l));

  // strides[i][l]: how far input i moves when label l advances by one.
  std::vector<std::vector<int64_t>> strides(ni, std::vector<int64_t>(nl, 0));
  for (size_t i = 0; i < ni; ++i) {
    int64_t s = 1;
    for (size_t d = shapes[i].size(); d-- > 0;) {
      const int l = plan.inputs[i][d];
      if (shapes[i][d] != 1 || plan.label_size[l] == 1) strides[i][l] += s;
      s *= shapes[i][d];
    }
  }
  int64_t red_n = 1;
  for (int l : reduce) red_n *= plan.label_size[l];
  const size_t no = plan.output.size(), nr = reduce.size();
  std::vector<int64_t> inner_stride(ni, 0);
  if (nr)
    for (size_t i = 0; i < ni; ++i) inner_stride[i] = strides[i][reduce[nr - 1]];

  DispatchAll(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      Fail(ErrorCode::kUnsupported, node, ": Einsum of bool tensors");
    } else {
      using A = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
      std::vector<const T*> src(ni);
      for (size_t i = 0; i < ni; ++i) src[i] = ctx.input(i).data<T>();
      T* py = y.data<T>();
      ctx.pool().ParallelFor(y.numel(), static_cast<double>(red_n * ni) * 2, [&](int64_t begin, int64_t end) {
        std::vector<int64_t> base(ni), off(ni), k(nr);
        for (int64_t o = begin; o < end; ++o) {
          std::fill(base.begin(), base.end(), 0);
          int64_t rem = o;
          for (size_t j = no; j-- > 0;) {
            const int l = plan.output[j];
            const int64_t c = rem % plan.label_size[l];
            rem /= plan.label_size[l];
            for (size_t i = 0; i < ni; ++i) base[i] += c * strides[i][l];
          }
          A acc = 0;
          off = base;
          std::fill(k.begin(), k.end(), 0);
          // The innermost contracted label runs as a tight strided loop; the odometer covers the rest.
          const int64_t inner_n = nr ? plan.label_size[reduce[nr - 1]] : 1;
          for (int64_t r = 0; r < red_n; r += inner_n) {
            if (ni == 1) {
              const T* a = src[0] + off[0];
              const int64_t sa = inner_stride[0];
              for (int64_t t = 0; t < inner_n; ++t) acc += Load<A>(a[t * sa]);
            } else if (ni == 2) {
              const T* a = src[0] + off[0];
              const T* b = src[1] + off[1];
              const int64_t sa = inner_stride[0], sb = inner_stride[1];
              for (int64_t t = 0; t < inner_n; ++t) acc += Load<A>(a[t * sa]) * Load<A>(b[t * sb]);
            } else {
              for (int64_t t = 0; t < inner_n; ++t) {
                A prod = 1;
                for (size_t i = 0; i < ni; ++i) prod *= Load<A>(src[i][off[i] + t * inner_stride[i]]);
                acc += prod;
              }
            }
            // Advance the odometer over the other contracted labels, the last of them fastest.
            for (size_t j = nr > 0 ? nr - 1 : 0; j-- > 0;) {
              const int l = reduce[j];
              for (size_t i = 0; i < ni; ++i) off[i] += strides[i][l];
              if (++k[j] < plan.label_size[l]) break;
              for (size_t i = 0; i < ni; ++i) off[i] -= strides[i][l] * plan.label_size[l];
              k[j] = 0;
            }
          }
          if constexpr (std::is_integral_v<T>) py[o] = static_cast<T>(acc);
          else py[o] = CastFromDouble<T>(acc);
        }
      });
    }
  });
}
ONEFLOW_KERNEL(Einsum, EinsumKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
