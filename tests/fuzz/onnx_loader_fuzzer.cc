// libFuzzer target: arbitrary bytes through the ONNX loader, graph validation and session creation.
// A oneflow::Error is the expected answer to bad input; any other exception, a crash or a sanitizer
// report is a finding.
#include <cstddef>
#include <cstdint>

#include "engine/session.h"
#include "serialize/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    oneflow::Graph g = oneflow::LoadOnnxBytes(data, size);
    oneflow::PrepareGraph(g);
    oneflow::SessionOptions options;
    options.intra_op_threads = 1;  // no worker threads per input: keeps executions fast
    oneflow::Session session(g, options);
  } catch (const oneflow::Error&) {
    // Rejected with a proper error: fine.
  }
  return 0;
}
