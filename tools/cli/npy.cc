// .npy reading and writing. The header is a Python dict literal; we parse just the subset NumPy
// writes ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }) and refuse anything else
// with a message that says what was found.
#include "npy.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <vector>

namespace oneflow {
namespace npy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

struct DescrEntry {
  const char* code;  // without the byte-order character
  DType dtype;
};
// One table for both directions. The byte-order character is checked separately.
constexpr DescrEntry kDescrs[] = {
    {"f4", DType::kFloat32}, {"f8", DType::kFloat64}, {"f2", DType::kFloat16}, {"i1", DType::kInt8},
    {"i2", DType::kInt16},   {"i4", DType::kInt32},   {"i8", DType::kInt64},   {"u1", DType::kUInt8},
    {"u2", DType::kUInt16},  {"u4", DType::kUInt32},  {"u8", DType::kUInt64},  {"b1", DType::kBool},
};

DType DTypeFromDescr(const std::string& descr, const std::string& what) {
  OF_REQUIRE(descr.size() >= 2, what, ": unsupported .npy dtype '", descr, "'");
  char order = descr[0];
  std::string code = descr.substr(1);
  for (const DescrEntry& e : kDescrs) {
    if (code != e.code) continue;
    bool one_byte = DTypeSize(e.dtype) == 1;
    // '|' = not applicable (1-byte types), '<' little-endian, '=' native (we only run on little-endian).
    OF_REQUIRE(order == '<' || order == '=' || (one_byte && order == '|'), what, ": dtype '", descr,
               "' is big-endian; only little-endian .npy files are supported (use arr.astype('<",
               code, "'))");
    return e.dtype;
  }
  OF_REQUIRE(false, what, ": unsupported .npy dtype '", descr,
             "' (supported: float16/32/64, int8/16/32/64, uint8/16/32/64, bool; bfloat16 has no .npy "
             "representation)");
  return DType::kUndefined;
}

// A cursor over the header dict literal.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  void SkipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) { ++pos_; return true; }
    return false;
  }
  void Expect(char c) {
    if (!Consume(c)) Bad(std::string("expected '") + c + "'");
  }
  bool AtEnd() { SkipSpace(); return pos_ >= s_.size(); }
  char Peek() { SkipSpace(); return pos_ < s_.size() ? s_[pos_] : '\0'; }

  std::string String() {
    SkipSpace();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) Bad("expected a quoted string");
    char quote = s_[pos_++];
    size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) Bad("unterminated string");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool Bool() {
    SkipSpace();
    if (s_.compare(pos_, 4, "True") == 0) { pos_ += 4; return true; }
    if (s_.compare(pos_, 5, "False") == 0) { pos_ += 5; return false; }
    Bad("expected True or False");
  }
  Shape Tuple() {
    Expect('(');
    Shape shape;
    while (!Consume(')')) {
      SkipSpace();
      size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (start == pos_) Bad("expected a non-negative integer in the shape");
      OF_REQUIRE(pos_ - start <= 18, what_, ": .npy shape dim ", s_.substr(start, pos_ - start), " is too large");
      shape.push_back(std::stoll(s_.substr(start, pos_ - start)));
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 longs
      if (!Consume(',')) { Expect(')'); break; }
    }
    return shape;
  }
  [[noreturn]] void Bad(const std::string& why) {
    Fail(ErrorCode::kInvalidArgument, what_, ": malformed .npy header (", why, " at offset ", pos_, "): ", s_);
  }

 private:
  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;
};

uint32_t ReadLE(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string DescrOf(DType dtype) {
  for (const DescrEntry& e : kDescrs)
    if (e.dtype == dtype) return std::string(DTypeSize(dtype) == 1 ? "|" : "<") + e.code;
  Fail(ErrorCode::kUnsupported, "dtype ", DTypeName(dtype), " cannot be stored in a .npy file",
       dtype == DType::kBFloat16 ? " (NumPy has no bfloat16)" : "");
}

Tensor Parse(const void* data, size_t size, const std::string& what) {
  const auto* p = static_cast<const unsigned char*>(data);
  OF_REQUIRE(size >= kMagicLen + 2 && std::memcmp(p, kMagic, kMagicLen) == 0, what,
             ": not a .npy file (missing the \\x93NUMPY magic)");
  int major = p[6], minor = p[7];
  OF_REQUIRE((major == 1 || major == 2 || major == 3) && minor == 0, what, ": unsupported .npy format version ",
             major, ".", minor, " (1.0, 2.0 and 3.0 are supported)");
  int len_bytes = major == 1 ? 2 : 4;
  size_t prefix = kMagicLen + 2 + static_cast<size_t>(len_bytes);
  OF_REQUIRE(size >= prefix, what, ": truncated .npy file (", size, " bytes; the header is cut off)");
  size_t header_len = ReadLE(p + 8, len_bytes);
  OF_REQUIRE(size - prefix >= header_len, what, ": truncated .npy file (the header needs ", header_len,
             " bytes, ", size - prefix, " remain)");
  std::string header(reinterpret_cast<const char*>(p + prefix), header_len);

  HeaderParser hp(header, what);
  std::string descr;
  bool fortran = false, have_descr = false, have_order = false, have_shape = false;
  Shape shape;
  hp.Expect('{');
  while (!hp.Consume('}')) {
    std::string key = hp.String();
    hp.Expect(':');
    if (key == "descr") {
      OF_REQUIRE(hp.Peek() == '\'' || hp.Peek() == '"', what,
                 ": structured .npy dtypes are not supported (descr is not a simple type string)");
      descr = hp.String();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = hp.Bool();
      have_order = true;
    } else if (key == "shape") {
      shape = hp.Tuple();
      have_shape = true;
    } else {
      hp.Bad("unexpected key '" + key + "'");
    }
    if (!hp.Consume(',')) { hp.Expect('}'); break; }
  }
  OF_REQUIRE(have_descr && have_order && have_shape, what,
             ": malformed .npy header (needs 'descr', 'fortran_order' and 'shape'): ", header);
  OF_REQUIRE(!fortran, what, ": the array is stored in Fortran order (fortran_order: True); only C order is "
             "supported (save np.ascontiguousarray(arr))");
  DType dtype = DTypeFromDescr(descr, what);

  size_t data_bytes = 0;
  try {
    data_bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  } catch (const Error&) {
    Fail(ErrorCode::kInvalidArgument, what, ": .npy shape ", ShapeToString(shape), " is too large");
  }
  size_t available = size - prefix - header_len;
  // Checked before allocating, so a corrupt shape cannot request a huge buffer.
  OF_REQUIRE(available >= data_bytes, what, ": truncated .npy file (", DTypeName(dtype), ShapeToString(shape),
             " needs ", data_bytes, " bytes of data, ", available, " present)");
  Tensor t = Tensor::Uninitialized(dtype, shape);
  if (data_bytes) std::memcpy(t.raw(), p + prefix + header_len, data_bytes);
  if (dtype == DType::kBool) {
    // NumPy bools are single bytes; normalize anything non-zero to 1 as the engine expects.
    auto* b = static_cast<unsigned char*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i) b[i] = b[i] != 0;
  }
  return t;
}

Tensor ReadFile(const std::string& path) {
  std::error_code ec;
  OF_CHECK(std::filesystem::exists(path, ec), kNotFound, "'", path, "' does not exist");
  OF_CHECK(!std::filesystem::is_directory(path, ec), kInvalidArgument, "'", path, "' is a directory, not a .npy file");
  std::ifstream in(path, std::ios::binary);
  OF_CHECK(in.good(), kIo, "cannot open '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  OF_CHECK(!in.bad(), kIo, "reading '", path, "' failed");
  return Parse(bytes.data(), bytes.size(), "'" + path + "'");
}

std::string Serialize(const Tensor& t) {
  std::string descr = DescrOf(t.dtype());
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]);
    if (t.shape().size() == 1 || i + 1 < t.shape().size()) shape += t.shape().size() == 1 ? "," : ", ";
  }
  shape += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary, ending the header with '\n'.
  int major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  if ((prefix + dict.size() + 1 + 63) / 64 * 64 - prefix > 65535) {  // too long for a 2-byte length
    major = 2;
    prefix = kMagicLen + 2 + 4;
  }
  size_t total = prefix + dict.size() + 1;
  dict.append((total + 63) / 64 * 64 - total, ' ');
  dict.push_back('\n');

  std::string out(kMagic, kMagicLen);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  uint32_t len = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out += dict;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

void WriteFile(const std::string& path, const Tensor& t) {
  std::string bytes = Serialize(t);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  OF_CHECK(out.good(), kIo, "cannot create '", path, "'");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  OF_CHECK(!out.fail(), kIo, "writing '", path, "' failed");
}

}  // namespace npy
}  // namespace oneflow
