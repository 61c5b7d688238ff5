// Internal error type: engine code throws oneflow::Error; the C ABI guard turns it into a status.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace oneflow {

// Mirrors oneflow_code_t in include/oneflow_c.h (values must stay equal; checked in c_api.cc).
enum class ErrorCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // a caller-supplied value is wrong (null, shape, dtype, name)
  kNotFound = 2,         // a named input/output/file does not exist
  kInvalidModel = 3,     // a model file or graph is malformed
  kUnsupported = 4,      // an op, opset, dtype or attribute value we do not implement
  kOutOfMemory = 5,
  kIo = 6,               // a file could not be read or written
  kRuntime = 7,          // a kernel failed at run time (e.g. index out of range in data)
  kInternal = 8,         // a bug in the engine
};

const char* ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message)
      : std::runtime_error(std::move(message)), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// Concatenates anything streamable: StrCat("axis ", 3, " out of range").
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
[[noreturn]] void Fail(ErrorCode code, const Args&... args) {
  throw Error(code, StrCat(args...));
}

}  // namespace oneflow

// OF_CHECK(cond, code, message parts...): throws Error(code, message) when cond is false.
#define OF_CHECK(cond, code, ...)                                     \
  do {                                                                \
    if (!(cond)) ::oneflow::Fail(::oneflow::ErrorCode::code, __VA_ARGS__); \
  } while (0)

// Argument validation shorthand.
#define OF_REQUIRE(cond, ...) OF_CHECK(cond, kInvalidArgument, __VA_ARGS__)
// Engine invariants: a failure here is our bug, reported as kInternal rather than aborting.
#define OF_ASSERT(cond) OF_CHECK(cond, kInternal, "internal check failed: " #cond " at ", __FILE__, ":", __LINE__)
