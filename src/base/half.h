// IEEE binary16 and bfloat16 storage types with conversions to and from float.
#pragma once

#include <cstdint>
#include <cstring>

namespace oneflow {

inline float BitsToFloat(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
inline uint32_t FloatToBits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }

struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f) : bits(FromFloat(f)) {}
  operator float() const { return ToFloat(bits); }

  static uint16_t FromFloat(float f) {
    uint32_t x = FloatToBits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t mant = x & 0x7fffffu;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
    if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int32_t e = exp - 127 + 15;
    if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (e <= 0) {                                                 // subnormal or zero
      if (e < -10) return static_cast<uint16_t>(sign);
      mant |= 0x800000u;
      uint32_t shift = static_cast<uint32_t>(14 - e);
      uint32_t half = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1);
      uint32_t mid = 1u << (shift - 1);
      if (rem > mid || (rem == mid && (half & 1))) ++half;
      return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;  // round to nearest even
    return static_cast<uint16_t>(half);
  }
  static float ToFloat(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
      if (mant == 0) return BitsToFloat(sign);
      float f = static_cast<float>(mant) * (1.0f / 16777216.0f);  // 2^-24
      return sign ? -f : f;
    }
    if (exp == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mant << 13));
    return BitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(FromFloat(f)) {}
  operator float() const { return BitsToFloat(static_cast<uint32_t>(bits) << 16); }

  static uint16_t FromFloat(float f) {
    uint32_t x = FloatToBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN
    uint32_t rounding = 0x7fffu + ((x >> 16) & 1);  // round to nearest even
    return static_cast<uint16_t>((x + rounding) >> 16);
  }
};

}  // namespace oneflow
