// Element types. Numeric values equal ONNX's TensorProto.DataType and oneflow_dtype_t.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "base/error.h"
#include "base/half.h"

namespace oneflow {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,  // std::string elements (Storage::AllocateStrings); only ops whose schema says takes_strings
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
  // Narrow storage types (base/narrow_types.h): one byte per element in memory, no arithmetic.
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
};

// Bytes per element (sizeof(std::string) for kString, whose storage holds constructed strings); 0 for
// kUndefined.
size_t DTypeSize(DType t);
const char* DTypeName(DType t);  // "float32", "int64", ...
// A DType we can store tensors of as plain bytes (not kString: callers that accept strings say so).
bool IsKnownDType(int32_t code);
bool IsFloatDType(DType t);       // f16, bf16, f32, f64
bool IsIntegerDType(DType t);     // signed or unsigned integers (not bool)
inline bool IsHalfDType(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

template <typename T> struct TypeTag { using type = T; };

template <typename T>
constexpr bool kIsHalfType = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// The type arithmetic on T is done in: float for the 16-bit floats, T itself otherwise.
template <typename T>
using ComputeType = std::conditional_t<kIsHalfType<T>, float, T>;

// Value conversions that also work for the 16-bit float storage types.
template <typename T>
inline T CastFromDouble(double v) {
  if constexpr (kIsHalfType<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}
template <typename T>
inline double CastToDouble(T v) {
  if constexpr (kIsHalfType<T>) return static_cast<double>(static_cast<float>(v));
  else return static_cast<double>(v);
}

// Calls fn(TypeTag<T>{}) for the C++ type of `t`, restricted to the listed groups.
// Example: DispatchNumeric(t, [&](auto tag) { using T = typename decltype(tag)::type; ... });
template <typename Fn>
decltype(auto) DispatchAll(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(TypeTag<float>{});
    case DType::kFloat64: return fn(TypeTag<double>{});
    case DType::kFloat16: return fn(TypeTag<Float16>{});
    case DType::kBFloat16: return fn(TypeTag<BFloat16>{});
    case DType::kInt8: return fn(TypeTag<int8_t>{});
    case DType::kInt16: return fn(TypeTag<int16_t>{});
    case DType::kInt32: return fn(TypeTag<int32_t>{});
    case DType::kInt64: return fn(TypeTag<int64_t>{});
    case DType::kUInt8: return fn(TypeTag<uint8_t>{});
    case DType::kUInt16: return fn(TypeTag<uint16_t>{});
    case DType::kUInt32: return fn(TypeTag<uint32_t>{});
    case DType::kUInt64: return fn(TypeTag<uint64_t>{});
    case DType::kBool: return fn(TypeTag<bool>{});
    default: Fail(ErrorCode::kUnsupported, "unsupported dtype ", DTypeName(t));
  }
}

// Native arithmetic types: f32, f64, all integers (no bool, no f16/bf16).
template <typename Fn>
decltype(auto) DispatchNumeric(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(TypeTag<float>{});
    case DType::kFloat64: return fn(TypeTag<double>{});
    case DType::kInt8: return fn(TypeTag<int8_t>{});
    case DType::kInt16: return fn(TypeTag<int16_t>{});
    case DType::kInt32: return fn(TypeTag<int32_t>{});
    case DType::kInt64: return fn(TypeTag<int64_t>{});
    case DType::kUInt8: return fn(TypeTag<uint8_t>{});
    case DType::kUInt16: return fn(TypeTag<uint16_t>{});
    case DType::kUInt32: return fn(TypeTag<uint32_t>{});
    case DType::kUInt64: return fn(TypeTag<uint64_t>{});
    default: Fail(ErrorCode::kUnsupported, "dtype ", DTypeName(t), " is not supported here (numeric types only)");
  }
}

// Every numeric type including f16/bf16 (no bool).
template <typename Fn>
decltype(auto) DispatchNumericHalf(DType t, Fn&& fn) {
  if (t == DType::kFloat16) return fn(TypeTag<Float16>{});
  if (t == DType::kBFloat16) return fn(TypeTag<BFloat16>{});
  return DispatchNumeric(t, std::forward<Fn>(fn));
}

// Integers only.
template <typename Fn>
decltype(auto) DispatchInteger(DType t, Fn&& fn) {
  switch (t) {
    case DType::kInt8: return fn(TypeTag<int8_t>{});
    case DType::kInt16: return fn(TypeTag<int16_t>{});
    case DType::kInt32: return fn(TypeTag<int32_t>{});
    case DType::kInt64: return fn(TypeTag<int64_t>{});
    case DType::kUInt8: return fn(TypeTag<uint8_t>{});
    case DType::kUInt16: return fn(TypeTag<uint16_t>{});
    case DType::kUInt32: return fn(TypeTag<uint32_t>{});
    case DType::kUInt64: return fn(TypeTag<uint64_t>{});
    default: Fail(ErrorCode::kUnsupported, "dtype ", DTypeName(t), " is not supported here (integer types only)");
  }
}

// f32, f64, f16, bf16.
template <typename Fn>
decltype(auto) DispatchFloating(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(TypeTag<float>{});
    case DType::kFloat64: return fn(TypeTag<double>{});
    case DType::kFloat16: return fn(TypeTag<Float16>{});
    case DType::kBFloat16: return fn(TypeTag<BFloat16>{});
    default: Fail(ErrorCode::kUnsupported, "dtype ", DTypeName(t), " is not supported here (floating types only)");
  }
}

// f32 and f64 only.
template <typename Fn>
decltype(auto) DispatchFloat(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(TypeTag<float>{});
    case DType::kFloat64: return fn(TypeTag<double>{});
    default: Fail(ErrorCode::kUnsupported, "dtype ", DTypeName(t), " is not supported here (float32/float64 only)");
  }
}

}  // namespace oneflow
