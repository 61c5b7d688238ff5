// Kernel contexts and the kernel registry.
#include "kernels/kernel.h"

#include <cstdio>
#include <cstdlib>

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
  // Built on first use, which may be the first registrar's: registrars of other translation units run
  // in no set order. Never destroyed, so a kernel lookup during exit still finds a live registry.
  static KernelRegistry* registry = new KernelRegistry();
  return *registry;
}

namespace {

// A registrar runs before main, where an exception would end the program with no word of why.
template <typename F>
void RegisterAtLoad(F&& add) {
  try {
    add(KernelRegistry::Global());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oneflow: kernel registration failed: %s\n", e.what());
    std::abort();
  }
}

}  // namespace

KernelRegistrar::KernelRegistrar(OpId op, DeviceType device, KernelFactory factory) {
  RegisterAtLoad([&](KernelRegistry& r) { r.Register(KernelDef{op, device, std::move(factory)}); });
}

KernelRegistrar::KernelRegistrar(OpId op, DeviceType device, void (*fn)(KernelContext&)) {
  RegisterAtLoad([&](KernelRegistry& r) { r.RegisterFn(op, fn, device); });
}

KernelRegistrar::KernelRegistrar(void (*register_table)(KernelRegistry&)) { RegisterAtLoad(register_table); }

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
