// One registered CPU kernel run on host tensors, outside any graph or session: the reference side
// of the kernel tests (CUDA kernels, mixed precision, fused attention).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "kernels/kernel.h"

namespace oneflow::test_util {

struct OpCall {
  std::string op;
  std::string domain;
  int opset = 17;
  AttrMap attrs;
  std::vector<Tensor> inputs;  // host tensors; an undefined tensor is an omitted optional input
  std::vector<std::pair<DType, Shape>> outputs;
};

// The node a kernel of `call` is created for (op, domain, opset and attributes only).
inline Node KernelNode(const OpCall& call) {
  Node node;
  node.op_type = call.op;
  node.domain = call.domain;
  node.opset = call.opset;
  node.attrs = call.attrs;
  return node;
}

// Runs the CPU kernel of `call` on fresh (uninitialized) outputs of the given dtypes and shapes.
// Throws kInvalidArgument when no CPU kernel is registered for the op.
inline std::vector<Tensor> RunCpuKernel(const OpCall& call) {
  static ThreadPool pool(2);
  Graph g;
  const Node node = KernelNode(call);
  const KernelDef* def = KernelRegistry::Global().Find(call.domain, call.op, DeviceType::kCpu);
  OF_REQUIRE(def != nullptr, "no CPU kernel for ", call.op);
  std::unique_ptr<OpKernel> kernel = def->factory(KernelInitContext(g, node));
  KernelContext ctx(node, pool);
  std::vector<Tensor> outs;
  for (const auto& [dt, shape] : call.outputs) outs.push_back(Tensor::Uninitialized(dt, shape));
  for (const Tensor& t : call.inputs) ctx.inputs().push_back(t.defined() ? &t : nullptr);
  for (Tensor& t : outs) ctx.outputs().push_back(&t);
  kernel->Compute(ctx);
  return outs;
}

}  // namespace oneflow::test_util
