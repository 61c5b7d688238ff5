// Pages of private file mappings that a process can give back. The native loader maps model files
// privately (copy-on-write) and registers each mapping here; a clean page of such a mapping can be
// dropped from the process (madvise MADV_DONTNEED) and is read again from the file (the page
// cache, shared by every process that maps it) on its next access. Ranks of a sharded model use
// this to keep only their own slices of the weights resident (shard-on-read).
#pragma once

#include <cstddef>

namespace oneflow {

void RegisterFileMapping(const void* addr, size_t bytes);
void UnregisterFileMapping(const void* addr);

// Drops the pages wholly inside [data, data + bytes) when that range lies in a registered file
// mapping; returns the bytes dropped (0 for memory of any other kind, which is never touched).
// Only for ranges nothing has written to: a written (copied-on-write) page would read the file's
// bytes again afterwards. No kernel writes a constant in place today (the mapping is writable only
// so that one that did would get a private copy instead of a crash).
size_t ReleaseFilePages(const void* data, size_t bytes);

}  // namespace oneflow
