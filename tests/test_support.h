// Small helpers the C++ tests share: the error a call throws, and a file's bytes.
#pragma once

#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "base/error.h"

namespace oneflow::test_util {

// The code of the oneflow::Error that `f` throws, kOk when it returns; the error's message goes to
// `*message` when given.
inline ErrorCode ErrorCodeOf(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return ErrorCode::kOk;
}

// Every byte of the file at `path` (empty when it cannot be read).
inline std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace oneflow::test_util
