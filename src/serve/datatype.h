// Tensor element types as the inference protocol (KServe v2: "FP32", "INT64", ...) and Triton's
// model configuration (TYPE_FP32, ...) name them, mapped to the engine's DType.
#pragma once

#include <string>

#include "base/dtype.h"
#include "base/tensor.h"

namespace oneflow {
namespace serve {

// "FP32" etc.; "BYTES" for kString.
const char* ProtocolDatatypeName(DType t);
// DType::kUndefined when `name` is not a protocol datatype.
DType DTypeFromProtocolName(const std::string& name);

// Triton's config enum value (model_config.proto's DataType) <-> DType.
int ConfigDataTypeOf(DType t);
DType DTypeFromConfigDataType(int config_type);

// BYTES tensors as binary data (KServe's HTTP binary extension, gRPC raw contents): each element as a
// 4-byte little-endian length followed by its bytes, the layout Triton's clients write and read.
std::string SerializeBytesTensor(const Tensor& strings);
// The `size` bytes at `data` as a string tensor of `shape`; a length that runs past the end, too few
// or too many elements are refused (kInvalidArgument) naming `where`. Nothing is allocated for the
// elements before the lengths are checked against the data actually sent.
Tensor DeserializeBytesTensor(const char* data, size_t size, const Shape& shape, const std::string& where);
}  // namespace serve
}  // namespace oneflow
