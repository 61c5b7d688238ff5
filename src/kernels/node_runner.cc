// NodeRunner implementation.
#include "kernels/node_runner.h"

#include <charconv>
#include <chrono>

#include "base/trace.h"
#include "kernels/op_profile.h"
#include "graph/op_schema.h"

namespace oneflow {

namespace {

// "float32[1,128]" as a JSON string ("none" for an omitted tensor), written in place: this
// formatting is most of what a traced node costs.
void AppendShape(std::string& json, const Tensor* t) {
  if (t == nullptr || !t->defined()) {
    json += "\"none\"";
    return;
  }
  char buf[32 + 21 * 16];  // a dtype name and up to 16 dims per piece
  char* p = buf;
  *p++ = '"';
  for (const char* name = DTypeName(t->dtype()); *name != '\0';) *p++ = *name++;  // plain identifiers
  *p++ = '[';
  const Shape& shape = t->shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (p > buf + sizeof buf - 24) {  // a rank beyond 16: flush and go on
      json.append(buf, p);
      p = buf;
    }
    if (d) *p++ = ',';
    p = std::to_chars(p, buf + sizeof buf, shape[d]).ptr;
  }
  *p++ = ']';
  *p++ = '"';
  json.append(buf, p);
}

void AddTraceArgs(TraceScope& trace, const Node& node, DeviceType device, const std::vector<const Tensor*>& inputs,
                  const std::vector<Tensor>& outputs) {
  trace.StopClock();  // the formatting below is the trace's cost, not the node's
  trace.Arg("node", node.name);
  if (!node.domain.empty()) trace.Arg("domain", node.domain);
  if (device != DeviceType::kCpu) trace.Arg("device", "cuda");
  std::string shapes;
  shapes.reserve(48 * (inputs.size() + outputs.size()));
  shapes += '[';
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) shapes += ',';
    AppendShape(shapes, inputs[i]);
  }
  shapes += ']';
  trace.ArgJson("inputs", shapes);
  shapes.assign(1, '[');
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i) shapes += ',';
    AppendShape(shapes, &outputs[i]);
  }
  shapes += ']';
  trace.ArgJson("outputs", shapes);
}

}  // namespace

NodeRunner::NodeRunner(const Graph& graph, const Node& node, DeviceType device, std::shared_ptr<ThreadPool> pool)
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
  kernel_ = def->factory(KernelInitContext(graph, node, std::move(pool)));
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

// The run-time half of session creation's check (graph/shape_inference.cc): a value whose type was
// not known statically may still turn out to be strings, which only takes_strings ops handle.
static void RefuseStrings(const std::vector<const Tensor*>& inputs, const InferContext& infer, const std::string& desc_) {
  for (const Tensor* t : inputs)
    OF_CHECK(!t || !t->is_tensor() || t->dtype() != DType::kString, kUnsupported, desc_,
             ": this op does not take string tensors, got ", DescribeValue(*t));
  for (size_t i = 0; i < infer.num_outputs(); ++i)
    OF_CHECK(infer.output(i).dtype != DType::kString, kUnsupported, desc_, ": this op does not make string tensors");
}

void NodeRunner::Run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, ThreadPool& pool,
                     const OutputAllocator& alloc) const {
  Run(inputs, inputs, outputs, pool, alloc);
}

void NodeRunner::Run(const std::vector<const Tensor*>& inputs, const std::vector<const Tensor*>& infer_values,
                     std::vector<Tensor>& outputs, ThreadPool& pool, const OutputAllocator& alloc) const {
  // A trace's node slice covers the whole run of the node (inference, allocation, the kernel),
  // so the gaps between slices are the executor's own work.
  TraceScope trace("node", node_.op_type);
  const size_t num_outputs = node_.outputs.size();
  if (node_.schema->outputs_shaped_by_kernel) {  // the kernel assigns its outputs
    outputs.assign(num_outputs, Tensor());
    KernelContext ctx(node_, pool, &desc_);
    ctx.inputs() = inputs;
    ctx.outputs().resize(num_outputs, nullptr);
    for (size_t i = 0; i < num_outputs; ++i)
      if (node_.outputs[i] != kNoValue) ctx.outputs()[i] = &outputs[i];
    kernel_->Compute(ctx);
    for (size_t i = 0; i < num_outputs; ++i)
      OF_CHECK(node_.outputs[i] == kNoValue || outputs[i].defined(), kInternal, desc_, ": output ", i, " was not set");
    if (trace) AddTraceArgs(trace, node_, device_, inputs, outputs);
    return;
  }
  if (kind_ == KernelKind::kView && !inputs.empty() && inputs[0] && !inputs[0]->is_tensor()) {
    // Identity of a sequence or an optional (the one view that accepts them): the value itself.
    outputs.assign(num_outputs, Tensor());
    outputs[0] = *inputs[0];
    return;
  }
  std::shared_ptr<const InferCache> cache = CachedOutputs(inputs);
  if (!cache) {
    InferContext infer(node_.attrs, node_.opset, desc_, num_outputs);
    std::vector<TensorType> input_types(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == nullptr) {
        infer.AddInput(nullptr, nullptr);
        continue;
      }
      input_types[i] = TensorType::OfValue(*inputs[i]);
      infer.AddInput(&input_types[i], infer_values[i]);  // host values (device sessions mirror shape inputs)
    }
    node_.schema->infer(infer);
    if (!node_.schema->takes_strings) RefuseStrings(inputs, infer, desc_);
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
  if (kind_ == KernelKind::kView) {
    if (trace) AddTraceArgs(trace.Arg("kernel", "view"), node_, device_, inputs, outputs);
    return;
  }

  KernelContext ctx(node_, pool, &desc_);
  ctx.inputs() = inputs;
  ctx.outputs().resize(num_outputs, nullptr);
  for (size_t i = 0; i < num_outputs; ++i)
    if (outputs[i].defined()) ctx.outputs()[i] = &outputs[i];
  if (!OpProfilingEnabled()) {
    kernel_->Compute(ctx);
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    kernel_->Compute(ctx);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    RecordOpTime(node_.op_type, desc_, ns);
  }
  if (trace) AddTraceArgs(trace, node_, device_, inputs, outputs);
}

void EvaluateOnCpu(const Graph& graph, const Node& node, const std::vector<const Tensor*>& inputs,
                   std::vector<Tensor>& outputs, ThreadPool& pool) {
  // A pool that outlives this call: the node's kernel keeps it only while it runs here.
  std::shared_ptr<ThreadPool> borrowed(std::shared_ptr<ThreadPool>(), &pool);
  NodeRunner(graph, node, DeviceType::kCpu, borrowed).Run(inputs, outputs, pool, nullptr);
}

}  // namespace oneflow
