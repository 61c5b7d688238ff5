// A small opset-17 graph builder for the tests that assemble models by hand (CUDA session and
// placement tests, NN kernel tests): typed inputs, constants, and nodes named after their op and
// position.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/tensor.h"
#include "graph/graph.h"

namespace oneflow::test_util {

struct GraphBuilder {
  Graph g;
  GraphBuilder() { g.opset_imports[""] = 17; }
  int Input(const std::string& name, TensorType t) {
    const int v = g.AddValue(name, std::move(t));
    g.inputs.push_back(v);
    return v;
  }
  int Const(const std::string& name, const Tensor& t) { return g.AddConstant(name, t); }
  // Appends node `op`(inputs) with one new output value; schemas and types are left to the session.
  int Node(const std::string& op, std::vector<int> inputs, AttrMap attrs = {}) {
    oneflow::Node n;
    n.op_type = op;
    n.opset = 17;
    n.name = op + std::to_string(g.nodes.size());
    n.inputs = std::move(inputs);
    n.outputs = {g.AddValue(n.name + "_out")};
    n.attrs = std::move(attrs);
    g.nodes.push_back(std::move(n));
    return g.nodes.back().outputs[0];
  }
};

// A 1-D int64 tensor holding `v` (shapes, axes, indices).
inline Tensor Ints(const std::vector<int64_t>& v) {
  Tensor t(DType::kInt64, Shape{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

}  // namespace oneflow::test_util
