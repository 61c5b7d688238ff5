// Loader robustness: sizes are validated against the data present before anything is allocated.
#include <gtest/gtest.h>

#include <string>

#include "onnx.pb.h"
#include "serialize/onnx_import.h"
#include "../test_support.h"

namespace oneflow {
namespace {

// A model whose graph returns initializer W unchanged (shape/data supplied by the caller).
std::string ModelWithInitializer(const onnx::TensorProto& w) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  *g->add_initializer() = w;
  g->add_output()->set_name(w.name());
  return m.SerializeAsString();
}

ErrorCode LoadError(const std::string& bytes, std::string* message) {
  return test_util::ErrorCodeOf([&] { LoadOnnxBytes(bytes.data(), bytes.size()); }, message);
}

TEST(OnnxImport, HugeShapeWithLittleDataIsRefusedWithoutAllocating) {
  onnx::TensorProto w;
  w.set_name("W");
  w.set_data_type(onnx::TensorProto::FLOAT);
  for (int i = 0; i < 3; ++i) w.add_dims(1 << 20);  // 2^60 elements: would be an absurd allocation
  w.set_raw_data(std::string(16, '\0'));
  std::string msg;
  EXPECT_EQ(LoadError(ModelWithInitializer(w), &msg), ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;

  w.clear_raw_data();
  w.add_float_data(1.0f);
  EXPECT_EQ(LoadError(ModelWithInitializer(w), &msg), ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("values for shape"), std::string::npos) << msg;

  w.clear_dims();
  for (int i = 0; i < 4; ++i) w.add_dims(int64_t{1} << 40);  // the element count overflows int64
  EXPECT_EQ(LoadError(ModelWithInitializer(w), &msg), ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
}

TEST(OnnxImport, RawBoolsAreNormalized) {
  onnx::TensorProto w;
  w.set_name("B");
  w.set_data_type(onnx::TensorProto::BOOL);
  w.add_dims(3);
  w.set_raw_data(std::string("\x00\x02\xff", 3));
  Graph g = LoadOnnxBytes(ModelWithInitializer(w).data(), ModelWithInitializer(w).size());
  const Tensor& t = g.values[static_cast<size_t>(g.FindValue("B"))].constant;
  const auto* b = static_cast<const unsigned char*>(t.raw());
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[1], 1);
  EXPECT_EQ(b[2], 1);
}

TEST(OnnxImport, ExternalDataFromMemoryNeedsADirectory) {
  onnx::TensorProto w;
  w.set_name("W");
  w.set_data_type(onnx::TensorProto::FLOAT);
  w.add_dims(2);
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w.add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  std::string msg;
  EXPECT_EQ(LoadError(ModelWithInitializer(w), &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("external data"), std::string::npos) << msg;
}

}  // namespace
}  // namespace oneflow
