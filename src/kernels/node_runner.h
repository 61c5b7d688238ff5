// Runs one node on concrete tensors: runtime shape inference, output allocation, kernel call.
// Shared by the executor and by constant folding (EvaluateOnCpu) so both compute exactly the same thing.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kernels/kernel.h"

namespace oneflow {

// Allocates the tensor for output `index` of the node; the default allocates on the heap.
using OutputAllocator = std::function<Tensor(size_t index, DType dtype, const Shape& shape)>;

class NodeRunner {
 public:
  // Finds and instantiates the kernel for `node` on `device` (throws kUnsupported when there is
  // none). View kernels (Reshape, Squeeze, ...) only relabel a shape, so they serve every device.
  // `pool`, when given, is the pool runs will use (kernels that run subgraphs keep it).
  NodeRunner(const Graph& graph, const Node& node, DeviceType device = DeviceType::kCpu,
             std::shared_ptr<ThreadPool> pool = nullptr);

  const Node& node() const { return node_; }
  KernelKind kind() const { return kind_; }
  DeviceType device() const { return device_; }

  // Infers output shapes from `inputs` (nullptr = omitted optional input), allocates outputs
  // with `alloc` and computes them. `outputs` is resized to the node's output count; omitted
  // outputs stay undefined.
  void Run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, ThreadPool& pool,
           const OutputAllocator& alloc) const;
  // The same for a node whose inputs may live in device memory: shape inference sees
  // `infer_values` instead (host tensors, or nullptr where the data is not on the host), so it
  // never reads device bytes. Both vectors have one entry per input.
  void Run(const std::vector<const Tensor*>& inputs, const std::vector<const Tensor*>& infer_values,
           std::vector<Tensor>& outputs, ThreadPool& pool, const OutputAllocator& alloc) const;

 private:
  // The output types of the last inference that read no input data, with the input dtypes and
  // shapes it saw (kUndefined: omitted input): a run with the same ones reuses them. Runtime shape
  // inference costs ~0.5-1 us per node, which shows on small batch-1 models.
  struct InferCache {
    std::vector<std::pair<DType, Shape>> inputs;
    std::vector<std::pair<DType, Shape>> outputs;  // kUndefined: omitted output
  };
  std::shared_ptr<const InferCache> CachedOutputs(const std::vector<const Tensor*>& inputs) const;

  const Node& node_;
  const std::string desc_;  // node_.Describe(), computed once for error messages
  DeviceType device_;
  KernelKind kind_ = KernelKind::kCompute;
  std::unique_ptr<OpKernel> kernel_;
  mutable std::shared_ptr<const InferCache> infer_cache_;  // std::atomic_load/store: runs may overlap
};

// Runs `node` of `graph` once on the CPU with heap outputs: the evaluator constant folding is given
// (passes/passes.h, NodeEvaluator).
void EvaluateOnCpu(const Graph& graph, const Node& node, const std::vector<const Tensor*>& inputs,
                   std::vector<Tensor>& outputs, ThreadPool& pool);

}  // namespace oneflow
