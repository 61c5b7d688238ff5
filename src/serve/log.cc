#include "serve/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace oneflow {
namespace serve {

void LogLine(const std::string& line) {
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  // One fprintf per line: stdio locks the stream for the call, so lines never interleave.
  std::fprintf(stderr, "%s.%03dZ oneflow-serve: %s\n", stamp, static_cast<int>(millis), line.c_str());
}

}  // namespace serve
}  // namespace oneflow
