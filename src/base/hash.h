// Small non-cryptographic hashes shared across modules.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oneflow {

// FNV-1a over bytes, continuing from `seed` (the offset basis for a fresh hash): structural graph
// hashes compared across ranks (plan/graph_hash.cc) and checks that ranks hold the same weights.
inline uint64_t Fnv1a(const void* data, size_t bytes, uint64_t seed = 0xcbf29ce484222325ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) seed = (seed ^ p[i]) * 0x100000001b3ull;
  return seed;
}

}  // namespace oneflow
