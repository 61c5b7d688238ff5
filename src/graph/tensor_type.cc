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

bool TensorType::fully_known() const {
  if (!has_rank) return false;
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
