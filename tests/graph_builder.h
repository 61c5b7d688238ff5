// A small graph builder for the tests that assemble models by hand (CUDA session and placement
// tests, NN, fusion, layout, autodiff and kernel tests): typed inputs, constants, trainable
// parameters, and nodes either named after their op and position (Node) or after their output
// value (Op). The default-domain opset is 17 unless the builder is given another. RunGraph runs a
// built graph and returns the fetched tensors.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/tensor.h"
#include "engine/session.h"
#include "graph/graph.h"

namespace oneflow::test_util {

// A trainable initializer of `g`.
inline int AddParam(Graph& g, const std::string& name, Tensor t) {
  const int id = g.AddConstant(name, std::move(t));
  g.values[static_cast<size_t>(id)].is_parameter = true;
  return id;
}

// Node `op`(inputs) -> a new value `out` (the node takes its output's name); schemas and types are
// left to PrepareGraph.
inline int AddOp(Graph& g, const std::string& op, std::vector<int> inputs, const std::string& out, AttrMap attrs = {},
                 int opset = 17) {
  oneflow::Node n;
  n.name = out;
  n.op_type = op;
  n.opset = opset;
  n.inputs = std::move(inputs);
  n.outputs.push_back(g.AddValue(out));
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
  return g.nodes.back().outputs[0];
}

struct GraphBuilder {
  Graph g;
  int opset;
  explicit GraphBuilder(int default_opset = 17) : opset(default_opset) { g.opset_imports[""] = opset; }
  int Input(const std::string& name, TensorType t) {
    const int v = g.AddValue(name, std::move(t));
    g.inputs.push_back(v);
    return v;
  }
  int Input(const std::string& name, DType dtype, const Shape& shape) {
    return Input(name, TensorType::Of(dtype, shape));
  }
  int Const(const std::string& name, const Tensor& t) { return g.AddConstant(name, t); }
  // A constant named after its position among the values ("c<k>").
  int Const(const Tensor& t) { return Const("c" + std::to_string(g.values.size()), t); }
  int Param(const std::string& name, Tensor t) { return AddParam(g, name, std::move(t)); }
  // Appends node `op`(inputs) with one new output value; schemas and types are left to the session.
  int Node(const std::string& op, std::vector<int> inputs, AttrMap attrs = {}) {
    const std::string name = op + std::to_string(g.nodes.size());
    const int out = AddOp(g, op, std::move(inputs), name + "_out", std::move(attrs), opset);
    g.nodes.back().name = name;
    return out;
  }
  // Appends node `op`(inputs) -> a new value `out`; the node is named `out` too.
  int Op(const std::string& op, std::vector<int> inputs, const std::string& out, AttrMap attrs = {}) {
    return AddOp(g, op, std::move(inputs), out, std::move(attrs), opset);
  }
  // Makes `output` a graph output and resolves schemas and types (PrepareGraph).
  Graph& Done(int output) {
    g.outputs.push_back(output);
    PrepareGraph(g);
    return g;
  }
};

// Runs `g` in a session (level 0 unless `level` says otherwise) and returns the fetched outputs in
// order.
inline std::vector<Tensor> RunGraph(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& feeds,
                                    const std::vector<std::string>& fetches, int threads = 1, int level = 0) {
  SessionOptions o;
  o.intra_op_threads = threads;
  o.optimization_level = level;
  std::vector<Tensor> out;
  for (auto& kv : Session(g, o).Run(feeds, fetches)) out.push_back(kv.second);
  return out;
}

// A 1-D int64 tensor holding `v` (shapes, axes, indices).
inline Tensor Ints(const std::vector<int64_t>& v) {
  Tensor t(DType::kInt64, Shape{static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

}  // namespace oneflow::test_util
