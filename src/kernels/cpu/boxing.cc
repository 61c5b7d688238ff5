// CPU kernel of ai.oneflow Boxing: the shared Boxing steps (kernels/boxing_steps.h) on host memory.
#include "graph/op_schema.h"
#include "kernels/boxing_steps.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

class BoxingKernel final : public OpKernel {
 public:
  explicit BoxingKernel(const KernelInitContext& c) : a_(c) {
    OF_CHECK(!a_.comm || a_.comm->memory() == Communicator::Memory::kHost, kUnsupported, c.node().Describe(),
             ": the CPU Boxing kernel needs a host-memory communicator, not '", a_.comm->backend(), "'");
  }

  void Compute(KernelContext& ctx) override {
    HostBoxingMemory mem;
    RunBoxing(a_, ctx.input(0), ctx.output(0), mem);
  }

 private:
  const BoxingAttrs a_;
};
ONEFLOW_KERNEL_CLASS(Boxing, BoxingKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
