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

struct TensorType {
  DType dtype = DType::kUndefined;
  bool has_rank = false;  // false: nothing is known about the shape
  std::vector<Dim> dims;

  static TensorType Of(DType dtype, const Shape& shape);  // fully known
  static TensorType Of(DType dtype, std::vector<Dim> dims);
  static TensorType UnknownShape(DType dtype);

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool fully_known() const;  // rank known and every dim known
  Shape ToShape() const;     // requires fully_known()
  std::string ToString() const;  // "float32[batch,3,224,224]" or "float32[?]"
};

}  // namespace oneflow
