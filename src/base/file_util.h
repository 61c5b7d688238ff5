// Crash-safe file writes: a file either keeps its old contents or has the complete new ones.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace oneflow {

// Sink handed to a writer callback; Write throws kRuntime (with the path and errno text) on failure.
class FileSink {
 public:
  virtual ~FileSink() = default;
  virtual void Write(const void* data, size_t size) = 0;
  virtual size_t bytes_written() const = 0;
};

// Writes `path` atomically: `writer` fills a temporary file in the same directory, which is then
// flushed, fsync'ed and renamed over `path` (and the directory fsync'ed). If `writer` or any step
// throws, the temporary file is removed, `path` is untouched and the error propagates.
void WriteFileAtomically(const std::string& path, const std::function<void(FileSink&)>& writer);

// Convenience for in-memory contents.
void WriteFileAtomically(const std::string& path, const void* data, size_t size);

}  // namespace oneflow
