// Kernel contexts and the kernel registry.
#include "kernels/kernel.h"

#include "kernels/cpu/all_kernels.h"
#ifdef ONEFLOW_HAVE_CUDA
#include "kernels/cuda/cuda_kernels.h"
#endif

namespace oneflow {

const TensorType& KernelInitContext::input_type(size_t i) const {
  OF_ASSERT(node_.has_input(i));
  return graph_.values[static_cast<size_t>(node_.inputs[i])].type;
}

const Tensor* KernelInitContext::constant_input(size_t i) const {
  if (!node_.has_input(i)) return nullptr;
  const Value& v = graph_.values[static_cast<size_t>(node_.inputs[i])];
  return v.constant.defined() ? &v.constant : nullptr;
}

const Tensor& KernelContext::input(size_t i) const {
  OF_CHECK(has_input(i), kInvalidArgument, node_desc(), ": input ", i, " is required but missing");
  return *inputs_[i];
}

Tensor& KernelContext::output(size_t i) {
  OF_ASSERT(has_output(i));
  return *outputs_[i];
}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    RegisterAllCpuKernels(*r);
#ifdef ONEFLOW_HAVE_CUDA
    RegisterAllCudaKernels(*r);
#endif
    return r;
  }();
  return *registry;
}

void KernelRegistry::Register(KernelDef def) {
  OF_CHECK(def.op != OpId::kUnknown && def.factory, kInternal, "kernel registered without an op or factory");
  OF_CHECK(Find(def.op, def.device) == nullptr, kInternal, "kernel for ", OpName(def.op), " registered twice");
  KernelDef& slot = defs_[static_cast<int>(def.op)][static_cast<int>(def.device)];
  slot = std::move(def);
}

void KernelRegistry::RegisterFn(OpId op, void (*fn)(KernelContext&), DeviceType device) {
  Register(KernelDef{op, device, [fn](const KernelInitContext&) -> std::unique_ptr<OpKernel> {
                       return std::make_unique<FunctionKernel>(fn);
                     }});
}

const KernelDef* KernelRegistry::Find(OpId op, DeviceType device) const {
  const int d = static_cast<int>(device);
  if (op == OpId::kUnknown || d < 0 || d >= kDeviceCount) return nullptr;
  const KernelDef& slot = defs_[static_cast<int>(op)][d];
  return slot.factory ? &slot : nullptr;
}

const KernelDef* KernelRegistry::Find(const std::string& domain, const std::string& op, DeviceType device) const {
  return Find(FindOpId(domain, op), device);
}

}  // namespace oneflow
