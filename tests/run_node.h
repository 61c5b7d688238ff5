// One node run the way the executor runs it: a one-node graph, prepared (schema resolved,
// attribute defaults filled, types inferred), then a NodeRunner (run-time inference, output
// allocation, the CPU kernel). Float outputs start as NaN, so a kernel that leaves an element
// unwritten fails the comparison. The unit tests' single-op calls share it.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "graph/op_schema.h"
#include "graph/prepare.h"
#include "kernels/node_runner.h"

namespace oneflow::test_util {

struct NodeCall {
  std::string op;
  std::string domain;  // "" = ONNX; kOneflowDomain for the engine's own ops
  int opset = 17;      // of `domain`
  AttrMap attrs;
  std::vector<Tensor> inputs;  // an undefined tensor is an omitted optional input
  size_t num_outputs = 1;
};

// The prepared one-node graph of `c` and its runner, for tests that run it more than once.
struct PreparedNode {
  Graph g;
  std::unique_ptr<NodeRunner> runner;

  explicit PreparedNode(const NodeCall& c) {
    Node n;
    n.op_type = c.op;
    n.domain = c.domain;
    n.name = "n";
    n.opset = c.opset;
    n.attrs = c.attrs;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!c.inputs[i].defined()) {
        n.inputs.push_back(kNoValue);
        continue;
      }
      const int v = g.AddValue("in" + std::to_string(i), TensorType::Of(c.inputs[i].dtype(), c.inputs[i].shape()));
      g.inputs.push_back(v);
      n.inputs.push_back(v);
    }
    for (size_t i = 0; i < c.num_outputs; ++i) {
      const int v = g.AddValue("out" + std::to_string(i));
      g.outputs.push_back(v);
      n.outputs.push_back(v);
    }
    g.nodes.push_back(n);
    g.opset_imports[c.domain] = c.opset;
    if (!c.domain.empty()) g.opset_imports[""] = 17;
    PrepareGraph(g);
    runner = std::make_unique<NodeRunner>(g, g.nodes[0]);
  }

  std::vector<Tensor> Run(const std::vector<Tensor>& inputs, ThreadPool& pool) const {
    std::vector<const Tensor*> ptrs;
    for (const Tensor& t : inputs) ptrs.push_back(t.defined() ? &t : nullptr);
    std::vector<Tensor> outs;
    runner->Run(ptrs, outs, pool, [](size_t, DType dt, const Shape& s) {
      Tensor t = Tensor::Uninitialized(dt, s);
      if (dt == DType::kFloat32) std::fill(t.data<float>(), t.data<float>() + t.numel(), std::nanf(""));
      if (dt == DType::kFloat64) std::fill(t.data<double>(), t.data<double>() + t.numel(), std::nan(""));
      return t;
    });
    return outs;
  }
};

inline std::vector<Tensor> RunNode(const NodeCall& c, ThreadPool& pool) { return PreparedNode(c).Run(c.inputs, pool); }

}  // namespace oneflow::test_util
