// What a request's failure means to a client: a code the HTTP and gRPC front ends map to their own
// status (docs/serving.md, "Errors"), and a message naming the problem.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "base/error.h"

namespace oneflow {
namespace serve {

enum class StatusCode {
  kOk,
  kInvalidArgument,   // a malformed request or one that does not fit the model: HTTP 400
  kNotFound,          // unknown model, version, endpoint: 404
  kUnavailable,       // model not ready, queue full, server stopping: 503
  kDeadlineExceeded,  // the request's timeout passed before it ran: 504 (gRPC DEADLINE_EXCEEDED)
  kCancelled,         // the client went away
  kTooLarge,          // a body over the configured limit: 413
  kInternal,          // the engine failed running a valid request: 500
};

int HttpStatusOf(StatusCode code);
const char* StatusCodeName(StatusCode code);

// Thrown inside the server and turned into a reply by the front end.
class ServeError : public std::runtime_error {
 public:
  ServeError(StatusCode code, std::string message) : std::runtime_error(std::move(message)), code_(code) {}
  StatusCode code() const { return code_; }

 private:
  StatusCode code_;
};

template <typename... Args>
[[noreturn]] void Refuse(StatusCode code, const Args&... args) {
  throw ServeError(code, StrCat(args...));
}

// An engine error while running a request: the caller's mistake (bad shape, dtype) or ours.
StatusCode StatusOfEngineError(ErrorCode code);

}  // namespace serve
}  // namespace oneflow
