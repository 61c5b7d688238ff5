// Static tensor types: a dtype plus a shape whose dims may be known, symbolic or unknown.
#pragma once

#include <string>
#include <vector>

#include "base/tensor.h"

namespace oneflow {

// One dimension: a known size (value >= 0), a named symbolic size ("batch"), or unknown.
struct Dim {
  int64_t value = -1;
  std::string symbol;  // set only for symbolic dims

  static Dim Known(int64_t v) { Dim d; d.value = v; return d; }
  static Dim Symbol(std::string s) { Dim d; d.symbol = std::move(s); return d; }
  static Dim Unknown() { return Dim(); }
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
};

// The static type of a value: a tensor type, or one of ONNX's wrappers around one — seq(tensor),
// optional(tensor), optional(seq(tensor)) — with dtype and dims describing the element tensor
// (every element of a sequence, as far as they agree). Run-time values: base/tensor.h, ValueKind.
struct TensorType {
  DType dtype = DType::kUndefined;
  bool has_rank = false;  // false: nothing is known about the shape
  std::vector<Dim> dims;
  bool is_sequence = false;  // seq(element)
  bool is_optional = false;  // optional(element), or optional(seq(element)) with is_sequence

  static TensorType Of(DType dtype, const Shape& shape);  // fully known
  static TensorType Of(DType dtype, std::vector<Dim> dims);
  static TensorType UnknownShape(DType dtype);
  static TensorType SequenceOf(TensorType element);  // element must be a tensor type
  static TensorType OptionalOf(TensorType inner);    // inner: a tensor or sequence type
  // The type a run-time value has: fully known for a tensor; a sequence's dims where its elements
  // agree on them; a none is optional(its dtype).
  static TensorType OfValue(const Tensor& value);

  bool is_tensor() const { return !is_sequence && !is_optional; }
  // Nothing known: not even the kind (an untyped subgraph input, a value before inference).
  bool unknown() const { return dtype == DType::kUndefined && !has_rank && is_tensor(); }
  TensorType Element() const;  // the tensor type inside the wrappers (itself for a tensor)
  TensorType Unwrapped() const;  // optional(x) -> x; anything else unchanged

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool fully_known() const;  // a tensor type with its rank known and every dim known
  Shape ToShape() const;     // requires fully_known()
  // "float32[batch,3,224,224]", "float32[?]", "seq(float32[?])", "optional(seq(int64[3]))"
  std::string ToString() const;
  // Whether run-time `value` may stand where this type is declared: its kind fits (a none only
  // where optional), its dtype where known, and a tensor's dims where known (a sequence's element
  // dims are advisory, not checked).
  bool Admits(const Tensor& value) const;
};

}  // namespace oneflow
