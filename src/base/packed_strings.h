// String tensors as one byte run: each element a 4-byte little-endian length followed by its bytes.
// It is the layout of Triton's BYTES wire format (KServe binary data, gRPC raw contents), so the server
// speaks it, and the native .ofm format stores string segments the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace oneflow {

// The `count` strings at `elements` packed; elements over 4 GiB are refused (kUnsupported).
std::string PackStrings(const std::string* elements, int64_t count);
// How many elements [data, data + size) packs; -1 when it is malformed (a length that runs past the
// end, or a truncated length), with `problem` saying where.
int64_t CountPackedStrings(const char* data, size_t size, std::string* problem);
// Unpacks the first `count` elements (CountPackedStrings has vouched for them) into `out`.
void UnpackStrings(const char* data, int64_t count, std::string* out);

}  // namespace oneflow
