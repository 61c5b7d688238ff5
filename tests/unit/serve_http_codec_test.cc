// The KServe v2 HTTP body codec (src/serve/kserve_http_codec.h) on hand-written bodies: JSON
// tensors flat and nested, the binary tensor extension, every refusal naming its problem, and the
// response's JSON and binary forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "serve/kserve_http_codec.h"

namespace oneflow::serve {
namespace {

std::string Refusal(const std::string& body, std::optional<size_t> header_length = std::nullopt) {
  try {
    DecodeHttpInferRequest(body.data(), body.size(), header_length);
  } catch (const ServeError& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    return e.what();
  }
  return "accepted";
}

TEST(ServeHttpCodec, JsonTensorsFlatAndNested) {
  std::string body = R"({"id":"7","inputs":[
      {"name":"a","shape":[2,2],"datatype":"FP32","data":[[1.5,-2],[3,4]]},
      {"name":"b","shape":[3],"datatype":"INT8","data":[-128,0,127]},
      {"name":"c","shape":[2],"datatype":"BOOL","data":[true,false]},
      {"name":"d","shape":[1],"datatype":"UINT64","data":[18446744073709551615]},
      {"name":"e","shape":[2],"datatype":"FP16","data":[0.5,-3]}],
    "outputs":[{"name":"y","parameters":{"binary_data":true}}],"parameters":{"timeout":250}})";
  HttpInferRequest r = DecodeHttpInferRequest(body.data(), body.size(), std::nullopt);
  EXPECT_EQ(r.request.id, "7");
  EXPECT_EQ(r.request.timeout_us, 250u);
  ASSERT_EQ(r.request.inputs.size(), 5u);
  const Tensor& a = r.request.inputs[0].second;
  EXPECT_EQ(a.shape(), Shape({2, 2}));
  EXPECT_EQ(a.data<float>()[1], -2.0f);
  EXPECT_EQ(a.data<float>()[3], 4.0f);
  EXPECT_EQ(r.request.inputs[1].second.data<int8_t>()[0], -128);
  EXPECT_TRUE(r.request.inputs[2].second.data<bool>()[0]);
  EXPECT_EQ(r.request.inputs[3].second.data<uint64_t>()[0], 18446744073709551615ull);
  EXPECT_EQ(static_cast<float>(r.request.inputs[4].second.data<Float16>()[1]), -3.0f);
  EXPECT_EQ(r.request.outputs, std::vector<std::string>({"y"}));
  EXPECT_EQ(r.binary_output, std::vector<bool>({true}));
}

TEST(ServeHttpCodec, BinaryTensorData) {
  std::string header = R"({"inputs":[{"name":"x","shape":[2],"datatype":"INT64","parameters":{"binary_data_size":16}},
                                     {"name":"z","shape":[3],"datatype":"UINT8","parameters":{"binary_data_size":3}}]})";
  int64_t x[2] = {-5, 1ll << 40};
  uint8_t z[3] = {1, 2, 255};
  std::string body = header + std::string(reinterpret_cast<char*>(x), 16) + std::string(reinterpret_cast<char*>(z), 3);
  HttpInferRequest r = DecodeHttpInferRequest(body.data(), body.size(), header.size());
  EXPECT_EQ(r.request.inputs[0].second.data<int64_t>()[1], 1ll << 40);
  EXPECT_EQ(r.request.inputs[1].second.data<uint8_t>()[2], 255);

  EXPECT_NE(Refusal(body, body.size() + 1).find("Inference-Header-Content-Length is"), std::string::npos);
  EXPECT_NE(Refusal(body.substr(0, body.size() - 1), header.size()).find("run past the end of the body"),
            std::string::npos);
  EXPECT_NE(Refusal(body + "!", header.size()).find("1 bytes after the JSON header"), std::string::npos);
  EXPECT_NE(Refusal(body).find("malformed JSON"), std::string::npos);  // binary bytes read as JSON
  EXPECT_NE(Refusal(header).find("no Inference-Header-Content-Length"), std::string::npos);
}

TEST(ServeHttpCodec, RefusalsNameTheProblem) {
  auto input = [](const std::string& fields) { return R"({"inputs":[{"name":"x",)" + fields + "}]}"; };
  EXPECT_NE(Refusal("{\"inputs\":[").find("malformed JSON at offset"), std::string::npos);
  EXPECT_NE(Refusal("[]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(Refusal("{}").find("no 'inputs' array"), std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[1],"datatype":"FP128","data":[1])")).find("unknown datatype 'FP128'"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[2],"datatype":"BYTES","data":["a",1])")).find("element 1: expected a string"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[3],"datatype":"FP32","data":[1,2])")).find("has 2 data elements but shape [3]"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[1],"datatype":"FP32","data":[1,[2]])")).find("has 2 data elements but shape [1]"),
            std::string::npos);
  // A shape claiming terabytes with little data is refused before anything is allocated.
  EXPECT_NE(Refusal(input(R"("shape":[1000000,1000000],"datatype":"FP32","data":[1])")).find("has 1 data elements"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[1],"datatype":"INT8","data":[128])")).find("out of the datatype's range"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[1],"datatype":"INT32","data":[1.5])")).find("not an integer"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[1],"datatype":"BOOL","data":[1])")).find("expected true or false"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[-1],"datatype":"FP32","data":[])")).find("negative dimension"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("shape":[1099511627776,2],"datatype":"FP32","data":[])")).find("too many elements"),
            std::string::npos);
  EXPECT_NE(Refusal(input(R"("datatype":"FP32","data":[])")).find("no 'shape' array"), std::string::npos);
}

TEST(ServeHttpCodec, ResponseJsonAndBinary) {
  Tensor y(DType::kFloat32, {4});
  float values[4] = {0.1f, -2.5f, std::nanf(""), -INFINITY};
  std::memcpy(y.raw(), values, sizeof values);
  Tensor k(DType::kInt64, {1});
  k.data<int64_t>()[0] = -7;
  HttpInferRequest shape;
  shape.request.id = "r1";
  HttpBody json = EncodeHttpInferResponse("m", 3, shape, {{"y", y}, {"k", k}});
  EXPECT_FALSE(json.header_length.has_value());
  EXPECT_EQ(json.bytes,
            R"({"model_name":"m","model_version":"3","id":"r1","outputs":[)"
            R"({"name":"y","datatype":"FP32","shape":[4],"data":[0.1,-2.5,"nan","-inf"]},)"
            R"({"name":"k","datatype":"INT64","shape":[1],"data":[-7]}]})");
  shape.request.outputs = {"y", "k"};
  shape.binary_output = {true, false};
  HttpBody mixed = EncodeHttpInferResponse("m", 3, shape, {{"y", y}, {"k", k}});
  ASSERT_TRUE(mixed.header_length.has_value());
  std::string head = mixed.bytes.substr(0, *mixed.header_length);
  EXPECT_NE(head.find(R"("parameters":{"binary_data_size":16})"), std::string::npos) << head;
  EXPECT_NE(head.find(R"("data":[-7])"), std::string::npos) << head;
  ASSERT_EQ(mixed.bytes.size(), *mixed.header_length + 16);
  EXPECT_EQ(std::memcmp(mixed.bytes.data() + *mixed.header_length, values, 16), 0);
}

// BYTES (string tensors): JSON strings and the packed binary form (a 4-byte little-endian length,
// then the bytes) in, the same out, checked against bytes written here by hand.
TEST(ServeHttpCodec, BytesTensors) {
  const std::string json = R"({"inputs":[{"name":"t","shape":[2],"datatype":"BYTES","data":["a\u00fc",""]}]})";
  HttpInferRequest r = DecodeHttpInferRequest(json.data(), json.size(), std::nullopt);
  ASSERT_EQ(r.request.inputs.size(), 1u);
  const Tensor& t = r.request.inputs[0].second;
  ASSERT_EQ(t.dtype(), DType::kString);
  EXPECT_EQ(t.strings()[0], "a\xc3\xbc");
  EXPECT_EQ(t.strings()[1], "");

  const std::string packed("\x02\x00\x00\x00hi\x00\x00\x00\x00\x01\x00\x00\x00\xff", 15);
  const std::string header =
      R"({"inputs":[{"name":"t","shape":[3],"datatype":"BYTES","parameters":{"binary_data_size":15}}]})";
  HttpInferRequest b = DecodeHttpInferRequest((header + packed).data(), header.size() + packed.size(), header.size());
  const Tensor& bt = b.request.inputs[0].second;
  ASSERT_EQ(bt.numel(), 3);
  EXPECT_EQ(bt.strings()[0], "hi");
  EXPECT_EQ(bt.strings()[1], "");
  EXPECT_EQ(bt.strings()[2], "\xff");
  std::string short_header = header;  // the last element's byte cut off, its size said so
  short_header.replace(short_header.find("15"), 2, "14");
  EXPECT_NE(Refusal(short_header + packed.substr(0, 14), short_header.size()).find("claims 1 bytes but 0 remain"),
            std::string::npos);

  HttpInferRequest ask;
  ask.request.outputs = {"t"};
  ask.binary_output = {true};
  HttpBody out = EncodeHttpInferResponse("m", 1, ask, {{"t", bt}});
  ASSERT_TRUE(out.header_length.has_value());
  EXPECT_NE(out.bytes.find(R"("binary_data_size":15)"), std::string::npos) << out.bytes;
  EXPECT_EQ(out.bytes.substr(*out.header_length), packed);
  ask.binary_output = {false};  // JSON cannot carry the element that is not UTF-8
  try {
    EncodeHttpInferResponse("m", 1, ask, {{"t", bt}});
    ADD_FAILURE() << "a non-UTF-8 element was written as a JSON string";
  } catch (const ServeError& e) {
    EXPECT_NE(std::string(e.what()).find("element 2 is not UTF-8"), std::string::npos) << e.what();
  }
  HttpBody text = EncodeHttpInferResponse("m", 1, ask, {{"t", t}});
  EXPECT_NE(text.bytes.find("\"data\":[\"a\xc3\xbc\",\"\"]"), std::string::npos) << text.bytes;
}

}  // namespace
}  // namespace oneflow::serve
