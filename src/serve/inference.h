// One inference request as the scheduler sees it, decoded by a front end (HTTP or gRPC) into engine
// tensors, and its outcome.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/tensor.h"
#include "serve/status.h"

namespace oneflow {
namespace serve {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct InferRequest {
  std::string id;                    // echoed in the response
  NamedTensors inputs;               // shapes include the batch dimension when the model batches
  std::vector<std::string> outputs;  // requested outputs; empty: all, in the model's order
  uint64_t timeout_us = 0;           // 0: the model's default_timeout_microseconds (if any)
  // Set by the front end when the client goes away: a queued request is then dropped unrun.
  std::shared_ptr<std::atomic<bool>> cancelled;
  // For traces (base/trace.h): the front end ("http", "grpc"; "" in process) and when the request
  // arrived there (the epoch: when the scheduler queued it).
  const char* protocol = "";
  std::chrono::steady_clock::time_point received{};
};

struct InferOutcome {
  StatusCode code = StatusCode::kOk;
  std::string message;  // set when code != kOk
  NamedTensors outputs;
  int64_t version = 0;  // the model version that answered
};

// Called exactly once per accepted request, on a scheduler thread.
using InferCallback = std::function<void(InferOutcome)>;

using Clock = std::chrono::steady_clock;

}  // namespace serve
}  // namespace oneflow
