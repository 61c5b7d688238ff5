// GradContext: the forward node's view for gradient rules, and node/constant emission.
#include "graph/grad_context.h"

#include "graph/prepare.h"

namespace oneflow {

AttrMap MakeAttrs(std::initializer_list<std::pair<const char*, Attribute>> attrs) {
  AttrMap m;
  for (const auto& [name, a] : attrs) m.set(name, a);
  return m;
}

GradContext::GradContext(Graph& g, int node_index, std::vector<std::string> output_grads, std::vector<char> needs_grad)
    : g_(g),
      node_(g.nodes[static_cast<size_t>(node_index)]),
      output_grads_(std::move(output_grads)),
      needs_grad_(std::move(needs_grad)),
      input_grads_(node_.inputs.size()),
      no_grad_(node_.inputs.size()),
      declared_(node_.inputs.size(), 0) {
  output_grads_.resize(node_.outputs.size());
  needs_grad_.resize(node_.inputs.size(), 0);
  for (int v : node_.inputs) {
    const Value* val = v == kNoValue ? nullptr : &g.values[static_cast<size_t>(v)];
    in_names_.push_back(val ? val->name : std::string());
    in_types_.push_back(val ? val->type : TensorType());
    in_consts_.push_back(val ? val->constant : Tensor());
  }
  for (int v : node_.outputs) {
    const Value* val = v == kNoValue ? nullptr : &g.values[static_cast<size_t>(v)];
    out_names_.push_back(val ? val->name : std::string());
    out_types_.push_back(val ? val->type : TensorType());
  }
}

static const std::string kNone;

const std::string& GradContext::input(size_t i) const { return has_input(i) ? in_names_[i] : kNone; }

const std::string& GradContext::output(size_t i) const { return has_output(i) ? out_names_[i] : kNone; }

const TensorType& GradContext::input_type(size_t i) const {
  OF_CHECK(has_input(i), kInternal, node_.Describe(), ": gradient rule reads missing input ", i);
  return in_types_[i];
}

const TensorType& GradContext::output_type(size_t i) const {
  OF_CHECK(has_output(i), kInternal, node_.Describe(), ": gradient rule reads missing output ", i);
  return out_types_[i];
}

const Tensor* GradContext::input_constant(size_t i) const {
  return has_input(i) && in_consts_[i].defined() ? &in_consts_[i] : nullptr;
}

std::vector<int64_t> GradContext::ConstantInts(size_t i, const char* what) const {
  const Tensor* t = input_constant(i);
  OF_CHECK(t != nullptr, kUnsupported, "cannot differentiate ", node_.Describe(), ": its ", what,
           " input must be a constant for the gradient");
  return t->ToInt64Vector();
}

int64_t GradContext::input_rank(size_t i) const {
  const TensorType& t = input_type(i);
  OF_CHECK(t.has_rank, kUnsupported, "cannot differentiate ", node_.Describe(), ": the rank of input '", input(i),
           "' is unknown");
  return t.rank();
}

const std::string& GradContext::output_grad(size_t i) const { return i < output_grads_.size() ? output_grads_[i] : kNone; }

std::string GradContext::OutputGradOrZeros(size_t i) {
  if (has_output_grad(i)) return output_grads_[i];
  const TensorType& t = output_type(i);
  if (t.fully_known()) return Constant(Tensor(t.dtype, t.ToShape()));
  Tensor zero(t.dtype, Shape{1});
  return Emit1(op::kConstantOfShape, {ShapeOf(output(i))}, MakeAttrs({{"value", Attribute::TensorValue(zero)}}));
}

void GradContext::SetInputGrad(size_t i, const std::string& grad) {
  OF_CHECK(i < input_grads_.size() && !grad.empty(), kInternal, node_.Describe(), ": bad gradient for input ", i);
  const TensorType gt = TypeOf(grad);
  OF_CHECK(gt.dtype == input_type(i).dtype, kInternal, node_.Describe(), ": gradient rule gives input ", i,
           " a ", DTypeName(gt.dtype), " gradient for a ", DTypeName(input_type(i).dtype), " input");
  input_grads_[i] = grad;
  declared_[i] = 1;
}

void GradContext::ZeroGradient(size_t i) {
  OF_CHECK(i < declared_.size(), kInternal, node_.Describe(), ": bad input index ", i);
  declared_[i] = 1;
}

void GradContext::NoGradient(size_t i, const std::string& why) {
  OF_CHECK(i < declared_.size(), kInternal, node_.Describe(), ": bad input index ", i);
  no_grad_[i] = why;
  declared_[i] = 1;
}

const Value& GradContext::ValueOf(const std::string& name) const {
  int id = g_.FindValue(name);
  OF_CHECK(id != kNoValue, kInternal, node_.Describe(), ": gradient rule refers to unknown value '", name, "'");
  return g_.values[static_cast<size_t>(id)];
}

TensorType GradContext::TypeOf(const std::string& value) const { return ValueOf(value).type; }

std::vector<std::string> GradContext::Emit(const std::string& op, const std::vector<std::string>& inputs,
                                           const AttrMap& attrs, size_t num_outputs, const std::string& domain) {
  Node n;
  n.op_type = op;
  n.domain = domain;
  if (domain.empty()) {
    auto it = g_.opset_imports.find("");
    n.opset = it != g_.opset_imports.end() ? it->second : (node_.domain.empty() ? node_.opset : kMaxOnnxOpset);
  } else {
    OF_CHECK(domain == kOneflowDomain, kInternal, "gradient rules emit ONNX or ", kOneflowDomain, " ops, not ", domain);
    g_.opset_imports.emplace(kOneflowDomain, kOneflowDomainVersion);
    n.opset = kOneflowDomainVersion;
  }
  const std::string base = "grad/" + (node_.name.empty() ? node_.op_type : node_.name);
  n.name = base + "/" + op;
  for (const std::string& in : inputs) {
    int id = in.empty() ? kNoValue : g_.FindValue(in);
    OF_CHECK(in.empty() || id != kNoValue, kInternal, node_.Describe(), ": gradient rule emits ", op,
             " reading unknown value '", in, "'");
    n.inputs.push_back(id);
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < num_outputs; ++i) {
    names.push_back(g_.UniqueName(base));
    n.outputs.push_back(g_.AddValue(names.back()));
  }
  n.attrs = attrs;
  ResolveNodeSchema(n);
  InferNodeTypes(g_, n);
  g_.nodes.push_back(std::move(n));
  return names;
}

std::string GradContext::Constant(Tensor t) {
  const std::string name = g_.UniqueName("grad/" + (node_.name.empty() ? node_.op_type : node_.name) + "/const");
  g_.AddConstant(name, std::move(t));
  return name;
}

std::string GradContext::Scalar(double v, DType dtype) { return Constant(Tensor::Scalar(dtype, v)); }

std::string GradContext::Ints(const std::vector<int64_t>& v) {
  Tensor t(DType::kInt64, Shape{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return Constant(std::move(t));
}

std::string GradContext::ShapeOf(const std::string& value) {
  const TensorType t = TypeOf(value);
  if (t.fully_known()) return Ints(t.ToShape());
  return Emit1(op::kShape, {value});
}

// True when both shapes are statically the same: equal known dims or equal symbols.
static bool SameStaticShape(const TensorType& a, const TensorType& b) {
  if (!a.has_rank || !b.has_rank || a.rank() != b.rank()) return false;
  for (size_t d = 0; d < a.dims.size(); ++d) {
    const Dim &x = a.dims[d], &y = b.dims[d];
    if (!(x.known() ? x.value == y.value : (!x.symbol.empty() && x.symbol == y.symbol))) return false;
  }
  return true;
}

std::string GradContext::SumToInputShape(const std::string& grad, size_t i) {
  const TensorType& want = input_type(i);
  const TensorType have = TypeOf(grad);
  if (SameStaticShape(want, have)) return grad;
  return EmitOneflow(op::kReduceSumToShape, {grad, ShapeOf(input(i))});
}

}  // namespace oneflow
