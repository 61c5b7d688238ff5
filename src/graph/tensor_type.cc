// TensorType helpers.
#include "graph/tensor_type.h"

namespace oneflow {

TensorType TensorType::Of(DType dtype, const Shape& shape) {
  TensorType t;
  t.dtype = dtype;
  t.has_rank = true;
  for (int64_t d : shape) t.dims.push_back(Dim::Known(d));
  return t;
}

TensorType TensorType::Of(DType dtype, std::vector<Dim> dims) {
  TensorType t;
  t.dtype = dtype;
  t.has_rank = true;
  t.dims = std::move(dims);
  return t;
}

TensorType TensorType::UnknownShape(DType dtype) {
  TensorType t;
  t.dtype = dtype;
  return t;
}

TensorType TensorType::SequenceOf(TensorType element) {
  OF_ASSERT(element.is_tensor());
  element.is_sequence = true;
  return element;
}

TensorType TensorType::OptionalOf(TensorType inner) {
  OF_ASSERT(!inner.is_optional);
  inner.is_optional = true;
  return inner;
}

TensorType TensorType::OfValue(const Tensor& value) {
  switch (value.kind()) {
    case ValueKind::kTensor: return Of(value.dtype(), value.shape());
    case ValueKind::kNone: return OptionalOf(UnknownShape(value.dtype()));
    case ValueKind::kSequence: break;
  }
  TensorType element = UnknownShape(value.dtype());
  const std::vector<Tensor>& items = value.elements();
  if (!items.empty()) {
    element = Of(value.dtype(), items[0].shape());
    for (const Tensor& e : items) {
      if (e.rank() != element.rank()) {
        element.has_rank = false;
        element.dims.clear();
        break;
      }
      for (size_t d = 0; d < element.dims.size(); ++d)
        if (element.dims[d].value != e.shape()[d]) element.dims[d] = Dim::Unknown();
    }
  }
  return SequenceOf(element);
}

TensorType TensorType::Element() const {
  TensorType t = *this;
  t.is_sequence = t.is_optional = false;
  return t;
}

TensorType TensorType::Unwrapped() const {
  TensorType t = *this;
  t.is_optional = false;
  return t;
}

bool TensorType::Admits(const Tensor& value) const {
  if (unknown()) return true;
  switch (value.kind()) {
    case ValueKind::kNone:
      return is_optional && (dtype == DType::kUndefined || value.dtype() == DType::kUndefined || value.dtype() == dtype);
    case ValueKind::kSequence:
      if (!is_sequence) return false;
      break;
    case ValueKind::kTensor:
      if (is_sequence) return false;
      break;
  }
  if (dtype != DType::kUndefined && value.dtype() != dtype) return false;
  const TensorType element = Element();
  auto fits = [&](const Tensor& t) {
    if (!element.has_rank) return true;
    if (t.rank() != element.rank()) return false;
    for (size_t d = 0; d < element.dims.size(); ++d)
      if (element.dims[d].known() && element.dims[d].value != t.shape()[d]) return false;
    return true;
  };
  // A sequence's element dims are advisory: models declare one element shape for elements that
  // differ (onnx's own loop16_seq_none), and no kernel relies on them.
  return !value.is_tensor() || fits(value);
}

bool TensorType::fully_known() const {
  if (!has_rank || !is_tensor()) return false;
  for (const Dim& d : dims)
    if (!d.known()) return false;
  return true;
}

Shape TensorType::ToShape() const {
  OF_ASSERT(fully_known());
  Shape s;
  s.reserve(dims.size());
  for (const Dim& d : dims) s.push_back(d.value);
  return s;
}

std::string TensorType::ToString() const {
  if (is_optional) return "optional(" + Unwrapped().ToString() + ")";
  if (is_sequence) return "seq(" + Element().ToString() + ")";
  std::string s = DTypeName(dtype);
  if (!has_rank) return s + "[?]";
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].known() ? std::to_string(dims[i].value) : (dims[i].symbol.empty() ? "?" : dims[i].symbol);
  }
  return s + "]";
}

}  // namespace oneflow
