// Packed string runs (base/packed_strings.h).
#include "base/packed_strings.h"

#include "base/error.h"

namespace oneflow {
namespace {

size_t LengthAt(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return static_cast<size_t>(b[0]) | static_cast<size_t>(b[1]) << 8 | static_cast<size_t>(b[2]) << 16 |
         static_cast<size_t>(b[3]) << 24;
}

}  // namespace

std::string PackStrings(const std::string* elements, int64_t count) {
  size_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    OF_CHECK(elements[i].size() <= UINT32_MAX, kUnsupported, "string element ", i, " holds ", elements[i].size(),
             " bytes; a packed string takes at most 4 GiB");
    total += 4 + elements[i].size();
  }
  std::string out;
  out.reserve(total);
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t n = static_cast<uint32_t>(elements[i].size());
    const char len[4] = {static_cast<char>(n & 0xFF), static_cast<char>((n >> 8) & 0xFF),
                         static_cast<char>((n >> 16) & 0xFF), static_cast<char>(n >> 24)};
    out.append(len, 4);
    out.append(elements[i]);
  }
  return out;
}

int64_t CountPackedStrings(const char* data, size_t size, std::string* problem) {
  int64_t count = 0;
  for (size_t pos = 0; pos < size; ++count) {
    if (size - pos < 4) {
      *problem = StrCat("the data ends inside the length of element ", count);
      return -1;
    }
    const size_t n = LengthAt(data + pos);
    if (n > size - pos - 4) {
      *problem = StrCat("element ", count, " claims ", n, " bytes but ", size - pos - 4, " remain");
      return -1;
    }
    pos += 4 + n;
  }
  return count;
}

void UnpackStrings(const char* data, int64_t count, std::string* out) {
  size_t pos = 0;
  for (int64_t i = 0; i < count; ++i) {
    const size_t n = LengthAt(data + pos);
    out[i].assign(data + pos + 4, n);
    pos += 4 + n;
  }
}

}  // namespace oneflow
