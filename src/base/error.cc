// Names of internal error codes, used in messages and by the CLI.
#include "base/error.h"

namespace oneflow {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "OK";
    case ErrorCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound: return "NOT_FOUND";
    case ErrorCode::kInvalidModel: return "INVALID_MODEL";
    case ErrorCode::kUnsupported: return "UNSUPPORTED";
    case ErrorCode::kOutOfMemory: return "OUT_OF_MEMORY";
    case ErrorCode::kIo: return "IO";
    case ErrorCode::kRuntime: return "RUNTIME";
    case ErrorCode::kInternal: return "INTERNAL";
  }
  return "UNKNOWN";
}

}  // namespace oneflow
