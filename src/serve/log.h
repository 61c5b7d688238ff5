// The server's log: one line per event on stderr, with a UTC timestamp, written whole even when
// several threads log at once.
#pragma once

#include <string>

#include "base/error.h"

namespace oneflow {
namespace serve {

void LogLine(const std::string& line);

template <typename... Args>
void Log(const Args&... args) {
  LogLine(StrCat(args...));
}

}  // namespace serve
}  // namespace oneflow
