// The logical graph IR: values (typed edges, optionally constant), nodes and graph inputs/outputs.
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graph/attribute.h"
#include "graph/op_list.h"
#include "graph/placement.h"
#include "graph/sbp.h"
#include "graph/tensor_type.h"

namespace oneflow {

struct OpSchema;

// A value is a tensor-valued edge. Constants (initializers, folded results) carry their data.
struct Value {
  std::string name;
  TensorType type;
  Tensor constant;         // defined() for initializers and folded constants
  bool is_parameter = false;  // an initializer from the model (trainable later), not a folded result
  NdSbp sbp;                  // manual-plan annotation (one entry per placement axis); empty = free
};

constexpr int kNoValue = -1;  // an omitted optional input or output

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;         // "" is the default ONNX domain
  int opset = 0;              // the model's opset for `domain`: kernels branch on it where ONNX changed
  std::vector<int> inputs;    // value ids; kNoValue for an omitted optional input
  std::vector<int> outputs;   // value ids; kNoValue for an omitted optional output
  AttrMap attrs;
  // Attributes ResolveSchemas filled in from schema defaults (the model did not set them); an
  // export leaves them out so the written model says what the source said.
  std::set<std::string> defaulted_attrs;
  std::string doc_string;
  const OpSchema* schema = nullptr;  // set by validation

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != kNoValue; }
  bool has_output(size_t i) const { return i < outputs.size() && outputs[i] != kNoValue; }
  std::string Describe() const;  // "Conv 'conv1' (opset 17)"
};

// What a model file says besides the graph itself, kept so an export reproduces it.
struct ModelMetadata {
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;        // the model's
  std::string graph_doc_string;  // the graph's
  std::vector<std::pair<std::string, std::string>> metadata_props;  // in file order
  // Intermediate values the model annotated with a type (ONNX value_info), by name.
  std::vector<std::string> annotated_values;
};

class Graph {
 public:
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;   // runtime-fed values, in declaration order
  std::vector<int> outputs;  // values returned by a run, in declaration order
  std::map<std::string, int> opset_imports;  // domain -> version
  std::string name;
  std::string producer;
  ModelMetadata metadata;
  Placement placement;  // where the graph runs as global tensors; empty = one device
  // Subgraphs (an If branch, a Loop or Scan body): how many of `inputs`, at the end, are values of
  // the enclosing graphs the body reads. The importer turns each such outer-scope name into an
  // explicit input here and into a trailing input of the node that owns the subgraph (in the same
  // order), so passes over the outer graph see every use of a value (ONNX Runtime's "implicit
  // inputs"). 0 for a top-level graph.
  size_t captured_inputs = 0;

  // Adds a value; its name must be unique (empty names get a generated one).
  int AddValue(const std::string& name, TensorType type = {});
  int FindValue(const std::string& name) const;  // kNoValue when absent
  int AddConstant(const std::string& name, Tensor t);
  std::string UniqueName(const std::string& base);  // a value name not used yet

  // Node indices in an order where every producer precedes its consumers. Throws kInvalidModel
  // naming a node on the cycle when there is one.
  std::vector<int> TopologicalOrder() const;
  // Producer node index of each value (kNoValue for inputs and constants).
  std::vector<int> Producers() const;
  // Rebuilds the name index after values were edited directly.
  void Reindex();

 private:
  std::unordered_map<std::string, int> by_name_;
};

// The number of trailing inputs of a node with attributes `attrs` that its subgraphs capture from
// the enclosing scope (the same count for every subgraph attribute; 0 for a node without subgraphs).
size_t CapturedInputCount(const AttrMap& attrs);

}  // namespace oneflow
