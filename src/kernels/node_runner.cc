// NodeRunner implementation.
#include "kernels/node_runner.h"

#include <chrono>

#include "kernels/op_profile.h"
#include "graph/op_schema.h"

namespace oneflow {

NodeRunner::NodeRunner(const Graph& graph, const Node& node, DeviceType device)
    : node_(node), desc_(node.Describe()), device_(device) {
  if (node.schema != nullptr && node.schema->view) {  // OpSchema::View: no kernel, on any device
    kind_ = KernelKind::kView;
    return;
  }
  const KernelRegistry& kernels = KernelRegistry::Global();
  const KernelDef* def = node.schema != nullptr ? kernels.Find(node.schema->id, device)
                                                : kernels.Find(node.domain, node.op_type, device);
  OF_CHECK(def != nullptr, kUnsupported, "no ", device == DeviceType::kCpu ? "CPU" : "CUDA", " kernel for ",
           node.Describe());
  kernel_ = def->factory(KernelInitContext(graph, node));
}

std::shared_ptr<const NodeRunner::InferCache> NodeRunner::CachedOutputs(const std::vector<const Tensor*>& inputs) const {
  std::shared_ptr<const InferCache> c = std::atomic_load(&infer_cache_);
  if (!c || c->inputs.size() != inputs.size()) return nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& [dtype, shape] = c->inputs[i];
    if (inputs[i] == nullptr ? dtype != DType::kUndefined : dtype != inputs[i]->dtype() || shape != inputs[i]->shape())
      return nullptr;
  }
  return c;
}

void NodeRunner::Run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, ThreadPool& pool,
                     const OutputAllocator& alloc) const {
  Run(inputs, inputs, outputs, pool, alloc);
}

void NodeRunner::Run(const std::vector<const Tensor*>& inputs, const std::vector<const Tensor*>& infer_values,
                     std::vector<Tensor>& outputs, ThreadPool& pool, const OutputAllocator& alloc) const {
  const size_t num_outputs = node_.outputs.size();
  std::shared_ptr<const InferCache> cache = CachedOutputs(inputs);
  if (!cache) {
    InferContext infer(node_.attrs, node_.opset, desc_, num_outputs);
    std::vector<TensorType> input_types(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == nullptr) {
        infer.AddInput(nullptr, nullptr);
        continue;
      }
      input_types[i] = TensorType::Of(inputs[i]->dtype(), inputs[i]->shape());
      infer.AddInput(&input_types[i], infer_values[i]);  // host values (device sessions mirror shape inputs)
    }
    node_.schema->infer(infer);
    auto fresh = std::make_shared<InferCache>();
    for (const Tensor* t : inputs) fresh->inputs.emplace_back(t ? t->dtype() : DType::kUndefined, t ? t->shape() : Shape());
    for (size_t i = 0; i < num_outputs; ++i) {
      if (node_.outputs[i] == kNoValue) {
        fresh->outputs.emplace_back(DType::kUndefined, Shape());
        continue;
      }
      const TensorType& t = infer.output(i);
      OF_CHECK(t.fully_known() && t.dtype != DType::kUndefined, kInternal, desc_,
               ": output ", i, " shape not determined at run time (", t.ToString(), ")");
      fresh->outputs.emplace_back(t.dtype, t.ToShape());
    }
    // Data-dependent outputs (Reshape's shape input, Range, NonZero...) are inferred every run.
    if (!infer.read_input_values()) std::atomic_store(&infer_cache_, std::shared_ptr<const InferCache>(fresh));
    cache = std::move(fresh);
  }

  outputs.assign(num_outputs, Tensor());
  for (size_t i = 0; i < num_outputs; ++i) {
    if (node_.outputs[i] == kNoValue) continue;
    const auto& [dtype, shape] = cache->outputs[i];
    if (kind_ == KernelKind::kView && i == 0) {
      OF_ASSERT(inputs.size() > 0 && inputs[0] != nullptr);
      outputs[0] = inputs[0]->Reshaped(shape);
    } else {
      outputs[i] = alloc ? alloc(i, dtype, shape) : Tensor::Uninitialized(dtype, shape);
    }
  }
  if (kind_ == KernelKind::kView) return;

  KernelContext ctx(node_, pool, &desc_);
  ctx.inputs() = inputs;
  ctx.outputs().resize(num_outputs, nullptr);
  for (size_t i = 0; i < num_outputs; ++i)
    if (outputs[i].defined()) ctx.outputs()[i] = &outputs[i];
  if (!OpProfilingEnabled()) {
    kernel_->Compute(ctx);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  kernel_->Compute(ctx);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  RecordOpTime(node_.op_type, desc_, ns);
}

void EvaluateOnCpu(const Graph& graph, const Node& node, const std::vector<const Tensor*>& inputs,
                   std::vector<Tensor>& outputs, ThreadPool& pool) {
  NodeRunner(graph, node).Run(inputs, outputs, pool, nullptr);
}

}  // namespace oneflow
