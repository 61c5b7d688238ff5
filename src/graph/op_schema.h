// The op registry: one OpSchema per op holds its signature, attribute defaults, the ONNX opset
// versions it covers, its type/shape inference, its reverse-mode gradient rule (GradFn, see
// graph/grad_context.h) and its SBP signatures for global tensors (SbpFn, graph/sbp_signature.h).
#pragma once

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/attribute.h"
#include "graph/op_list.h"
#include "graph/sbp_signature.h"
#include "graph/tensor_type.h"

namespace oneflow {

// What inference sees of one node: input types, constant input values where known, attributes.
// The same function runs statically at session creation (shapes may be symbolic, values mostly
// unknown) and at run time (every shape concrete, every input value present), so each op's shape
// logic is written once.
class InferContext {
 public:
  // `node_desc` (used in error messages) must outlive the context.
  InferContext(const AttrMap& attrs, int opset, const std::string& node_desc, size_t num_outputs)
      : attrs_(attrs), opset_(opset), node_desc_(&node_desc), outputs_(num_outputs) {}

  void AddInput(const TensorType* type, const Tensor* value) { types_.push_back(type); values_.push_back(value); }

  size_t num_inputs() const { return types_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  bool has_input(size_t i) const { return i < types_.size() && types_[i] != nullptr; }
  const TensorType& input_type(size_t i) const;  // throws when the input is absent
  DType input_dtype(size_t i) const { return input_type(i).dtype; }
  // The input's data when known (constants statically; always at run time); else nullptr.
  const Tensor* input_value(size_t i) const {
    values_read_ = true;
    return i < values_.size() ? values_[i] : nullptr;
  }
  // Whether the inference asked for any input's data: if not, its outputs follow from the input
  // types and attributes alone (NodeRunner reuses them for repeated input shapes).
  bool read_input_values() const { return values_read_; }
  const AttrMap& attrs() const { return attrs_; }
  int opset() const { return opset_; }
  const std::string& node() const { return *node_desc_; }  // for error messages

  void set_output(size_t i, TensorType t);
  const TensorType& output(size_t i) const { return outputs_[i]; }
  std::vector<TensorType>& outputs() { return outputs_; }

  // Fails with kInvalidModel (statically) naming this node; use for shape/dtype mismatches.
  template <typename... Args>
  [[noreturn]] void Error(const Args&... args) const {
    Fail(ErrorCode::kInvalidArgument, *node_desc_, ": ", args...);
  }

 private:
  const AttrMap& attrs_;
  int opset_;
  const std::string* node_desc_;
  std::vector<const TensorType*> types_;
  std::vector<const Tensor*> values_;
  std::vector<TensorType> outputs_;
  mutable bool values_read_ = false;
};

using InferFn = std::function<void(InferContext&)>;

// The gradient rule: given the forward node and the gradients of its outputs, emits backward
// nodes computing the gradients of its inputs (graph/grad_context.h; the pass is graph/autodiff.h).
class GradContext;
using GradFn = std::function<void(GradContext&)>;

enum class ParamArity { kSingle, kOptional, kVariadic };

// How mixed-precision training (train/mixed_precision.h) treats an op.
enum class PrecisionClass {
  kKeep,    // stays in f32: the default (reductions, normalizations, losses, anything not marked)
  kLow,     // does the heavy arithmetic: always in the low precision (MatMul, Gemm, Conv)
  kFollow,  // cheap and exact enough: in the low precision when an input already is
};

// The planner's estimate of one run's arithmetic from the node's attributes and its input and
// output shapes (plan/plan.h EstimateFlops). Unset: about one operation per output element.
using FlopsFn = std::function<double(const AttrMap& attrs, const std::vector<Shape>& in, const std::vector<Shape>& out)>;

// The kinds of value an input accepts (a bit set over TensorType's kinds): dense tensors unless
// the op says otherwise. kOptionalKind admits optional(x) for each kind x the set also admits.
enum ParamKinds : uint8_t { kTensorKind = 1, kSequenceKind = 2, kOptionalKind = 4, kAnyKind = 7 };

struct ParamSpec {
  std::string name;
  ParamArity arity = ParamArity::kSingle;
  uint8_t kinds = kTensorKind;
};

// Whether a value of static type `t` may feed a parameter accepting `kinds` (unknown types may).
bool ParamAccepts(uint8_t kinds, const TensorType& t);

struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::kUndefined;
  bool required = false;
  bool has_default = false;
  Attribute default_value;
};

struct OpSchema {
  OpId id = OpId::kUnknown;  // set by OpRegistry::Register from (domain, name)
  std::string name;
  std::string domain;     // "" = ONNX default domain; "ai.oneflow" = our internal fused ops
  int since_version = 1;  // first opset of `domain` this definition covers
  int last_version = INT_MAX;  // last opset covered (an op removed or redefined later)
  std::string doc;
  std::vector<ParamSpec> inputs;
  std::vector<ParamSpec> outputs;
  std::vector<AttrSpec> attrs;
  InferFn infer;
  GradFn grad;  // empty: the op is not differentiable (autodiff names it when a path needs it)
  // Valid SBP signatures (global tensors, graph/sbp_signature.h); empty: only "all B"
  // (replicated compute). Costs are the planner's (plan/cost_model.h), from shapes.
  SbpFn sbp;
  // Inputs whose data (not only their type) sets an output's shape, e.g. Reshape's `shape`:
  // inference reads them at run time, so a device session keeps a host copy of each
  // (engine/device_placement.h, ShapeInputPositions).
  std::vector<size_t> shape_inputs;
  // Inputs whose data sets a kernel's launch configuration (its loop structure) without setting a
  // shape, e.g. CumSum's `axis`: a device kernel needs them on the host before it launches.
  std::vector<size_t> launch_inputs;
  // Inputs of which the op reads only the type, never the bytes (Shape, Size): a device session
  // need not move them anywhere.
  std::vector<size_t> type_only_inputs;
  PrecisionClass precision = PrecisionClass::kKeep;
  FlopsFn flops;
  // The op's kernels read or write string tensors (std::string elements, not bytes). Session
  // creation refuses a string-typed input or output anywhere else, so no byte-copying kernel ever
  // sees one (graph/shape_inference.cc).
  bool takes_strings = false;
  // Output 0 is input 0's bytes under the inferred shape (Reshape, Squeeze, Identity, ...): no
  // kernel runs, on any device; the executor aliases the two and the planner counts no compute.
  bool view = false;
  // The kernel decides its outputs' shapes, and allocates them, as it computes (If, Loop, Scan:
  // only running the subgraph tells). NodeRunner then skips run-time inference and hands the kernel
  // undefined output tensors to assign; static inference still says what it can.
  bool outputs_shaped_by_kernel = false;
  // The outputs are not a function of the inputs (random ops draw from a generator that advances
  // with every run): constant folding leaves the node to run.
  bool random = false;

  // Builder: OpSchema(op::kRelu).Since(14).Input("X").Output("Y").Infer(SameAsInput0)
  explicit OpSchema(std::string n, std::string d = "") : name(std::move(n)), domain(std::move(d)) {}
  explicit OpSchema(OpId op) : OpSchema(OpName(op), OpDomain(op)) {}
  OpSchema& Since(int v) { since_version = v; return *this; }
  OpSchema& Until(int v) { last_version = v; return *this; }
  OpSchema& Doc(std::string d) { doc = std::move(d); return *this; }
  OpSchema& Input(std::string n, ParamArity a = ParamArity::kSingle) { inputs.push_back({std::move(n), a}); return *this; }
  OpSchema& OptionalInput(std::string n) { return Input(std::move(n), ParamArity::kOptional); }
  // An input whose data sets an output's shape (see shape_inputs).
  OpSchema& ShapeInput(std::string n, ParamArity a = ParamArity::kSingle) {
    shape_inputs.push_back(inputs.size());
    return Input(std::move(n), a);
  }
  OpSchema& OptionalShapeInput(std::string n) { return ShapeInput(std::move(n), ParamArity::kOptional); }
  // An input whose data sets the kernel's launch configuration (see launch_inputs).
  OpSchema& LaunchInput(std::string n, ParamArity a = ParamArity::kSingle) {
    launch_inputs.push_back(inputs.size());
    return Input(std::move(n), a);
  }
  // An input read for its type only (see type_only_inputs).
  OpSchema& TypeOnlyInput(std::string n) {
    type_only_inputs.push_back(inputs.size());
    return Input(std::move(n));
  }
  OpSchema& VariadicInput(std::string n) { return Input(std::move(n), ParamArity::kVariadic); }
  // The value kinds the input declared last accepts (ParamKinds); tensors only by default.
  OpSchema& Accepting(uint8_t kinds) { inputs.back().kinds = kinds; return *this; }
  OpSchema& Output(std::string n, ParamArity a = ParamArity::kSingle) { outputs.push_back({std::move(n), a}); return *this; }
  OpSchema& OptionalOutput(std::string n) { return Output(std::move(n), ParamArity::kOptional); }
  OpSchema& VariadicOutput(std::string n) { return Output(std::move(n), ParamArity::kVariadic); }
  OpSchema& Attr(std::string n, Attribute default_value);           // optional, with a default
  OpSchema& RequiredAttr(std::string n, AttrKind kind);             // must be present
  OpSchema& OptionalAttr(std::string n, AttrKind kind);             // may be absent, no default
  OpSchema& Infer(InferFn fn) { infer = std::move(fn); return *this; }
  OpSchema& Grad(GradFn fn) { grad = std::move(fn); return *this; }
  OpSchema& Sbp(SbpFn fn) { sbp = std::move(fn); return *this; }
  OpSchema& Precision(PrecisionClass p) { precision = p; return *this; }
  OpSchema& Flops(FlopsFn fn) { flops = std::move(fn); return *this; }
  OpSchema& View() { view = true; return *this; }
  OpSchema& TakesStrings() { takes_strings = true; return *this; }
  OpSchema& OutputsShapedByKernel() { outputs_shaped_by_kernel = true; return *this; }
  OpSchema& Random() { random = true; return *this; }

  // Whether input `i` is read for its type only (TypeOnlyInput): its bytes are never touched.
  bool ReadsOnlyTypeOf(size_t i) const {
    return std::find(type_only_inputs.begin(), type_only_inputs.end(), i) != type_only_inputs.end();
  }
};

class OpRegistry {
 public:
  static OpRegistry& Global();  // every built-in op, registered on first use

  void Register(OpSchema schema);  // throws kInternal on overlapping version ranges
  // The schema of `op` in `domain` that covers `opset`, or nullptr.
  const OpSchema* Find(const std::string& domain, const std::string& op, int opset) const;
  // Any version of `op` in `domain` (for messages such as "supported from opset 17").
  std::vector<const OpSchema*> FindAllVersions(const std::string& domain, const std::string& op) const;
  std::vector<const OpSchema*> All() const;
  // Attaches SBP signatures to every registered version of `op` (graph/ops/sbp_rules.cc keeps
  // them per family so they merge cleanly beside the gradient rules). Throws kInternal if absent.
  void SetSbp(const std::string& domain, const std::string& op, const SbpFn& fn);

 private:
  std::map<std::pair<std::string, std::string>, std::vector<OpSchema>> schemas_;
};

// Opsets of the default ONNX domain we accept.
constexpr int kMinOnnxOpset = 13;
constexpr int kMaxOnnxOpset = 28;
constexpr const char* kOneflowDomain = "ai.oneflow";
constexpr int kOneflowDomainVersion = 1;

}  // namespace oneflow
