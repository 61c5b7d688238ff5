// ONNX import: ModelProto (protobuf) -> Graph, with initializers and external data.
#pragma once

#include <cstddef>
#include <string>

#include "graph/graph.h"
#include "graph/tensor_type.h"

namespace oneflow {

// Loads an ONNX model file. External data files are resolved relative to the model's directory
// and refused when they would escape it.
Graph LoadOnnxFile(const std::string& path);

// Loads an ONNX model from memory. `external_data_dir` is where external data files live; when
// empty, a model that references external data is refused.
Graph LoadOnnxBytes(const void* data, size_t size, const std::string& external_data_dir = "");

// Decodes a serialized onnx.TensorProto (e.g. a test's input_0.pb). Its name goes to `out_name`
// when non-null. External data is refused.
Tensor LoadOnnxTensorBytes(const void* data, size_t size, std::string* out_name = nullptr);

// Decodes a value of static type `type`: an onnx.TensorProto for a tensor type, a SequenceProto for
// a sequence, an OptionalProto for an optional (an empty one is a none of the type's dtype). An
// empty sequence takes the type's dtype.
Tensor LoadOnnxValueBytes(const void* data, size_t size, const TensorType& type, std::string* out_name = nullptr);

}  // namespace oneflow
