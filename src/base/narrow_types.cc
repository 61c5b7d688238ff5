// Conversions of the narrow element types (narrow_types.h).
//
// The minifloats (float8 x4, float4e2m1) share one description: mantissa bits, exponent bias,
// largest finite value, and how the format spells NaN and infinity. Encoding rounds |v| to the
// format's quantum at v's binade (the subnormal quantum below the smallest normal): a scale by a
// power of two and nearbyint, both exact in double, so the result is correctly rounded to
// nearest even without bit tricks per format.
#include "base/narrow_types.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace oneflow {
namespace {

struct Minifloat {
  int mantissa_bits;
  int bias;
  double max_finite;
  int total_bits;      // 8 or 4: the sign is the top bit
  bool nan_is_neg_zero;  // FNUZ: the one NaN is the code of -0, and there is no -0
  int nan_code;        // the positive NaN code (-1: the format has no NaN)
  int inf_code;        // the positive infinity code (-1: none)
};

// E4M3FN: no infinities, S.1111.111 is NaN. E5M2: IEEE-like. FNUZ: bias one more, 0x80 is NaN.
// E2M1: neither NaN nor infinity.
const Minifloat* MinifloatOf(DType t) {
  static const Minifloat kE4M3FN{3, 7, 448.0, 8, false, 0x7F, -1};
  static const Minifloat kE4M3FNUZ{3, 8, 240.0, 8, true, 0x80, -1};
  static const Minifloat kE5M2{2, 15, 57344.0, 8, false, 0x7F, 0x7C};
  static const Minifloat kE5M2FNUZ{2, 16, 57344.0, 8, true, 0x80, -1};
  static const Minifloat kE2M1{1, 1, 6.0, 4, false, -1, -1};
  switch (t) {
    case DType::kFloat8E4M3FN: return &kE4M3FN;
    case DType::kFloat8E4M3FNUZ: return &kE4M3FNUZ;
    case DType::kFloat8E5M2: return &kE5M2;
    case DType::kFloat8E5M2FNUZ: return &kE5M2FNUZ;
    case DType::kFloat4E2M1: return &kE2M1;
    default: return nullptr;
  }
}

double DecodeMinifloat(const Minifloat& f, uint8_t code) {
  const int exp_bits = f.total_bits - 1 - f.mantissa_bits;
  code &= static_cast<uint8_t>((1u << f.total_bits) - 1);
  const bool negative = (code >> (f.total_bits - 1)) & 1;
  const int exp_field = (code >> f.mantissa_bits) & ((1 << exp_bits) - 1);
  const int mantissa = code & ((1 << f.mantissa_bits) - 1);
  const int magnitude = code & ((1 << (f.total_bits - 1)) - 1);
  if (f.nan_is_neg_zero && code == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if (f.inf_code >= 0 && exp_field == (1 << exp_bits) - 1) {
    if (mantissa == 0) return negative ? -HUGE_VAL : HUGE_VAL;
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (!f.nan_is_neg_zero && f.nan_code >= 0 && magnitude == f.nan_code)
    return std::numeric_limits<double>::quiet_NaN();
  const int min_exponent = 1 - f.bias;
  double v = exp_field == 0 ? std::ldexp(mantissa, min_exponent - f.mantissa_bits)
                            : std::ldexp((1 << f.mantissa_bits) + mantissa, exp_field - f.bias - f.mantissa_bits);
  return negative ? -v : v;
}

uint8_t EncodeMinifloat(const Minifloat& f, double v, bool saturate) {
  const uint8_t sign_bit = static_cast<uint8_t>(1u << (f.total_bits - 1));
  const bool negative = std::signbit(v);
  const uint8_t sign = negative ? sign_bit : 0;
  const uint8_t max_code = [&] {  // the largest finite magnitude's code
    const int exp_bits = f.total_bits - 1 - f.mantissa_bits;
    int m = (1 << (f.total_bits - 1)) - 1;  // all ones
    if (f.inf_code >= 0) m = ((((1 << exp_bits) - 2)) << f.mantissa_bits) | ((1 << f.mantissa_bits) - 1);
    else if (!f.nan_is_neg_zero && f.nan_code >= 0) m = f.nan_code - 1;
    return static_cast<uint8_t>(m);
  }();
  auto nan = [&]() -> uint8_t {
    if (f.nan_is_neg_zero) return 0x80;
    if (f.nan_code < 0) return sign_bit;  // E2M1 has no NaN: -0, as ml_dtypes (the reference) stores it
    return static_cast<uint8_t>(sign | f.nan_code);
  };
  auto overflow = [&]() -> uint8_t {
    if (saturate || (f.nan_code < 0 && f.inf_code < 0)) return static_cast<uint8_t>(sign | max_code);
    if (f.inf_code >= 0) return static_cast<uint8_t>(sign | f.inf_code);
    return nan();
  };
  if (std::isnan(v)) return nan();
  const double a = std::fabs(v);
  if (std::isinf(a)) return overflow();
  if (a == 0) return f.nan_is_neg_zero ? 0 : sign;
  const int min_exponent = 1 - f.bias;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): a's binade is 2^(e-1)
  const int binade = std::max(e - 1, min_exponent);
  const double units = std::nearbyint(std::ldexp(a, f.mantissa_bits - binade));  // multiples of the quantum
  const double r = std::ldexp(units, binade - f.mantissa_bits);
  if (r > f.max_finite) return overflow();
  if (r == 0) return f.nan_is_neg_zero ? 0 : sign;
  std::frexp(r, &e);
  if (e - 1 < min_exponent)  // subnormal: exponent field 0
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::ldexp(r, f.mantissa_bits - min_exponent)));
  const int exp_field = e - 1 + f.bias;
  const int mantissa = static_cast<int>(std::ldexp(r, f.mantissa_bits - (e - 1))) - (1 << f.mantissa_bits);
  return static_cast<uint8_t>(sign | (exp_field << f.mantissa_bits) | mantissa);
}

// float8e8m0: an unsigned power of two 2^(code - 127); 0xFF is NaN. Encoded from v's float32
// exponent field, rounded as onnx.numpy_helper.to_float8e8m0 does (the node tests' reference);
// infinities saturate to the largest value as the Cast spec's table says.
uint8_t EncodeE8M0(double v, const NarrowCastOptions& o) {
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF) return std::isinf(f) && o.saturate ? 0xFE : 0xFF;
  bool round_up = false;
  switch (o.e8m0_rounding) {
    case E8M0Rounding::kUp: round_up = (bits & 0x7FFFFF) != 0; break;
    case E8M0Rounding::kDown: break;
    case E8M0Rounding::kNearest: {
      const bool guard = bits & 0x400000, round = bits & 0x200000, sticky = (bits & 0x1FFFFF) != 0;
      round_up = guard && (round || sticky || exponent > 0);
      break;
    }
  }
  if (round_up && !(o.saturate && exponent == 0xFE)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

int64_t TruncateToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

bool IsNarrowFloatDType(DType t) {
  switch (t) {
    case DType::kFloat8E4M3FN: case DType::kFloat8E4M3FNUZ: case DType::kFloat8E5M2: case DType::kFloat8E5M2FNUZ:
    case DType::kFloat4E2M1: case DType::kFloat8E8M0: return true;
    default: return false;
  }
}

bool IsNarrowIntegerDType(DType t) {
  return t == DType::kInt4 || t == DType::kUInt4 || t == DType::kInt2 || t == DType::kUInt2;
}

bool IsNarrowDType(DType t) { return IsNarrowFloatDType(t) || IsNarrowIntegerDType(t); }

int NarrowBitWidth(DType t) {
  switch (t) {
    case DType::kInt4: case DType::kUInt4: case DType::kFloat4E2M1: return 4;
    case DType::kInt2: case DType::kUInt2: return 2;
    default: return 8;
  }
}

int32_t NarrowIntegerMin(DType t) {
  switch (t) {
    case DType::kInt4: return -8;
    case DType::kInt2: return -2;
    default: return 0;
  }
}

int32_t NarrowIntegerMax(DType t) {
  switch (t) {
    case DType::kInt4: return 7;
    case DType::kUInt4: return 15;
    case DType::kInt2: return 1;
    default: return 3;
  }
}

double NarrowToDouble(DType t, uint8_t stored) {
  if (const Minifloat* f = MinifloatOf(t)) return DecodeMinifloat(*f, stored);
  switch (t) {
    case DType::kFloat8E8M0:
      return stored == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, static_cast<int>(stored) - 127);
    case DType::kInt4: return static_cast<double>(static_cast<int>((stored & 0xF) ^ 0x8) - 8);
    case DType::kUInt4: return static_cast<double>(stored & 0xF);
    case DType::kInt2: return static_cast<double>(static_cast<int>((stored & 0x3) ^ 0x2) - 2);
    case DType::kUInt2: return static_cast<double>(stored & 0x3);
    default: Fail(ErrorCode::kInternal, DTypeName(t), " is not a narrow type");
  }
}

uint8_t NarrowFromInt64(DType t, int64_t v, const NarrowCastOptions& o) {
  if (!IsNarrowIntegerDType(t)) return NarrowFromDouble(t, static_cast<double>(v), o);
  const int bits = NarrowBitWidth(t);
  const int64_t low = v & ((int64_t{1} << bits) - 1);
  if (t == DType::kInt4 || t == DType::kInt2) {
    const int64_t half = int64_t{1} << (bits - 1);
    return static_cast<uint8_t>(static_cast<int8_t>((low ^ half) - half));  // sign-extended into the byte
  }
  return static_cast<uint8_t>(low);
}

uint8_t NarrowFromDouble(DType t, double v, const NarrowCastOptions& o) {
  if (const Minifloat* f = MinifloatOf(t)) return EncodeMinifloat(*f, v, o.saturate);
  if (t == DType::kFloat8E8M0) return EncodeE8M0(v, o);
  return NarrowFromInt64(t, TruncateToInt64(v), o);
}

size_t PackedByteCount(DType t, int64_t n) {
  const int per_byte = 8 / NarrowBitWidth(t);
  return static_cast<size_t>((n + per_byte - 1) / per_byte);
}

void PackSubByte(DType t, const uint8_t* stored, int64_t n, uint8_t* packed) {
  const int bits = NarrowBitWidth(t), per_byte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  std::memset(packed, 0, PackedByteCount(t, n));
  for (int64_t i = 0; i < n; ++i)
    packed[i / per_byte] |= static_cast<uint8_t>((stored[i] & mask) << ((i % per_byte) * bits));
}

void UnpackSubByte(DType t, const uint8_t* packed, int64_t n, uint8_t* stored) {
  const int bits = NarrowBitWidth(t), per_byte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  const bool sign_extend = t == DType::kInt4 || t == DType::kInt2;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t code = (packed[i / per_byte] >> ((i % per_byte) * bits)) & mask;
    stored[i] = sign_extend ? NarrowFromInt64(t, code) : code;
  }
}

}  // namespace oneflow
