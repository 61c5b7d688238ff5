// The kernel interface: an OpKernel is created once per node at session creation (where it may
// pre-pack constant weights) and computes that node on every run.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/cpu_isa.h"
#include "base/device_type.h"
#include "base/tensor.h"
#include "base/thread_pool.h"
#include "graph/graph.h"
#include "graph/op_list.h"

namespace oneflow {

// What a kernel sees at creation: the node, its static input types and constant inputs.
class KernelInitContext {
 public:
  KernelInitContext(const Graph& graph, const Node& node, std::shared_ptr<ThreadPool> pool = nullptr)
      : graph_(graph), node_(node), pool_(std::move(pool)) {}
  const Node& node() const { return node_; }
  // The pool the node's runs will use, when the creator knows it (an executor's); else nullptr.
  // Kernels that run a graph of their own (If, Loop, Scan) run it on this pool.
  const std::shared_ptr<ThreadPool>& pool() const { return pool_; }
  const AttrMap& attrs() const { return node_.attrs; }
  int opset() const { return node_.opset; }
  bool has_input(size_t i) const { return node_.has_input(i); }
  const TensorType& input_type(size_t i) const;
  // Data of input i when it is a constant (weights), else nullptr.
  const Tensor* constant_input(size_t i) const;

 private:
  const Graph& graph_;
  const Node& node_;
  std::shared_ptr<ThreadPool> pool_;
};

// What a kernel sees on each run. Outputs arrive allocated with their inferred shapes.
class KernelContext {
 public:
  // `node_desc`, when given, is node.Describe() computed once by the caller and must outlive this.
  KernelContext(const Node& node, ThreadPool& pool, const std::string* node_desc = nullptr)
      : node_(node), pool_(pool), desc_(node_desc) {}
  const Node& node() const { return node_; }
  // "Conv 'conv1' (opset 17)", for error messages; cheap to call on every run.
  const std::string& node_desc() const {
    if (!desc_) {
      owned_desc_ = node_.Describe();
      desc_ = &owned_desc_;
    }
    return *desc_;
  }
  const AttrMap& attrs() const { return node_.attrs; }
  int opset() const { return node_.opset; }
  ThreadPool& pool() { return pool_; }

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& input(size_t i) const;
  bool has_output(size_t i) const { return i < outputs_.size() && outputs_[i] != nullptr; }
  Tensor& output(size_t i);

  std::vector<const Tensor*>& inputs() { return inputs_; }
  std::vector<Tensor*>& outputs() { return outputs_; }

 private:
  const Node& node_;
  ThreadPool& pool_;
  mutable const std::string* desc_;
  mutable std::string owned_desc_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor*> outputs_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void Compute(KernelContext& ctx) = 0;
};

// A stateless kernel from a plain function.
class FunctionKernel final : public OpKernel {
 public:
  explicit FunctionKernel(void (*fn)(KernelContext&)) : fn_(fn) {}
  void Compute(KernelContext& ctx) override { fn_(ctx); }

 private:
  void (*fn_)(KernelContext&);
};

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const KernelInitContext&)>;

// How the executor treats a node's output 0.
enum class KernelKind {
  kCompute,  // the kernel writes into freshly allocated outputs
  kView,     // output 0 is input 0's data with the inferred shape (OpSchema::View): no kernel, no copy
};

struct KernelDef {
  OpId op = OpId::kUnknown;
  DeviceType device = DeviceType::kCpu;
  KernelFactory factory;
  // The instruction-set tier the kernel's code was compiled for (kernels/cpu/isa_region.h): a CPU
  // kernel exists once per tier; the registry keeps the widest one at or below ActiveCpuIsa().
  CpuIsa tier = CpuIsa::kSse42;
};

// Kernels by op id and device: a kernel registers against the op list's OpId (graph/op_list.h), so
// a kernel for an op the list lacks does not compile.
class KernelRegistry {
 public:
  // Every built-in kernel. Each registers itself where it is defined (ONEFLOW_KERNEL below), during
  // static initialization, so there is no list of kernels to keep in step with the op list.
  static KernelRegistry& Global();

  // Keeps `def` when its tier runs here and is wider than the kernel (op, device) has; throws
  // kInternal when (op, device) already has one of the same tier.
  void Register(KernelDef def);
  // Shorthands for the common cases; the tier is that of the registrar running (KernelRegistrar).
  void RegisterFn(OpId op, void (*fn)(KernelContext&), DeviceType device = DeviceType::kCpu);

  const KernelDef* Find(OpId op, DeviceType device) const;
  // Find by name, for nodes and tests that hold one; nullptr for a name the op list lacks.
  const KernelDef* Find(const std::string& domain, const std::string& op, DeviceType device) const;

 private:
  friend class KernelRegistrar;
  static constexpr int kDeviceCount = 2;  // DeviceType::kCpu, kCuda
  KernelDef defs_[kOpCount][kDeviceCount];  // factory empty: no kernel
  CpuIsa registering_tier_ = CpuIsa::kSse42;  // the tier of the table being registered
};

// Registration where a kernel is defined, at namespace scope right after it:
//   ONEFLOW_KERNEL(Relu, ReluKernel);                    CPU function kernel of OpId::kRelu
//   ONEFLOW_CUDA_KERNEL(Relu, ReluFn);                   CUDA function kernel
//   ONEFLOW_KERNEL_CLASS(MatMul, MatMulKernel);          OpKernel subclass built per node from its
//   ONEFLOW_CUDA_KERNEL_CLASS(MatMul, CudaMatMulKernel); KernelInitContext (CPU, CUDA)
//   ONEFLOW_KERNEL_FACTORY(Reduce, DeviceType::kCuda, MakeReduce);  a KernelFactory that may refuse
//   ONEFLOW_KERNEL_TABLE(RegisterUnaryRows);             a function registering a generated table of rows
// Each expands to a static object whose constructor registers into KernelRegistry::Global(). Every
// module is an OBJECT library, so no object file, and no registrar, is dropped at link time. A broken
// registration (an op registered twice) stops the program at load with a message naming the op.
class KernelRegistrar {
 public:
  KernelRegistrar(CpuIsa tier, OpId op, DeviceType device, KernelFactory factory);
  KernelRegistrar(CpuIsa tier, OpId op, DeviceType device, void (*fn)(KernelContext&));
  KernelRegistrar(CpuIsa tier, void (*register_table)(KernelRegistry&));
};

template <typename K>
std::unique_ptr<OpKernel> ConstructKernel(const KernelInitContext& c) {
  return std::make_unique<K>(c);
}

#define OF_KERNEL_CONCAT_INNER(a, b) a##b
#define OF_KERNEL_CONCAT(a, b) OF_KERNEL_CONCAT_INNER(a, b)
// The tier of the code around the registration: ONEFLOW_CPU_TIER is set by the build for the wider
// copies of kernels/cpu (kernels/cpu/isa_region.h); everything else is tier 0.
#if defined(ONEFLOW_CPU_TIER)
#define OF_KERNEL_TIER static_cast<::oneflow::CpuIsa>(ONEFLOW_CPU_TIER)
#else
#define OF_KERNEL_TIER ::oneflow::CpuIsa::kSse42
#endif
#define OF_KERNEL_REGISTRAR_NAME OF_KERNEL_CONCAT(of_kernel_registrar_, __COUNTER__)
#define OF_KERNEL_REGISTRAR(...) \
  [[maybe_unused]] static const ::oneflow::KernelRegistrar OF_KERNEL_REGISTRAR_NAME(OF_KERNEL_TIER, __VA_ARGS__)
#define ONEFLOW_KERNEL(Op, fn) OF_KERNEL_REGISTRAR(::oneflow::OpId::k##Op, ::oneflow::DeviceType::kCpu, fn)
#define ONEFLOW_CUDA_KERNEL(Op, fn) OF_KERNEL_REGISTRAR(::oneflow::OpId::k##Op, ::oneflow::DeviceType::kCuda, fn)
#define ONEFLOW_KERNEL_CLASS(Op, K)                                           \
  OF_KERNEL_REGISTRAR(::oneflow::OpId::k##Op, ::oneflow::DeviceType::kCpu, \
                      ::oneflow::KernelFactory(::oneflow::ConstructKernel<K>))
#define ONEFLOW_CUDA_KERNEL_CLASS(Op, K)                                       \
  OF_KERNEL_REGISTRAR(::oneflow::OpId::k##Op, ::oneflow::DeviceType::kCuda, \
                      ::oneflow::KernelFactory(::oneflow::ConstructKernel<K>))
#define ONEFLOW_KERNEL_FACTORY(Op, device, factory) \
  OF_KERNEL_REGISTRAR(::oneflow::OpId::k##Op, device, ::oneflow::KernelFactory(factory))
#define ONEFLOW_KERNEL_TABLE(register_table) OF_KERNEL_REGISTRAR(register_table)

}  // namespace oneflow
