// Tensor element types as the inference protocol (KServe v2: "FP32", "INT64", ...) and Triton's
// model configuration (TYPE_FP32, ...) name them, mapped to the engine's DType.
#pragma once

#include <string>

#include "base/dtype.h"

namespace oneflow {
namespace serve {

// "FP32" etc.; "BYTES" for kString (which no kernel consumes, so requests are refused earlier).
const char* ProtocolDatatypeName(DType t);
// DType::kUndefined when `name` is not a protocol datatype.
DType DTypeFromProtocolName(const std::string& name);

// Triton's config enum value (model_config.proto's DataType) <-> DType.
int ConfigDataTypeOf(DType t);
DType DTypeFromConfigDataType(int config_type);

}  // namespace serve
}  // namespace oneflow
