// libFuzzer target: arbitrary bytes through the inference server's request decoders, the ones a
// network client reaches before any model runs (src/serve/kserve_http_codec.h, kserve_grpc_codec.h).
// The first byte picks the decoder:
//   0: an HTTP infer body, all JSON (no Inference-Header-Content-Length)
//   1: an HTTP infer body whose next 4 bytes (little-endian) are the header length
//   2: a gRPC ModelInferRequest (protobuf wire format)
// A decoded request is encoded back as a response, HTTP and gRPC. A ServeError is the expected
// answer to bad input; any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <google/protobuf/stubs/logging.h>

#include "serve/kserve_grpc_codec.h"
#include "serve/kserve_http_codec.h"

// Protobuf logs every invalid UTF-8 string it parses (the message is then rejected anyway).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oneflow::serve;
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 3;
  const char* body = reinterpret_cast<const char*>(data + 1);
  size_t body_size = size - 1;
  try {
    if (mode == 2) {
      inference::ModelInferRequest message;
      if (!message.ParseFromArray(body, static_cast<int>(body_size))) return 0;
      InferRequest request = DecodeGrpcInferRequest(message);
      inference::ModelInferResponse response;
      EncodeGrpcInferResponse("m", 1, request.id, request.inputs, &response);
      return 0;
    }
    std::optional<size_t> header_length;
    if (mode == 1) {
      if (body_size < 4) return 0;
      uint32_t n;
      std::memcpy(&n, body, 4);
      header_length = n;
      body += 4;
      body_size -= 4;
    }
    HttpInferRequest decoded = DecodeHttpInferRequest(body, body_size, header_length);
    // Echo the inputs as outputs through the response encoder, JSON and binary.
    NamedTensors outputs = decoded.request.inputs;
    decoded.request.outputs.clear();
    EncodeHttpInferResponse("m", 1, decoded, outputs);
    decoded.binary_all_outputs = true;
    EncodeHttpInferResponse("m", 1, decoded, outputs);
  } catch (const ServeError&) {
    // Refused with a status and a message: the expected answer.
  }
  return 0;
}
