// The native file's fixed 64-byte header and alignment helpers, shared by the writer and reader.
// All fields are little-endian. Bytes [0, 16) (magic and version) are frozen for every version so
// a reader can always say which version a file is before trusting anything else.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "serialize/checksum.h"
#include "serialize/native_format.h"

namespace oneflow {
namespace native {

struct Header {
  uint32_t major = kNativeFormatMajor;  // @8
  uint32_t minor = kNativeFormatMinor;  // @12
  uint64_t flatbuffer_offset = 0;       // @16: always kNativeHeaderBytes in version 1
  uint64_t flatbuffer_size = 0;         // @24
  uint64_t file_size = 0;               // @32: the whole file, so truncation is named as such
  uint64_t flatbuffer_checksum = 0;     // @40: XXH64 of the flatbuffer bytes
  uint64_t data_offset = 0;             // @48: start of this file's segment area (64-aligned)
  // @56: XXH64 of bytes [0, 56)
};

inline uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

inline void Put32(unsigned char* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void Put64(unsigned char* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint32_t Get32(const unsigned char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t Get64(const unsigned char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

inline void EncodeHeader(const Header& h, unsigned char out[kNativeHeaderBytes]) {
  std::memset(out, 0, kNativeHeaderBytes);
  std::memcpy(out, kNativeMagic, 8);
  Put32(out + 8, h.major);
  Put32(out + 12, h.minor);
  Put64(out + 16, h.flatbuffer_offset);
  Put64(out + 24, h.flatbuffer_size);
  Put64(out + 32, h.file_size);
  Put64(out + 40, h.flatbuffer_checksum);
  Put64(out + 48, h.data_offset);
  Put64(out + 56, Xxh64(out, 56));
}

// A stable name for messages, e.g. "1.0".
inline std::string VersionString(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace native
}  // namespace oneflow
