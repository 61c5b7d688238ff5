// XXH64 written from the public xxHash specification (doc/xxhash_spec.md of the xxHash project),
// plus the chunked, multi-threaded segment checksum built on it.
#include "serialize/checksum.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace oneflow {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kP3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
// Unaligned little-endian loads (the format is little-endian; so are the hosts we build for).
inline uint64_t Load64(const unsigned char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }
inline uint32_t Load32(const unsigned char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }

inline uint64_t Round(uint64_t acc, uint64_t input) {
  acc += input * kP2;
  acc = Rotl(acc, 31);
  return acc * kP1;
}
inline uint64_t MergeRound(uint64_t acc, uint64_t val) {
  acc ^= Round(0, val);
  return acc * kP1 + kP4;
}

}  // namespace

uint64_t Xxh64(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* end = p + size;
  uint64_t h;
  if (size >= 32) {
    uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
    const unsigned char* limit = end - 32;
    do {
      v1 = Round(v1, Load64(p));
      v2 = Round(v2, Load64(p + 8));
      v3 = Round(v3, Load64(p + 16));
      v4 = Round(v4, Load64(p + 24));
      p += 32;
    } while (p <= limit);
    h = Rotl(v1, 1) + Rotl(v2, 7) + Rotl(v3, 12) + Rotl(v4, 18);
    h = MergeRound(h, v1);
    h = MergeRound(h, v2);
    h = MergeRound(h, v3);
    h = MergeRound(h, v4);
  } else {
    h = seed + kP5;
  }
  h += static_cast<uint64_t>(size);
  while (p + 8 <= end) {
    h ^= Round(0, Load64(p));
    h = Rotl(h, 27) * kP1 + kP4;
    p += 8;
  }
  if (p + 4 <= end) {
    h ^= static_cast<uint64_t>(Load32(p)) * kP1;
    h = Rotl(h, 23) * kP2 + kP3;
    p += 4;
  }
  while (p < end) {
    h ^= static_cast<uint64_t>(*p) * kP5;
    h = Rotl(h, 11) * kP1;
    ++p;
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

uint64_t ChunkedXxh64(const void* data, size_t size, uint64_t chunk_bytes, int max_threads) {
  const auto* base = static_cast<const unsigned char*>(data);
  if (chunk_bytes == 0) chunk_bytes = size ? size : 1;
  const size_t chunks = size == 0 ? 0 : static_cast<size_t>((size - 1) / chunk_bytes + 1);
  std::vector<uint64_t> digests(chunks);
  auto hash_chunk = [&](size_t c) {
    size_t begin = static_cast<size_t>(c * chunk_bytes);
    size_t len = static_cast<size_t>(std::min<uint64_t>(chunk_bytes, size - begin));
    digests[c] = Xxh64(base + begin, len, 0);
  };
  int threads = max_threads > 0 ? max_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), chunks));
  if (threads <= 1) {
    for (size_t c = 0; c < chunks; ++c) hash_chunk(c);
  } else {
    // Threads claim chunks from a shared counter; hashing runs at memory speed, so a few threads
    // saturate it and the spawn cost (tens of microseconds) is small next to 2+ chunks of 4 MiB.
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t c; (c = next.fetch_add(1)) < chunks;) hash_chunk(c);
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
  }
  // Digests are hashed as little-endian bytes (the in-memory layout on little-endian hosts).
  return Xxh64(digests.data(), digests.size() * sizeof(uint64_t), 0);
}

}  // namespace oneflow
