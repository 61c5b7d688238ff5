// ONNX export: Graph -> ModelProto, in memory or to a file (weights inline or as external data).
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace oneflow {

// Protobuf refuses messages of 2 GB or more; a model whose tensors approach that needs external data.
constexpr uint64_t kOnnxProtoLimitBytes = (uint64_t{1} << 31) - 1;

struct OnnxExportOptions {
  enum class ExternalData {
    kAuto,    // external when the initializers total more than `external_threshold_bytes`
    kAlways,  // every initializer of at least `min_external_tensor_bytes` goes to the data file
    kNever,   // everything inline; fails past protobuf's 2 GB limit
  };
  ExternalData external_data = ExternalData::kAuto;
  uint64_t external_threshold_bytes = uint64_t{1} << 30;
  // Smaller initializers stay inline even in an external-data export (as onnx's own writer does).
  uint64_t min_external_tensor_bytes = 1024;
  // The data file's name, relative to the model's directory. Empty (the default): a fresh name
  // "<model file name>.<8 hex digits>.data" per save, so the previous model's data file is never
  // overwritten and a crash at any point leaves either the old pair or the new pair intact; the old
  // data file is removed once the new model is in place. A fixed name is written atomically too, but
  // a crash between the two renames would pair the old model with the new data.
  std::string data_file;
};

// The graph as a serialized ModelProto, all tensors inline. Throws kInvalidArgument when the tensors
// exceed protobuf's 2 GB limit (SaveOnnxModel writes such models with external data), and
// kInvalidArgument naming the op when the graph holds internal `ai.oneflow` ops (an optimized graph;
// exports are of model graphs).
std::string SerializeOnnxModel(const Graph& g);

// Writes the graph to `path` atomically (temporary file, fsync, rename): a failed save leaves an
// existing file untouched. External data per `options`; its file sits next to the model and is also
// written atomically, before the model that references it.
void SaveOnnxModel(const Graph& g, const std::string& path, const OnnxExportOptions& options = {});

}  // namespace oneflow
