// Kernel contexts and the kernel registry.
#include "kernels/kernel.h"

#include <cstdio>
#include <cstdlib>

#if defined(ONEFLOW_HAVE_DNNL)
#include <oneapi/dnnl/dnnl.h>
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

namespace {

// ONEFLOW_MAX_ISA caps oneDNN too (it picks its own kernels by CPUID), unless DNNL_MAX_CPU_ISA
// already says otherwise. It must be set before oneDNN generates any code: the registry is built by
// the first kernel registrar, at load, before any kernel runs.
void CapDnnlIsa() {
#if defined(ONEFLOW_HAVE_DNNL)
  if (!CpuIsaCapped() || std::getenv("DNNL_MAX_CPU_ISA") != nullptr) return;
  dnnl_cpu_isa_t isa = dnnl_cpu_isa_sse41;
  switch (ActiveCpuIsa()) {
    case CpuIsa::kSse42: isa = dnnl_cpu_isa_sse41; break;
    case CpuIsa::kAvx2: isa = dnnl_cpu_isa_avx2; break;
    case CpuIsa::kAvx512: isa = dnnl_cpu_isa_avx512_core; break;
    case CpuIsa::kAvx512Vnni: isa = dnnl_cpu_isa_avx512_core_vnni; break;
  }
  if (dnnl_set_max_cpu_isa(isa) != dnnl_success)
    std::fprintf(stderr, "oneflow: could not cap oneDNN at %s (ONEFLOW_MAX_ISA)\n", CpuIsaName(ActiveCpuIsa()));
#endif
}

}  // namespace

KernelRegistry& KernelRegistry::Global() {
  // Built on first use, which may be the first registrar's: registrars of other translation units run
  // in no set order. Never destroyed, so a kernel lookup during exit still finds a live registry.
  static KernelRegistry* registry = [] {
    CapDnnlIsa();
    return new KernelRegistry();
  }();
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

KernelRegistrar::KernelRegistrar(CpuIsa tier, OpId op, DeviceType device, KernelFactory factory) {
  RegisterAtLoad([&](KernelRegistry& r) { r.Register(KernelDef{op, device, std::move(factory), tier}); });
}

KernelRegistrar::KernelRegistrar(CpuIsa tier, OpId op, DeviceType device, void (*fn)(KernelContext&)) {
  RegisterAtLoad([&](KernelRegistry& r) {
    r.registering_tier_ = tier;
    r.RegisterFn(op, fn, device);
    r.registering_tier_ = CpuIsa::kSse42;
  });
}

KernelRegistrar::KernelRegistrar(CpuIsa tier, void (*register_table)(KernelRegistry&)) {
  RegisterAtLoad([&](KernelRegistry& r) {
    r.registering_tier_ = tier;
    register_table(r);
    r.registering_tier_ = CpuIsa::kSse42;
  });
}

void KernelRegistry::Register(KernelDef def) {
  OF_CHECK(def.op != OpId::kUnknown && def.factory, kInternal, "kernel registered without an op or factory");
  // A copy compiled for instructions this CPU lacks (or that ONEFLOW_MAX_ISA rules out) is never kept.
  if (def.device == DeviceType::kCpu && def.tier > ActiveCpuIsa()) return;
  KernelDef& slot = defs_[static_cast<int>(def.op)][static_cast<int>(def.device)];
  if (slot.factory) {
    OF_CHECK(slot.tier != def.tier, kInternal, "kernel for ", OpName(def.op), " registered twice");
    if (slot.tier > def.tier) return;  // registrars run in no set order: the widest copy wins
  }
  slot = std::move(def);
}

void KernelRegistry::RegisterFn(OpId op, void (*fn)(KernelContext&), DeviceType device) {
  Register(KernelDef{op, device,
                     [fn](const KernelInitContext&) -> std::unique_ptr<OpKernel> {
                       return std::make_unique<FunctionKernel>(fn);
                     },
                     registering_tier_});
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
