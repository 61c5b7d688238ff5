// A served model's settings: Triton's config.pbtxt (model_config.proto) where the repository has
// one, completed from the model itself ("auto-complete"), validated against the model, and
// resolved into what the scheduler needs. docs/serving.md, "Model configuration".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/tensor.h"
#include "graph/graph.h"
#include "model_config.pb.h"

namespace oneflow {
namespace serve {

// Without a config, a model whose inputs and outputs all lead with a dynamic dimension is served
// with dynamic batching up to this size.
constexpr int kDefaultMaxBatchSize = 32;
// Requests waiting per model beyond this are refused (503); Triton's default is unbounded, which
// turns overload into unbounded latency and memory.
constexpr uint32_t kDefaultMaxQueueSize = 1024;

struct TensorSpec {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;  // without the batch dimension when max_batch_size > 0; -1 = any size
  bool optional = false;
};

// A warmup sample (config `model_warmup`), resolved: whole input tensors, the batch dimension
// included when the model batches.
struct WarmupSample {
  std::string name;
  int count = 1;  // runs per instance
  std::vector<std::pair<std::string, Tensor>> inputs;
};

struct ModelSettings {
  std::string name;
  int max_batch_size = 0;  // 0: the model takes whole tensors, no batch dimension is added
  std::vector<TensorSpec> inputs, outputs;

  bool dynamic_batching = false;
  std::vector<int> preferred_batch_sizes;  // ascending
  uint64_t max_queue_delay_us = 0;
  uint32_t max_queue_size = kDefaultMaxQueueSize;
  uint64_t default_timeout_us = 0;  // 0: none
  bool allow_timeout_override = true;

  int instance_count = 1;
  int intra_op_threads = 0;    // per instance; 0: the server's threads divided among the instances
  int optimization_level = 2;  // the session's (SessionOptions::optimization_level)
  // Sharded models (parameters "placement", "plan_mode"): run as global tensors over a placement
  // ("cpu:0-1") with a plan mode ("data", "auto", "manual"; default "auto"). Empty: a local model.
  std::string placement;
  std::string plan_mode = "auto";

  std::vector<WarmupSample> warmup;  // run on every instance before the model is READY

  std::map<std::string, std::string> parameters;  // config `parameters`, as given
  inference::ModelConfig resolved;                // the complete config, as GET .../config shows it

  const std::string& platform() const;  // the config's platform, else its backend (model metadata)
};

// Config dims as text, "[3,224,224]"; with `batched`, the batch dimension first: "[-1,3,224,224]".
std::string DimsToString(const std::vector<int64_t>& dims, bool batched = false);

// A config.pbtxt, parsed. Fields of Triton's schema we do not act on are ignored, each named in
// `warnings`; a syntax error or a wrong value type is an Error(kInvalidModel) naming file and line.
struct ModelConfigFile {
  bool present = false;
  inference::ModelConfig config;
  std::vector<std::string> warnings;
};
ModelConfigFile ReadModelConfig(const std::string& path);
ModelConfigFile ParseModelConfigText(const std::string& text, const std::string& label);

// The versions of `available` (ascending) that the config's version policy selects.
std::vector<int64_t> SelectVersions(const inference::ModelConfig& config, const std::vector<int64_t>& available);

// Completes `config` from the model and checks the two agree: names, data types and dims of the
// inputs and outputs, and that a batched model leads every input and output with a dynamic dim.
// A disagreement is Error(kInvalidModel) naming the tensor and both values. Warmup samples are
// built here (their input_data_file read from `model_dir`/warmup), each checked against the
// inputs: every required input given, data type, dims, batch size, file size. Without
// `model_dir` (a follower rank of a sharded model, which runs what rank 0 sends) they are not.
ModelSettings ResolveModelSettings(const inference::ModelConfig& config, bool config_present,
                                   const std::string& model_name, const Graph& model, const std::string& platform,
                                   const std::string& model_dir = "");

}  // namespace serve
}  // namespace oneflow
