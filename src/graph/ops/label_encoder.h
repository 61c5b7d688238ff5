// ai.onnx.ml LabelEncoder's table, read once from whichever attributes the model's opset uses:
// shape inference (ops/string.cc) takes the output dtype from it and the CPU kernel
// (kernels/cpu/string_ops.cc) builds its lookup from it.
//   opset 1   classes_strings: a string X maps to its index (int64, default_int64 when absent);
//             an int64 X maps to classes_strings[X] (default_string when out of range)
//   opset 2   keys_{strings,int64s,floats} -> values_{strings,int64s,floats}, default_<values' type>
//   opset 4   also keys_tensor / values_tensor / default_tensor (string, int64, int32, int16,
//             float, double)
#pragma once

#include "base/tensor.h"
#include "graph/attribute.h"

namespace oneflow {

struct LabelEncoderSpec {
  Tensor keys;          // 1-D, the dtype X must have
  Tensor values;        // 1-D, as many as keys; Y's dtype
  Tensor default_value;  // one element of values' dtype: what a key not in `keys` maps to
};

// `x_dtype` is X's element type (only opset 1 needs it: it picks the direction); kUndefined when
// not known yet. Throws kInvalidModel naming `node` for a malformed table.
LabelEncoderSpec ParseLabelEncoderSpec(const AttrMap& attrs, int opset, DType x_dtype, const std::string& node);

}  // namespace oneflow
