#include "serve/datatype.h"

#include "base/packed_strings.h"
#include "model_config.pb.h"
#include "serve/status.h"

namespace oneflow {
namespace serve {
namespace {

struct TypeRow {
  DType dtype;
  const char* protocol;
  inference::DataType config;
};

constexpr TypeRow kTypes[] = {
    {DType::kBool, "BOOL", inference::TYPE_BOOL},       {DType::kUInt8, "UINT8", inference::TYPE_UINT8},
    {DType::kUInt16, "UINT16", inference::TYPE_UINT16}, {DType::kUInt32, "UINT32", inference::TYPE_UINT32},
    {DType::kUInt64, "UINT64", inference::TYPE_UINT64}, {DType::kInt8, "INT8", inference::TYPE_INT8},
    {DType::kInt16, "INT16", inference::TYPE_INT16},    {DType::kInt32, "INT32", inference::TYPE_INT32},
    {DType::kInt64, "INT64", inference::TYPE_INT64},    {DType::kFloat16, "FP16", inference::TYPE_FP16},
    {DType::kFloat32, "FP32", inference::TYPE_FP32},    {DType::kFloat64, "FP64", inference::TYPE_FP64},
    {DType::kString, "BYTES", inference::TYPE_STRING},  {DType::kBFloat16, "BF16", inference::TYPE_BF16},
};

}  // namespace

const char* ProtocolDatatypeName(DType t) {
  for (const TypeRow& r : kTypes)
    if (r.dtype == t) return r.protocol;
  return "INVALID";
}

DType DTypeFromProtocolName(const std::string& name) {
  for (const TypeRow& r : kTypes)
    if (name == r.protocol) return r.dtype;
  return DType::kUndefined;
}

int ConfigDataTypeOf(DType t) {
  for (const TypeRow& r : kTypes)
    if (r.dtype == t) return r.config;
  return inference::TYPE_INVALID;
}

DType DTypeFromConfigDataType(int config_type) {
  for (const TypeRow& r : kTypes)
    if (r.config == config_type) return r.dtype;
  return DType::kUndefined;
}

std::string SerializeBytesTensor(const Tensor& strings) { return PackStrings(strings.strings(), strings.numel()); }

Tensor DeserializeBytesTensor(const char* data, size_t size, const Shape& shape, const std::string& where) {
  // Count the elements first: the shape may claim any number, the data cannot.
  std::string problem;
  const int64_t count = CountPackedStrings(data, size, &problem);
  if (count < 0) Refuse(StatusCode::kInvalidArgument, where, ": malformed BYTES data: ", problem);
  int64_t want = 0;
  try {
    want = NumElements(shape);
  } catch (const Error&) {
    Refuse(StatusCode::kInvalidArgument, where, ": shape ", ShapeToString(shape), " is too large");
  }
  if (count != want)
    Refuse(StatusCode::kInvalidArgument, where, " has ", count, " BYTES elements but shape ", ShapeToString(shape),
           " holds ", want);
  Tensor t(DType::kString, shape);
  UnpackStrings(data, count, t.strings());
  return t;
}

}  // namespace serve
}  // namespace oneflow
