// CPU kernel: NonMaxSuppression (graph/ops/detection.cc). Run-time inference already sized the
// output from the same selection (NonMaxSuppressionSelect); the kernel writes it.
#include <algorithm>

#include "graph/ops/detection.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

void NonMaxSuppressionKernel(KernelContext& ctx) {
  auto opt = [&](size_t i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; };
  const std::vector<int64_t> selected =
      NonMaxSuppressionSelect(ctx.input(0), ctx.input(1), opt(2), opt(3), opt(4),
                              ctx.attrs().GetInt("center_point_box", 0), ctx.node_desc());
  Tensor& y = ctx.output(0);
  OF_CHECK(y.numel() == static_cast<int64_t>(selected.size()), kInternal, ctx.node_desc(),
           ": the output was sized for ", y.numel() / 3, " boxes, the selection has ", selected.size() / 3);
  std::copy(selected.begin(), selected.end(), y.data<int64_t>());
}
ONEFLOW_KERNEL(NonMaxSuppression, NonMaxSuppressionKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
