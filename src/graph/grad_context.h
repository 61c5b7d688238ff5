// GradContext: what an op's gradient rule (OpSchema::grad) sees of its forward node, and how it
// appends backward nodes to the graph. Rules live beside the op's schema in graph/ops/<family>.cc.
//
// A rule reads the forward node (inputs, outputs, their static types, attributes, constant input
// values) and the gradients flowing into its outputs, emits ordinary nodes (ONNX ops, or
// ai.oneflow grad ops with their own schema and kernel) and declares, for each input that needs a
// gradient, either the value holding it (SetInputGrad), that it is zero (ZeroGradient) or that
// the op is not differentiable with respect to it (NoGradient; autodiff then fails naming the op
// if a path needs it). Values are referred to by name; "" means absent.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/op_schema.h"
#include "graph/ops/binary_ops.h"

namespace oneflow {

// Attributes for an emitted node: MakeAttrs({{"axis", Attribute::Int(1)}}).
AttrMap MakeAttrs(std::initializer_list<std::pair<const char*, Attribute>> attrs);

class GradContext {
 public:
  // `needs_grad[i]`: input i lies on a path to the loss and needs a gradient. `output_grads[i]`:
  // the gradient of output i ("" when none flows into it, i.e. it is zero).
  GradContext(Graph& g, int node_index, std::vector<std::string> output_grads, std::vector<char> needs_grad);

  // ---- The forward node -----------------------------------------------------------------------
  const Node& node() const { return node_; }
  const AttrMap& attrs() const { return node_.attrs; }
  int opset() const { return node_.opset; }
  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  bool has_input(size_t i) const { return node_.has_input(i); }
  bool has_output(size_t i) const { return node_.has_output(i); }
  // References into the forward node's data stay valid while the rule emits nodes.
  const std::string& input(size_t i) const;   // value name of input i ("" when omitted)
  const std::string& output(size_t i) const;  // value name of output i ("" when omitted)
  const TensorType& input_type(size_t i) const;
  const TensorType& output_type(size_t i) const;
  // Input i's data when it is a constant (initializer or folded), else nullptr.
  const Tensor* input_constant(size_t i) const;
  // Input i's data as int64s; fails (kUnsupported, naming the node) when it is not a constant.
  std::vector<int64_t> ConstantInts(size_t i, const char* what) const;
  // Rank of input i; fails (kUnsupported) when the static rank is unknown.
  int64_t input_rank(size_t i) const;

  // ---- Gradients ------------------------------------------------------------------------------
  bool has_output_grad(size_t i) const { return i < output_grads_.size() && !output_grads_[i].empty(); }
  const std::string& output_grad(size_t i) const;  // "" when zero
  // The gradient of output i, or zeros of its shape when none flows into it.
  std::string OutputGradOrZeros(size_t i);
  bool needs_input_grad(size_t i) const { return i < needs_grad_.size() && needs_grad_[i]; }
  // `grad` must have input i's dtype and shape (SumToInputShape undoes broadcasting).
  void SetInputGrad(size_t i, const std::string& grad);
  void ZeroGradient(size_t i);                         // d/d input i is zero everywhere
  void NoGradient(size_t i, const std::string& why);  // not differentiable with respect to input i

  // ---- Emitting backward nodes ----------------------------------------------------------------
  // Appends a node (schema resolved, output types inferred) and returns its output names.
  // `domain` "" is ONNX at the graph's opset; kOneflowDomain ops use kOneflowDomainVersion.
  std::vector<std::string> Emit(const std::string& op, const std::vector<std::string>& inputs,
                                const AttrMap& attrs = {}, size_t num_outputs = 1, const std::string& domain = "");
  // Single-output shorthands.
  std::string Emit1(const std::string& op, const std::vector<std::string>& inputs, const AttrMap& attrs = {}) {
    return Emit(op, inputs, attrs, 1)[0];
  }
  std::string EmitOneflow(const std::string& op, const std::vector<std::string>& inputs, const AttrMap& attrs = {}) {
    return Emit(op, inputs, attrs, 1, kOneflowDomain)[0];
  }
  // The static type of any value (a copy: emitting nodes moves the graph's value table).
  TensorType TypeOf(const std::string& value) const;

  // ---- Constants and shapes -------------------------------------------------------------------
  std::string Constant(Tensor t);
  std::string Scalar(double v, DType dtype);        // rank-0 constant
  std::string Ints(const std::vector<int64_t>& v);  // 1-D int64 constant (axes, shapes, pads)
  // The shape of `value` as a 1-D int64 value: a constant when statically known, else a Shape node
  // (which makes `value` a forward value that training keeps).
  std::string ShapeOf(const std::string& value);
  // Sums `grad` (shaped like a broadcast of input i) back to input i's shape: the rule of every
  // broadcasting op. A no-op when the static shapes show no broadcasting.
  std::string SumToInputShape(const std::string& grad, size_t i);
  // Elementwise shorthands for rules written as formulas.
  std::string Add(const std::string& a, const std::string& b) { return Emit1(binary::Add::kName, {a, b}); }
  std::string Sub(const std::string& a, const std::string& b) { return Emit1(binary::Sub::kName, {a, b}); }
  std::string Mul(const std::string& a, const std::string& b) { return Emit1(binary::Mul::kName, {a, b}); }
  std::string Div(const std::string& a, const std::string& b) { return Emit1(binary::Div::kName, {a, b}); }
  std::string Neg(const std::string& a) { return Emit1(op::kNeg, {a}); }

  // Results, read by the autodiff pass after the rule ran.
  const std::vector<std::string>& input_grads() const { return input_grads_; }
  const std::vector<std::string>& no_grad_reasons() const { return no_grad_; }
  const std::vector<char>& declared() const { return declared_; }

 private:
  const Value& ValueOf(const std::string& name) const;

  Graph& g_;
  Node node_;  // copies of the forward node and its values: emitting reallocates g_'s tables
  std::vector<std::string> in_names_, out_names_;
  std::vector<TensorType> in_types_, out_types_;
  std::vector<Tensor> in_consts_;
  std::vector<std::string> output_grads_;
  std::vector<char> needs_grad_;
  std::vector<std::string> input_grads_;
  std::vector<std::string> no_grad_;
  std::vector<char> declared_;
};

}  // namespace oneflow
