// Tests of the CLI's .npy reader/writer against hand-written NumPy headers (as np.save writes them).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "npy.h"

namespace oneflow {
namespace {

// A .npy file as NumPy writes it: magic, version, header length, dict padded to 64 bytes, data.
std::string MakeNpy(const std::string& dict, const std::string& data, int major = 1) {
  std::string header = dict;
  size_t prefix = 6 + 2 + (major == 1 ? 2 : 4);
  size_t total = prefix + header.size() + 1;
  header.append((total + 63) / 64 * 64 - total, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  uint32_t len = static_cast<uint32_t>(header.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  return out + header + data;
}

template <typename T>
std::string Bytes(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

std::string ErrorOf(const std::string& bytes) {
  try {
    npy::Parse(bytes.data(), bytes.size(), "f.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Npy, ReadsNumpyHeadersOfEachVersion) {
  for (int major : {1, 2, 3}) {
    std::string f = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                            Bytes<float>({1, 2, 3, 4, 5, 6}), major);
    Tensor t = npy::Parse(f.data(), f.size(), "f.npy");
    EXPECT_EQ(t.dtype(), DType::kFloat32);
    EXPECT_EQ(t.shape(), (Shape{2, 3}));
    EXPECT_EQ(t.data<float>()[5], 6.0f);
  }
}

TEST(Npy, ReadsEveryDtype) {
  struct Case { const char* descr; DType dtype; std::string data; };
  Case cases[] = {
      {"<f8", DType::kFloat64, Bytes<double>({1.5, -2})},  {"<f2", DType::kFloat16, Bytes<uint16_t>({0x3c00, 0})},
      {"|i1", DType::kInt8, Bytes<int8_t>({-1, 2})},       {"<i1", DType::kInt8, Bytes<int8_t>({-1, 2})},
      {"<i2", DType::kInt16, Bytes<int16_t>({-1, 2})},     {"<i4", DType::kInt32, Bytes<int32_t>({-1, 2})},
      {"<i8", DType::kInt64, Bytes<int64_t>({-1, 2})},     {"|u1", DType::kUInt8, Bytes<uint8_t>({255, 2})},
      {"<u2", DType::kUInt16, Bytes<uint16_t>({65535, 2})}, {"<u4", DType::kUInt32, Bytes<uint32_t>({7, 2})},
      {"<u8", DType::kUInt64, Bytes<uint64_t>({7, 2})},    {"|b1", DType::kBool, Bytes<uint8_t>({1, 0})},
  };
  for (const Case& c : cases) {
    std::string f = MakeNpy(std::string("{'descr': '") + c.descr + "', 'fortran_order': False, 'shape': (2,), }", c.data);
    Tensor t = npy::Parse(f.data(), f.size(), "f.npy");
    EXPECT_EQ(t.dtype(), c.dtype) << c.descr;
    EXPECT_EQ(t.shape(), Shape{2}) << c.descr;
    EXPECT_EQ(std::memcmp(t.raw(), c.data.data(), c.data.size()), 0) << c.descr;
  }
}

TEST(Npy, ScalarsAndEmptyArrays) {
  std::string f = MakeNpy("{'descr': '<i8', 'fortran_order': False, 'shape': (), }", Bytes<int64_t>({42}));
  Tensor t = npy::Parse(f.data(), f.size(), "f.npy");
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.data<int64_t>()[0], 42);
  f = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", "");
  EXPECT_EQ(npy::Parse(f.data(), f.size(), "f.npy").numel(), 0);
}

TEST(Npy, RoundTripsThroughTheWriter) {
  Tensor t(DType::kInt32, {2, 1, 3});
  for (int i = 0; i < 6; ++i) t.data<int32_t>()[i] = i * 7 - 3;
  std::string bytes = npy::Serialize(t);
  EXPECT_EQ(bytes.compare(0, 6, "\x93NUMPY"), 0);
  EXPECT_EQ(bytes[6], 1);
  size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);  // data is 64-byte aligned, as NumPy writes it
  EXPECT_NE(bytes.find("'shape': (2, 1, 3)"), std::string::npos);
  Tensor back = npy::Parse(bytes.data(), bytes.size(), "t");
  EXPECT_EQ(back.shape(), t.shape());
  EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.nbytes()), 0);

  Tensor v(DType::kBool, {3});
  EXPECT_NE(npy::Serialize(v).find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(npy::Serialize(v).find("'shape': (3,)"), std::string::npos);
  Tensor s = Tensor::Scalar(DType::kFloat64, 2.5);
  EXPECT_NE(npy::Serialize(s).find("'shape': ()"), std::string::npos);
}

TEST(Npy, RefusesWhatItCannotRepresent) {
  EXPECT_THROW(npy::Serialize(Tensor(DType::kBFloat16, {2})), Error);
  EXPECT_NE(ErrorOf(MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0'))).find("Fortran"),
            std::string::npos);
  EXPECT_NE(ErrorOf(MakeNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'))).find("big-endian"),
            std::string::npos);
  EXPECT_NE(ErrorOf(MakeNpy("{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }", std::string(2, '\0'))).find("unsupported"),
            std::string::npos);
  EXPECT_NE(ErrorOf(MakeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'))).find("structured"),
            std::string::npos);
  EXPECT_NE(ErrorOf("not numpy").find("magic"), std::string::npos);
  EXPECT_NE(ErrorOf(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", "", 4)).find("version"),
            std::string::npos);
}

TEST(Npy, RefusesTruncatedAndMalformedFiles) {
  std::string good = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", Bytes<float>({1, 2, 3, 4}));
  for (size_t cut : {size_t{3}, size_t{9}, size_t{40}, good.size() - 1}) {
    std::string msg = ErrorOf(good.substr(0, cut));
    EXPECT_FALSE(msg.empty()) << cut;
    if (cut > 10) {
      EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    }
  }
  EXPECT_NE(ErrorOf(MakeNpy("{'descr': '<f4', 'shape': (4,), }", Bytes<float>({1, 2, 3, 4}))).find("fortran_order"),
            std::string::npos);
  EXPECT_NE(ErrorOf(MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", "")).find("too large"),
            std::string::npos);
  EXPECT_NE(ErrorOf(MakeNpy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }", "")).find("True or False"),
            std::string::npos);
}

}  // namespace
}  // namespace oneflow
