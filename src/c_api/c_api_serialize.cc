// C ABI, serialization area: saving graphs (native or ONNX by extension), load options (checksum
// verification, zero-copy memory loads) and format sniffing.
#include <cstring>

#include "c_api/c_api_internal.h"
#include "oneflow_c.h"
#include "serialize/model_io.h"

using namespace oneflow::capi;

static_assert(static_cast<int>(ModelFormat::kOnnx) == ONEFLOW_FORMAT_ONNX, "formats must match the ABI");
static_assert(static_cast<int>(ModelFormat::kNative) == ONEFLOW_FORMAT_NATIVE, "formats must match the ABI");

namespace {

ModelLoadOptions ToLoadOptions(const oneflow_load_options_t* o) {
  ModelLoadOptions out;
  if (!o) return out;
  CheckSizedInput(o, "load options", "oneflow_load_options_init");
  out.native.verify_checksums = o->verify_checksums != 0;
  return out;
}

}  // namespace

oneflow_model_format_t oneflow_model_format_of(const void* data, size_t size) {
  return data && SniffModelFormat(data, size) == ModelFormat::kNative ? ONEFLOW_FORMAT_NATIVE : ONEFLOW_FORMAT_ONNX;
}

oneflow_status_t oneflow_save_options_init_sized(oneflow_save_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_save_options_t", [](oneflow_save_options_t& o) {
    o.format = ONEFLOW_FORMAT_AUTO;
    o.checksums = 1;
  });
}

oneflow_status_t oneflow_graph_save(const oneflow_graph_t* graph, const char* path,
                                    const oneflow_save_options_t* options) {
  return Guard([&] {
    OF_REQUIRE(graph != nullptr, "graph is NULL");
    OF_REQUIRE(path != nullptr, "path is NULL");
    ModelFormat format = ModelFormat::kAuto;
    NativeWriteOptions native;
    if (options) {
      CheckSizedInput(options, "save options", "oneflow_save_options_init");
      const int32_t raw = RawEnum(options->format);  // never loaded as the enum before it is checked
      OF_REQUIRE(raw >= ONEFLOW_FORMAT_AUTO && raw <= ONEFLOW_FORMAT_NATIVE, "options.format: unknown model format ",
                 raw);
      format = static_cast<ModelFormat>(raw);
      if (options->external_data_file) native.external_data_file = options->external_data_file;
      native.checksums = options->checksums != 0;
    }
    SaveModel(*graph->graph, path, format, native);
  });
}

oneflow_status_t oneflow_load_options_init_sized(oneflow_load_options_t* options, size_t struct_size) {
  return InitSizedStruct(options, struct_size, "oneflow_load_options_t", [](oneflow_load_options_t& o) {
    o.verify_checksums = 1;
  });
}

oneflow_status_t oneflow_graph_load_file_ex(const char* path, const oneflow_load_options_t* options,
                                            oneflow_graph_t** out_graph) {
  return Guard([&] {
    OF_REQUIRE(path != nullptr, "path is NULL");
    OF_REQUIRE(out_graph != nullptr, "out_graph is NULL");
    *out_graph = WrapGraph(LoadModelFile(path, ToLoadOptions(options)));
  });
}

oneflow_status_t oneflow_graph_load_memory_ex(const void* data, size_t size, const oneflow_load_options_t* options,
                                              oneflow_graph_t** out_graph) {
  return Guard([&] {
    OF_REQUIRE(data != nullptr, "data is NULL");
    OF_REQUIRE(out_graph != nullptr, "out_graph is NULL");
    ModelLoadOptions o = ToLoadOptions(options);
    const bool borrow = options && options->borrow_memory != 0;
    const std::string dir = options && options->external_data_dir ? options->external_data_dir : "";
    *out_graph = WrapGraph(LoadModelMemory(data, size, dir, borrow, o));
  });
}
