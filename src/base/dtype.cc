// Element-type facts.
#include "base/dtype.h"

namespace oneflow {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kInt32: case DType::kUInt32: return 4;
    case DType::kFloat64: case DType::kInt64: case DType::kUInt64: return 8;
    case DType::kFloat16: case DType::kBFloat16: case DType::kInt16: case DType::kUInt16: return 2;
    case DType::kInt8: case DType::kUInt8: case DType::kBool: return 1;
    default: return 0;
  }
}

const char* DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kInt8: return "int8";
    case DType::kInt16: return "int16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kUInt8: return "uint8";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
    case DType::kUInt64: return "uint64";
    case DType::kBool: return "bool";
    case DType::kString: return "string";
    default: return "undefined";
  }
}

bool IsKnownDType(int32_t code) {
  return code != 0 && code != 8 && DTypeSize(static_cast<DType>(code)) != 0;
}

bool IsFloatDType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

bool IsIntegerDType(DType t) {
  switch (t) {
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: case DType::kUInt64: return true;
    default: return false;
  }
}

}  // namespace oneflow
