#include "base/file_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace oneflow {
namespace {

std::mutex g_mutex;
std::map<uintptr_t, size_t>& Mappings() {  // start -> length
  static auto* m = new std::map<uintptr_t, size_t>;  // outlives every static that maps a file
  return *m;
}

}  // namespace

void RegisterFileMapping(const void* addr, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Mappings()[reinterpret_cast<uintptr_t>(addr)] = bytes;
}

void UnregisterFileMapping(const void* addr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Mappings().erase(reinterpret_cast<uintptr_t>(addr));
}

size_t ReleaseFilePages(const void* data, size_t bytes) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data), end = begin + bytes;
  // Held across madvise: the mapping cannot be unmapped (and its addresses reused by another,
  // whose pages this would zero) in between.
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = Mappings().upper_bound(begin);
  if (it == Mappings().begin()) return 0;
  --it;
  if (end > it->first + it->second) return 0;  // not inside one mapping
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last <= first) return 0;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

}  // namespace oneflow
