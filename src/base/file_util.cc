// Atomic file replacement: temp file in the target's directory, fsync, rename, fsync the directory.
#include "base/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"

namespace oneflow {
namespace {

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

class FdSink final : public FileSink {
 public:
  FdSink(int fd, const std::string& path) : fd_(fd), path_(path) {}
  void Write(const void* data, size_t size) override {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      OF_CHECK(n > 0, kRuntime, "writing '", path_, "' failed: ", std::strerror(errno));
      p += n;
      size -= static_cast<size_t>(n);
      written_ += static_cast<size_t>(n);
    }
  }
  size_t bytes_written() const override { return written_; }

 private:
  int fd_;
  const std::string& path_;
  size_t written_ = 0;
};

}  // namespace

void WriteFileAtomically(const std::string& path, const std::function<void(FileSink&)>& writer) {
  OF_REQUIRE(!path.empty(), "output path is empty");
  std::string tmpl = path + ".tmp-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  OF_CHECK(fd >= 0, kRuntime, "cannot create a temporary file next to '", path, "': ", std::strerror(errno));
  const std::string tmp(name.data());
  try {
    FdSink sink(fd, path);
    writer(sink);
    OF_CHECK(::fsync(fd) == 0, kRuntime, "fsync of '", tmp, "' failed: ", std::strerror(errno));
    // mkstemp creates 0600; a saved model should get the usual permissions (umask applies).
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    int rc = ::close(fd);
    fd = -1;
    OF_CHECK(rc == 0, kRuntime, "closing '", tmp, "' failed: ", std::strerror(errno));
    OF_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, kRuntime, "renaming '", tmp, "' to '", path,
             "' failed: ", std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable; failure here does not undo a completed write, so it is ignored.
  int dir = ::open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void WriteFileAtomically(const std::string& path, const void* data, size_t size) {
  WriteFileAtomically(path, [&](FileSink& sink) { sink.Write(data, size); });
}

}  // namespace oneflow
