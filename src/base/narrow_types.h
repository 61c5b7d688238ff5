// The element types narrower than the arithmetic ones: the four float8 formats, float4e2m1, the
// float8e8m0 scale type, and the 4- and 2-bit integers (ONNX TensorProto.DataType 17 to 26).
//
// No arithmetic kernel takes them: they are storage types that Cast, CastLike, QuantizeLinear,
// DequantizeLinear and the data-movement ops carry. In memory every one of them takes one byte
// per element, as ml_dtypes and numpy hold them: a 4- or 2-bit integer is its value in an
// int8/uint8 byte, a float4e2m1 its 4-bit code in the low nibble. Only ONNX files pack the
// sub-byte types (two 4-bit or four 2-bit elements per byte, first element in the low bits);
// PackSubByte and UnpackSubByte convert at that boundary. Readers mask the byte to the type's
// width, so a stray high bit in user data cannot produce a value outside the type.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/dtype.h"

namespace oneflow {

// How a cast to float8e8m0 rounds a value that is not a power of two (Cast-25 `round_mode`).
enum class E8M0Rounding { kUp, kDown, kNearest };

struct NarrowCastOptions {
  // Float8 targets: out-of-range values and infinities become the largest finite value (true)
  // or NaN/infinity as the format allows (false). float8e8m0: clamp instead of NaN.
  bool saturate = true;
  E8M0Rounding e8m0_rounding = E8M0Rounding::kUp;
};

bool IsNarrowDType(DType t);
bool IsNarrowFloatDType(DType t);    // float8 x4, float4e2m1, float8e8m0
bool IsNarrowIntegerDType(DType t);  // int4, uint4, int2, uint2
int NarrowBitWidth(DType t);         // 8, 4 or 2: the width ONNX packs the type at

// The integer range of a narrow integer type ([-8, 7] for int4, ...).
int32_t NarrowIntegerMin(DType t);
int32_t NarrowIntegerMax(DType t);

// The value of one stored byte of narrow type `t` (exact: every narrow value is a double).
double NarrowToDouble(DType t, uint8_t stored);

// The stored byte for `v`. Floats round to nearest even (float8e8m0: as `o` says) and handle
// overflow, infinities and NaN as ONNX's Cast specifies. Integers: `v` truncated toward zero
// (saturating at int64's range, NaN -> 0), then the bits above the type's width discarded, as
// ONNX narrows fixed-point values.
uint8_t NarrowFromDouble(DType t, double v, const NarrowCastOptions& o = {});
// For integer sources: the bits above the width discarded; floats convert the (exact) value.
uint8_t NarrowFromInt64(DType t, int64_t v, const NarrowCastOptions& o = {});

// Bytes an ONNX file uses for `n` elements of `t` (packed sub-byte types; n for the others).
size_t PackedByteCount(DType t, int64_t n);
// Sub-byte types only: `n` stored bytes <-> ONNX's packed form (PackedByteCount(t, n) bytes,
// padding bits zero).
void PackSubByte(DType t, const uint8_t* stored, int64_t n, uint8_t* packed);
void UnpackSubByte(DType t, const uint8_t* packed, int64_t n, uint8_t* stored);

}  // namespace oneflow
