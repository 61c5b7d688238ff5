// Checksums of the native format: XXH64 (our implementation of the public xxHash spec) and the
// chunked variant that lets large weight segments be verified on several threads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oneflow {

// XXH64 of `size` bytes with `seed`.
uint64_t Xxh64(const void* data, size_t size, uint64_t seed = 0);

// The native format's segment checksum: XXH64 (seed 0) of the little-endian XXH64 (seed 0)
// digests of consecutive `chunk_bytes` chunks (the last one may be shorter; no chunk for 0 bytes).
// Chunks are hashed on up to `max_threads` threads (0: one per core) when there are several.
uint64_t ChunkedXxh64(const void* data, size_t size, uint64_t chunk_bytes, int max_threads = 0);

// The chunk size the writer uses: 4 MiB, large enough that the per-chunk digests cost nothing.
constexpr uint64_t kChecksumChunkBytes = 4u << 20;

}  // namespace oneflow
