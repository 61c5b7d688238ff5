// A small reader/writer for NumPy's .npy format (versions 1.0, 2.0 and 3.0; C order; little-endian).
#pragma once

#include <cstddef>
#include <string>

#include "base/tensor.h"

namespace oneflow {
namespace npy {

// Parses .npy bytes. `what` names the source in error messages (e.g. the file name). Throws
// Error(kInvalidArgument) for malformed headers, unsupported dtypes (big-endian, bfloat16,
// strings, structured types), fortran_order=True and truncated data.
Tensor Parse(const void* data, size_t size, const std::string& what);

// Reads a .npy file; kNotFound when it does not exist, kIo when it cannot be read.
Tensor ReadFile(const std::string& path);

// Serializes a tensor as .npy (version 1.0, or 2.0 when the header would not fit). Throws
// kUnsupported for dtypes .npy cannot express (bfloat16).
std::string Serialize(const Tensor& t);

// Writes a tensor to a .npy file; kIo on failure.
void WriteFile(const std::string& path, const Tensor& t);

// The .npy descr for a dtype ("<f4", "|u1", ...); throws kUnsupported when there is none.
std::string DescrOf(DType dtype);

}  // namespace npy
}  // namespace oneflow
