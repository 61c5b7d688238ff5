#include "serve/kserve_grpc_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include "serve/datatype.h"

namespace oneflow {
namespace serve {
namespace {

Shape ShapeOf(const inference::ModelInferRequest::InferInputTensor& in) {
  if (in.shape_size() > 16) Refuse(StatusCode::kInvalidArgument, "input '", in.name(), "' has rank ", in.shape_size(), " (at most 16)");
  Shape s(in.shape().begin(), in.shape().end());
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) Refuse(StatusCode::kInvalidArgument, "input '", in.name(), "' has a negative dimension in shape ", ShapeToString(s));
    if (d != 0 && n > (int64_t{1} << 40) / d)
      Refuse(StatusCode::kInvalidArgument, "input '", in.name(), "' has shape ", ShapeToString(s), ", too many elements");
    n *= d;
  }
  return s;
}

// Copies a typed repeated field into `t`, refusing a wrong count or values out of T's range.
template <typename T, typename Field>
void CopyContents(const Field& field, const char* field_name, const std::string& name, Tensor& t) {
  if (field.size() != t.numel())
    Refuse(StatusCode::kInvalidArgument, "input '", name, "' has ", field.size(), " values in contents.", field_name,
           " but shape ", ShapeToString(t.shape()), " holds ", t.numel());
  T* out = t.data<T>();
  for (int i = 0; i < field.size(); ++i) {
    auto v = field.Get(i);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> && sizeof(T) < sizeof(v)) {
      if (v < static_cast<decltype(v)>(std::numeric_limits<T>::min()) ||
          v > static_cast<decltype(v)>(std::numeric_limits<T>::max()))
        Refuse(StatusCode::kInvalidArgument, "input '", name, "' element ", i, ": ", v, " is out of the datatype's range");
    }
    out[i] = static_cast<T>(v);
  }
}

// How many values the contents field that `dtype` uses holds (-1: no typed field for it).
int64_t TypedCount(const inference::InferTensorContents& c, DType dtype) {
  switch (dtype) {
    case DType::kBool: return c.bool_contents_size();
    case DType::kInt8: case DType::kInt16: case DType::kInt32: return c.int_contents_size();
    case DType::kInt64: return c.int64_contents_size();
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: return c.uint_contents_size();
    case DType::kUInt64: return c.uint64_contents_size();
    case DType::kFloat32: return c.fp32_contents_size();
    case DType::kFloat64: return c.fp64_contents_size();
    case DType::kString: return c.bytes_contents_size();
    default: return -1;
  }
}

void CopyTypedContents(const inference::InferTensorContents& c, const std::string& name, Tensor& t) {
  switch (t.dtype()) {
    case DType::kBool: return CopyContents<bool>(c.bool_contents(), "bool_contents", name, t);
    case DType::kInt8: return CopyContents<int8_t>(c.int_contents(), "int_contents", name, t);
    case DType::kInt16: return CopyContents<int16_t>(c.int_contents(), "int_contents", name, t);
    case DType::kInt32: return CopyContents<int32_t>(c.int_contents(), "int_contents", name, t);
    case DType::kInt64: return CopyContents<int64_t>(c.int64_contents(), "int64_contents", name, t);
    case DType::kUInt8: return CopyContents<uint8_t>(c.uint_contents(), "uint_contents", name, t);
    case DType::kUInt16: return CopyContents<uint16_t>(c.uint_contents(), "uint_contents", name, t);
    case DType::kUInt32: return CopyContents<uint32_t>(c.uint_contents(), "uint_contents", name, t);
    case DType::kUInt64: return CopyContents<uint64_t>(c.uint64_contents(), "uint64_contents", name, t);
    case DType::kFloat32: return CopyContents<float>(c.fp32_contents(), "fp32_contents", name, t);
    case DType::kFloat64: return CopyContents<double>(c.fp64_contents(), "fp64_contents", name, t);
    case DType::kString:
      std::copy(c.bytes_contents().begin(), c.bytes_contents().end(), t.strings());
      return;
    default:
      Refuse(StatusCode::kInvalidArgument, "input '", name, "': datatype ", ProtocolDatatypeName(t.dtype()),
             " has no typed contents field; send it in raw_input_contents");
  }
}

}  // namespace

InferRequest DecodeGrpcInferRequest(const inference::ModelInferRequest& message) {
  InferRequest req;
  req.id = message.id();
  auto timeout = message.parameters().find("timeout");
  if (timeout != message.parameters().end()) {
    const inference::InferParameter& p = timeout->second;
    if (p.parameter_choice_case() == inference::InferParameter::kInt64Param && p.int64_param() >= 0)
      req.timeout_us = static_cast<uint64_t>(p.int64_param());
    else if (p.parameter_choice_case() == inference::InferParameter::kUint64Param)
      req.timeout_us = p.uint64_param();
    else
      Refuse(StatusCode::kInvalidArgument, "request parameter 'timeout' must be a non-negative integer (microseconds)");
  }
  const bool raw = message.raw_input_contents_size() > 0;
  if (raw && message.raw_input_contents_size() != message.inputs_size())
    Refuse(StatusCode::kInvalidArgument, "the request has ", message.inputs_size(), " inputs but ",
           message.raw_input_contents_size(), " raw_input_contents (one per input, or none)");
  for (int i = 0; i < message.inputs_size(); ++i) {
    const auto& in = message.inputs(i);
    DType dtype = DTypeFromProtocolName(in.datatype());
    if (dtype == DType::kUndefined)
      Refuse(StatusCode::kInvalidArgument, "input '", in.name(), "' has unknown datatype '", in.datatype(), "'");
    Shape shape = ShapeOf(in);
    if (raw) {
      if (in.has_contents())
        Refuse(StatusCode::kInvalidArgument, "input '", in.name(), "' has contents although the request uses raw_input_contents");
      const std::string& bytes = message.raw_input_contents(i);
      if (dtype == DType::kString) {
        req.inputs.emplace_back(in.name(), DeserializeBytesTensor(bytes.data(), bytes.size(), shape,
                                                                  "input '" + in.name() + "'"));
        continue;
      }
      size_t needed = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
      if (bytes.size() != needed)
        Refuse(StatusCode::kInvalidArgument, "input '", in.name(), "': raw_input_contents holds ", bytes.size(),
               " bytes but shape ", ShapeToString(shape), " of ", in.datatype(), " takes ", needed);
      void* data = const_cast<char*>(bytes.data());
      req.inputs.emplace_back(in.name(), Tensor(dtype, shape, Storage::Borrow(data, bytes.size())));
    } else {
      if (!in.has_contents()) Refuse(StatusCode::kInvalidArgument, "input '", in.name(), "' has no data");
      // Counted before allocating: a shape may claim terabytes, the message cannot.
      int64_t sent = TypedCount(in.contents(), dtype);
      if (sent >= 0 && sent != NumElements(shape))
        Refuse(StatusCode::kInvalidArgument, "input '", in.name(), "' has ", sent, " values in its contents but shape ",
               ShapeToString(shape), " holds ", NumElements(shape));
      Tensor t = Tensor::Uninitialized(dtype, sent >= 0 ? shape : Shape{0});
      CopyTypedContents(in.contents(), in.name(), t);
      req.inputs.emplace_back(in.name(), std::move(t));
    }
  }
  for (const auto& out : message.outputs()) {
    if (out.parameters().count("classification"))
      Refuse(StatusCode::kInvalidArgument, "output '", out.name(), "': the classification extension is not supported");
    req.outputs.push_back(out.name());
  }
  return req;
}

void EncodeGrpcInferResponse(const std::string& model, int64_t version, const std::string& id,
                             const NamedTensors& outputs, inference::ModelInferResponse* response) {
  response->set_model_name(model);
  response->set_model_version(std::to_string(version));
  response->set_id(id);
  for (const auto& [name, t] : outputs) {
    auto* out = response->add_outputs();
    out->set_name(name);
    out->set_datatype(ProtocolDatatypeName(t.dtype()));
    for (int64_t d : t.shape()) out->add_shape(d);
    std::string* bytes = response->add_raw_output_contents();
    if (t.dtype() == DType::kString) *bytes = SerializeBytesTensor(t);
    else if (t.nbytes()) bytes->assign(static_cast<const char*>(t.raw()), t.nbytes());
  }
}

}  // namespace serve
}  // namespace oneflow
