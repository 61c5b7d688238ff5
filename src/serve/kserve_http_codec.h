// The HTTP/REST body of KServe v2 (Open Inference Protocol) inference: JSON tensors and the binary
// tensor data extension (a JSON header of Inference-Header-Content-Length bytes followed by raw
// tensor bytes), decoded into engine tensors and encoded back. Pure functions of bytes, so the
// fuzzer (tests/fuzz) drives them directly. docs/serving.md, "HTTP".
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "serve/inference.h"

namespace oneflow {
namespace serve {

struct HttpInferRequest {
  InferRequest request;
  std::vector<bool> binary_output;  // per entry of request.outputs (or, when empty, for all)
  bool binary_all_outputs = false;  // the request's `binary_data_output` parameter
};

// `header_length`: the Inference-Header-Content-Length header's value, when present. Throws
// ServeError(kInvalidArgument) naming the problem: malformed JSON, a wrong header length, an
// unknown datatype, a shape whose element count the data does not match, binary data that runs
// past the body or is left over, values out of the datatype's range.
HttpInferRequest DecodeHttpInferRequest(const char* body, size_t size, std::optional<size_t> header_length);

struct HttpBody {
  std::string bytes;
  std::optional<size_t> header_length;  // set when binary tensor data follows the JSON
};

// The response for `outcome` (code kOk) of a request decoded as `decoded`.
HttpBody EncodeHttpInferResponse(const std::string& model, int64_t version, const HttpInferRequest& decoded,
                                 const NamedTensors& outputs);

// {"error": message}
std::string ErrorJson(const std::string& message);

}  // namespace serve
}  // namespace oneflow
