// Format-neutral model loading and saving: the format is sniffed from the bytes (native magic or
// ONNX) on load and chosen by extension (or explicitly) on save.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "graph/graph.h"
#include "serialize/native_format.h"

namespace oneflow {

enum class ModelFormat { kAuto = 0, kOnnx = 1, kNative = 2 };
const char* ModelFormatName(ModelFormat f);

// By content: kNative for the native magic, kOnnx otherwise (ONNX protobufs have no magic; the
// ONNX parser then names what is wrong with bytes that are neither).
ModelFormat SniffModelFormat(const void* data, size_t size);
// By the first bytes of the file at `path` (kOnnx when it cannot be read: the loader reports why).
ModelFormat SniffFileFormat(const std::string& path);
// By file name: ".ofm" -> kNative, ".onnx" -> kOnnx; kAuto for anything else.
ModelFormat FormatFromExtension(const std::string& path);

struct ModelLoadOptions {
  NativeReadOptions native;
  // Return the graph prepared (graph/prepare.h: schemas resolved, defaults filled, shapes
  // inferred), failing on a model this build cannot run. Off only for tools that show or convert
  // a model as stored (`oneflow info`, `oneflow convert`).
  bool validate = true;
};

// Loads a model file of either format (sniffed from its first bytes, not its name), validated
// unless options.validate is off.
Graph LoadModelFile(const std::string& path, const ModelLoadOptions& options = {});
// Loads a model from memory, either format. With `borrow` (native models only), weights view
// `data` in place; the caller keeps it valid and unchanged for as long as the graph or anything
// made from it (sessions) lives. ONNX bytes are always parsed into copies.
Graph LoadModelMemory(const void* data, size_t size, const std::string& external_data_dir = "", bool borrow = false,
                      const ModelLoadOptions& options = {});

// Saves `g` as `format`; kAuto chooses by the path's extension and refuses unknown extensions.
void SaveModel(const Graph& g, const std::string& path, ModelFormat format = ModelFormat::kAuto,
               const NativeWriteOptions& native_options = {});

}  // namespace oneflow
