// libFuzzer target: arbitrary bytes through the native (.ofm) loader, graph validation and session
// creation. A oneflow::Error is the expected answer to bad input; any other exception, a crash or a
// sanitizer report is a finding.
//
// Random mutations almost never survive the header and flatbuffer checksums, which would stop
// the fuzzer at the first check. So each input is also tried "repaired": its header and flatbuffer
// checksums (and file size) recomputed, which lets mutations reach the flatbuffers Verifier and
// every semantic check behind it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/session.h"
#include "serialize/native_format.h"
#include "serialize/native_layout.h"

namespace {

void LoadAndCreate(const std::string& bytes, bool verify_checksums) {
  try {
    oneflow::NativeReadOptions options;
    options.verify_checksums = verify_checksums;
    oneflow::Graph g = oneflow::ReadNativeModelMemory(bytes.data(), bytes.size(), options);
    oneflow::PrepareGraph(g);
    oneflow::SessionOptions session_options;
    session_options.intra_op_threads = 1;  // no worker threads per input: keeps executions fast
    oneflow::Session session(g, session_options);
  } catch (const oneflow::Error&) {
    // Rejected with a proper error: fine.
  }
}

std::string Repaired(std::string bytes) {
  using namespace oneflow;
  if (bytes.size() < kNativeHeaderBytes || !IsNativeFormat(bytes.data(), bytes.size())) return bytes;
  auto* h = reinterpret_cast<unsigned char*>(bytes.data());
  native::Put64(h + 32, bytes.size());
  const uint64_t fb_size = native::Get64(h + 24);
  if (fb_size <= bytes.size() - kNativeHeaderBytes) native::Put64(h + 40, Xxh64(h + kNativeHeaderBytes, fb_size));
  native::Put64(h + 56, Xxh64(h, 56));
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  LoadAndCreate(bytes, true);
  // The first byte picks whether segment checksums are trusted, so both paths are covered.
  LoadAndCreate(Repaired(bytes), size > 0 && (data[size - 1] & 1));
  return 0;
}
