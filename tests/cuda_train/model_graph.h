// Hand-built training models for the training tests: trainable parameters and opset-17 nodes named
// after their output value.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/tensor.h"
#include "graph/graph.h"

namespace oneflow::train_test {

// A trainable initializer of `g`.
inline int AddParam(Graph& g, const std::string& name, Tensor t) {
  const int id = g.AddConstant(name, std::move(t));
  g.values[static_cast<size_t>(id)].is_parameter = true;
  return id;
}

// Node `type`(in) -> a new value `out` (the node takes its output's name); schemas and types are
// left to PrepareGraph.
inline int AddOp(Graph& g, const std::string& type, std::vector<int> in, const std::string& out, AttrMap attrs = {}) {
  Node n;
  n.name = out;
  n.op_type = type;
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs.push_back(g.AddValue(out));
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
  return g.nodes.back().outputs[0];
}

}  // namespace oneflow::train_test
