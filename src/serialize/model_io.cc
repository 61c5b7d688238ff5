// Format sniffing and save dispatch between the ONNX and native serializers.
#include "serialize/model_io.h"

#include <cctype>
#include <cstring>
#include <fstream>

#include "graph/prepare.h"
#include "serialize/onnx_export.h"
#include "serialize/onnx_import.h"

namespace oneflow {

const char* ModelFormatName(ModelFormat f) {
  switch (f) {
    case ModelFormat::kOnnx: return "onnx";
    case ModelFormat::kNative: return "native";
    case ModelFormat::kAuto: break;
  }
  return "auto";
}

ModelFormat SniffModelFormat(const void* data, size_t size) {
  return IsNativeFormat(data, size) ? ModelFormat::kNative : ModelFormat::kOnnx;
}

ModelFormat FormatFromExtension(const std::string& path) {
  auto ends_with = [&](const char* ext) {
    size_t n = std::strlen(ext);
    if (path.size() < n) return false;
    for (size_t i = 0; i < n; ++i)
      if (std::tolower(static_cast<unsigned char>(path[path.size() - n + i])) != ext[i]) return false;
    return true;
  };
  if (ends_with(".ofm")) return ModelFormat::kNative;
  if (ends_with(".onnx")) return ModelFormat::kOnnx;
  return ModelFormat::kAuto;
}

ModelFormat SniffFileFormat(const std::string& path) {
  char magic[8] = {};
  std::ifstream in(path, std::ios::binary);
  if (in.good()) in.read(magic, sizeof(magic));
  const size_t got = in.good() || in.eof() ? static_cast<size_t>(in.gcount()) : 0;
  return SniffModelFormat(magic, got);
}

static Graph Validated(Graph g, const ModelLoadOptions& options) {
  if (options.validate) PrepareGraph(g);
  return g;
}

Graph LoadModelFile(const std::string& path, const ModelLoadOptions& options) {
  // Missing files, directories and unreadable paths get their errors from the loaders below.
  if (SniffFileFormat(path) == ModelFormat::kNative) return Validated(ReadNativeModel(path, options.native), options);
  return Validated(LoadOnnxFile(path), options);
}

Graph LoadModelMemory(const void* data, size_t size, const std::string& external_data_dir, bool borrow,
                      const ModelLoadOptions& options) {
  OF_REQUIRE(data != nullptr || size == 0, "model data is null");
  if (SniffModelFormat(data, size) == ModelFormat::kNative) {
    std::function<void()> release;
    if (borrow) release = [] {};  // the caller owns the bytes and promised they outlive the graph
    return Validated(ReadNativeModelMemory(data, size, options.native, std::move(release), external_data_dir), options);
  }
  return Validated(LoadOnnxBytes(data, size, external_data_dir), options);
}

void SaveModel(const Graph& g, const std::string& path, ModelFormat format, const NativeWriteOptions& native_options) {
  if (format == ModelFormat::kAuto) {
    format = FormatFromExtension(path);
    OF_REQUIRE(format != ModelFormat::kAuto, "cannot tell the format of '", path,
               "' from its extension (use .ofm for native, .onnx for ONNX, or choose the format explicitly)");
  }
  switch (format) {
    case ModelFormat::kNative: WriteNativeModel(g, path, native_options); return;
    case ModelFormat::kOnnx: SaveOnnxModel(g, path); return;
    case ModelFormat::kAuto: break;
  }
  Fail(ErrorCode::kInvalidArgument, "unknown model format ", static_cast<int>(format));
}

}  // namespace oneflow
