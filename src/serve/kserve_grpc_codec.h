// ModelInfer messages of the KServe v2 gRPC protocol, decoded into engine tensors and encoded
// back. Pure functions of messages, so the fuzzer (tests/fuzz) drives them directly.
#pragma once

#include <string>

#include "grpc_service.pb.h"
#include "serve/inference.h"

namespace oneflow {
namespace serve {

// Inputs sent as raw_input_contents are borrowed, not copied: the tensors view `message`'s bytes,
// so `message` must outlive them. Typed `contents` are copied (checked against the datatype's
// range). Throws ServeError(kInvalidArgument) naming the problem.
InferRequest DecodeGrpcInferRequest(const inference::ModelInferRequest& message);

// Outputs go into raw_output_contents (one copy each, into the message).
void EncodeGrpcInferResponse(const std::string& model, int64_t version, const std::string& id,
                             const NamedTensors& outputs, inference::ModelInferResponse* response);

}  // namespace serve
}  // namespace oneflow
