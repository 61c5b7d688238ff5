#include "serve/kserve_http_codec.h"

#include <rapidjson/document.h>
#include <rapidjson/encodedstream.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/error.h"
#include "base/utf8.h"
#include "serve/datatype.h"

namespace oneflow {
namespace serve {
namespace {

namespace rj = rapidjson;

// Forwards a reader's events to a Document, converting each number from its text with
// std::from_chars: exact (the nearest double, integers as integers). RapidJSON 1.1's own parser is
// either within a few ulps (its default) or, with kParseFullPrecisionFlag, exact but with undefined
// behaviour on inputs such as a long "0.000...0" (clz(0), a shift by 64: found by our fuzzer).
class ExactNumbers {
 public:
  explicit ExactNumbers(rj::Document& doc) : doc_(doc) {}
  bool Null() { return doc_.Null(); }
  bool Bool(bool b) { return doc_.Bool(b); }
  bool Int(int i) { return doc_.Int(i); }
  bool Uint(unsigned u) { return doc_.Uint(u); }
  bool Int64(int64_t i) { return doc_.Int64(i); }
  bool Uint64(uint64_t u) { return doc_.Uint64(u); }
  bool Double(double d) { return doc_.Double(d); }
  bool RawNumber(const char* s, rj::SizeType n, bool) {
    const char* end = s + n;
    if (std::none_of(s, end, [](char c) { return c == '.' || c == 'e' || c == 'E'; })) {
      if (s[0] == '-') {
        int64_t v;
        auto r = std::from_chars(s, end, v);
        if (r.ec == std::errc() && r.ptr == end) return doc_.Int64(v);
      } else {
        uint64_t v;
        auto r = std::from_chars(s, end, v);
        if (r.ec == std::errc() && r.ptr == end)
          return v <= static_cast<uint64_t>(INT64_MAX) ? doc_.Int64(static_cast<int64_t>(v)) : doc_.Uint64(v);
      }
      // Integers past 64 bits are read as doubles, as JSON readers do.
    }
    double d;
    auto r = std::from_chars(s, end, d);
    if (r.ec == std::errc::result_out_of_range) {
      // Underflow reads as (signed) zero; overflow is refused, as RapidJSON refuses it.
      d = std::strtod(std::string(s, n).c_str(), nullptr);
      if (std::isinf(d)) return false;
    } else if (r.ec != std::errc() || r.ptr != end) {
      return false;
    }
    return doc_.Double(d);
  }
  bool String(const char* s, rj::SizeType n, bool copy) { return doc_.String(s, n, copy); }
  bool StartObject() { return doc_.StartObject(); }
  bool Key(const char* s, rj::SizeType n, bool copy) { return doc_.Key(s, n, copy); }
  bool EndObject(rj::SizeType members) { return doc_.EndObject(members); }
  bool StartArray() { return doc_.StartArray(); }
  bool EndArray(rj::SizeType elements) { return doc_.EndArray(elements); }

 private:
  rj::Document& doc_;
};

// Parses `size` bytes into `doc`: iteratively (nesting depth costs heap, not stack) and with
// exact numbers (ExactNumbers).
rj::ParseResult ParseExact(const char* data, size_t size, rj::Document& doc) {
  rj::ParseResult result;
  auto generate = [&](rj::Document& handler) {
    rj::MemoryStream stream(data, size);
    rj::EncodedInputStream<rj::UTF8<>, rj::MemoryStream> input(stream);
    ExactNumbers numbers(handler);
    rj::Reader reader;
    result = reader.Parse<rj::kParseIterativeFlag | rj::kParseNumbersAsStringsFlag>(input, numbers);
    return !result.IsError();
  };
  doc.Populate(generate);
  return result;
}

// An element count of a shape, refusing negative dims and products past 2^40 elements.
int64_t CheckedElements(const Shape& shape, const std::string& name) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) Refuse(StatusCode::kInvalidArgument, "input '", name, "' has a negative dimension in shape ", ShapeToString(shape));
    if (d != 0 && n > (int64_t{1} << 40) / d)
      Refuse(StatusCode::kInvalidArgument, "input '", name, "' has shape ", ShapeToString(shape), ", too many elements");
    n *= d;
  }
  return n;
}

const rj::Value* Member(const rj::Value& object, const char* key) {
  auto it = object.FindMember(key);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

std::string StringMember(const rj::Value& object, const char* key, const char* where, bool required) {
  const rj::Value* v = Member(object, key);
  if (!v) {
    if (required) Refuse(StatusCode::kInvalidArgument, where, " has no '", key, "'");
    return "";
  }
  if (!v->IsString()) Refuse(StatusCode::kInvalidArgument, where, ": '", key, "' must be a string");
  return std::string(v->GetString(), v->GetStringLength());
}

bool BoolParameter(const rj::Value* params, const char* key, const std::string& where) {
  if (!params) return false;
  const rj::Value* v = Member(*params, key);
  if (!v) return false;
  if (!v->IsBool()) Refuse(StatusCode::kInvalidArgument, where, ": parameter '", key, "' must be a boolean");
  return v->GetBool();
}

// Converts one JSON element to T, refusing values T cannot hold exactly (integers) or at all.
template <typename T>
T ElementOf(const rj::Value& v, const std::string& name, int64_t index) {
  auto refuse = [&](const char* what) {
    Refuse(StatusCode::kInvalidArgument, "input '", name, "' element ", index, ": ", what);
  };
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.IsString()) refuse("expected a string (datatype BYTES)");
    return std::string(v.GetString(), v.GetStringLength());
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.IsBool()) refuse("expected true or false (datatype BOOL)");
    return v.GetBool();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.IsInt64()) {
      int64_t x = v.GetInt64();
      if constexpr (std::is_signed_v<T>) {
        if (x < std::numeric_limits<T>::min() || x > std::numeric_limits<T>::max()) refuse("out of the datatype's range");
      } else {
        if (x < 0 || static_cast<uint64_t>(x) > std::numeric_limits<T>::max()) refuse("out of the datatype's range");
      }
      return static_cast<T>(x);
    }
    if (v.IsUint64()) {
      if constexpr (std::is_same_v<T, uint64_t>) return v.GetUint64();
      refuse("out of the datatype's range");
    }
    refuse(v.IsNumber() ? "not an integer" : "expected a number");
  } else {
    if (!v.IsNumber()) refuse("expected a number");
    return CastFromDouble<T>(v.GetDouble());
  }
  return T{};
}

// Appends the elements of a flat or nested (row-major) JSON array to `out`.
template <typename T>
void Flatten(const rj::Value& v, const std::string& name, T* out, int64_t capacity, int64_t& count, int depth) {
  if (depth > 64) Refuse(StatusCode::kInvalidArgument, "input '", name, "': 'data' nests too deeply");
  for (const rj::Value& e : v.GetArray()) {
    if (e.IsArray()) {
      Flatten(e, name, out, capacity, count, depth + 1);
      continue;
    }
    if (count >= capacity)
      Refuse(StatusCode::kInvalidArgument, "input '", name, "' has more data elements than its shape holds (",
             capacity, ")");
    out[count] = ElementOf<T>(e, name, count);
    ++count;
  }
}

// The number of leaf elements of a flat or nested JSON array.
int64_t CountElements(const rj::Value& v, const std::string& name, int depth) {
  if (depth > 64) Refuse(StatusCode::kInvalidArgument, "input '", name, "': 'data' nests too deeply");
  int64_t n = 0;
  for (const rj::Value& e : v.GetArray()) n += e.IsArray() ? CountElements(e, name, depth + 1) : 1;
  return n;
}

Shape ShapeOf(const rj::Value& input, const std::string& name) {
  const rj::Value* shape = Member(input, "shape");
  if (!shape || !shape->IsArray()) Refuse(StatusCode::kInvalidArgument, "input '", name, "' has no 'shape' array");
  Shape s;
  for (const rj::Value& d : shape->GetArray()) {
    if (!d.IsInt64()) Refuse(StatusCode::kInvalidArgument, "input '", name, "': 'shape' must hold integers");
    s.push_back(d.GetInt64());
  }
  if (s.size() > 16) Refuse(StatusCode::kInvalidArgument, "input '", name, "' has rank ", s.size(), " (at most 16)");
  return s;
}

// Shortest text that reads back to the same value (std::to_chars); JSON has no NaN or infinity,
// so those are written as the strings Triton writes ("nan", "inf", "-inf").
template <typename T>
void WriteElement(rj::Writer<rj::StringBuffer>& w, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    w.Bool(v);
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) w.Int64(v);
    else w.Uint64(v);
  } else {
    using F = std::conditional_t<std::is_same_v<T, double>, double, float>;
    F f = static_cast<F>(v);
    if (std::isnan(f)) { w.String("nan"); return; }
    if (std::isinf(f)) { w.String(f > 0 ? "inf" : "-inf"); return; }
    char buf[40];
    auto res = std::to_chars(buf, buf + sizeof buf, f);
    w.RawValue(buf, static_cast<size_t>(res.ptr - buf), rj::kNumberType);
  }
}

}  // namespace

HttpInferRequest DecodeHttpInferRequest(const char* body, size_t size, std::optional<size_t> header_length) {
  size_t json_size = size;
  if (header_length) {
    if (*header_length > size)
      Refuse(StatusCode::kInvalidArgument, "Inference-Header-Content-Length is ", *header_length,
             " but the body has only ", size, " bytes");
    json_size = *header_length;
  }
  rj::Document doc;
  rj::ParseResult parsed = ParseExact(body, json_size, doc);
  if (parsed.IsError())
    Refuse(StatusCode::kInvalidArgument, "malformed JSON at offset ", parsed.Offset(), ": ",
           rj::GetParseError_En(parsed.Code()));
  if (!doc.IsObject()) Refuse(StatusCode::kInvalidArgument, "the request body must be a JSON object");

  HttpInferRequest decoded;
  InferRequest& req = decoded.request;
  req.id = StringMember(doc, "id", "request", false);
  const rj::Value* params = Member(doc, "parameters");
  if (params && !params->IsObject()) Refuse(StatusCode::kInvalidArgument, "request 'parameters' must be an object");
  decoded.binary_all_outputs = BoolParameter(params, "binary_data_output", "request");
  if (params) {
    if (const rj::Value* t = Member(*params, "timeout")) {
      if (!t->IsUint64()) Refuse(StatusCode::kInvalidArgument, "request parameter 'timeout' must be microseconds (an unsigned integer)");
      req.timeout_us = t->GetUint64();
    }
  }

  const rj::Value* inputs = Member(doc, "inputs");
  if (!inputs || !inputs->IsArray()) Refuse(StatusCode::kInvalidArgument, "the request has no 'inputs' array");
  size_t binary_offset = json_size;
  for (const rj::Value& in : inputs->GetArray()) {
    if (!in.IsObject()) Refuse(StatusCode::kInvalidArgument, "each entry of 'inputs' must be an object");
    std::string name = StringMember(in, "name", "an input", true);
    std::string where = "input '" + name + "'";
    std::string datatype = StringMember(in, "datatype", where.c_str(), true);
    DType dtype = DTypeFromProtocolName(datatype);
    if (dtype == DType::kUndefined) Refuse(StatusCode::kInvalidArgument, where, " has unknown datatype '", datatype, "'");
    Shape shape = ShapeOf(in, name);
    int64_t numel = CheckedElements(shape, name);
    const rj::Value* in_params = Member(in, "parameters");
    if (in_params && !in_params->IsObject()) Refuse(StatusCode::kInvalidArgument, where, ": 'parameters' must be an object");
    const rj::Value* binary_size = in_params ? Member(*in_params, "binary_data_size") : nullptr;
    const rj::Value* data = Member(in, "data");
    // Sizes are checked against the data actually sent before anything is allocated: a shape may
    // claim terabytes, the body cannot.
    const size_t nbytes = static_cast<size_t>(numel) * DTypeSize(dtype);
    Tensor t;
    if (binary_size) {
      if (!binary_size->IsUint64()) Refuse(StatusCode::kInvalidArgument, where, ": 'binary_data_size' must be an unsigned integer");
      if (data) Refuse(StatusCode::kInvalidArgument, where, " has both 'data' and 'binary_data_size'");
      if (!header_length)
        Refuse(StatusCode::kInvalidArgument, where, " has binary data but the request has no Inference-Header-Content-Length");
      uint64_t n = binary_size->GetUint64();
      if (dtype == DType::kString) {  // length-prefixed elements: their count, not a byte size, is checked
        if (n > size - binary_offset)
          Refuse(StatusCode::kInvalidArgument, where, ": its ", n, " bytes of binary data run past the end of the body (",
                 size - binary_offset, " left)");
        req.inputs.emplace_back(std::move(name), DeserializeBytesTensor(body + binary_offset, n, shape, where));
        binary_offset += n;
        continue;
      }
      if (n != nbytes)
        Refuse(StatusCode::kInvalidArgument, where, ": binary_data_size is ", n, " bytes but shape ",
               ShapeToString(shape), " of ", datatype, " takes ", nbytes);
      if (n > size - binary_offset)
        Refuse(StatusCode::kInvalidArgument, where, ": its ", n, " bytes of binary data run past the end of the body (",
               size - binary_offset, " left)");
      t = Tensor::Uninitialized(dtype, shape);
      if (n) std::memcpy(t.raw(), body + binary_offset, n);
      binary_offset += n;
    } else {
      if (!data || !data->IsArray()) Refuse(StatusCode::kInvalidArgument, where, " has no 'data' array");
      int64_t sent = CountElements(*data, name, 0);
      if (sent != numel)
        Refuse(StatusCode::kInvalidArgument, where, " has ", sent, " data elements but shape ", ShapeToString(shape),
               " holds ", numel);
      t = Tensor::Uninitialized(dtype, shape);
      int64_t count = 0;
      if (dtype == DType::kString) {
        Flatten<std::string>(*data, name, t.strings(), numel, count, 0);
      } else {
        DispatchAll(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          Flatten<T>(*data, name, t.data<T>(), numel, count, 0);
        });
      }
    }
    req.inputs.emplace_back(std::move(name), std::move(t));
  }
  if (binary_offset != size)
    Refuse(StatusCode::kInvalidArgument, "the body has ", size - binary_offset,
           " bytes after the JSON header and the inputs' binary data");

  if (const rj::Value* outputs = Member(doc, "outputs")) {
    if (!outputs->IsArray()) Refuse(StatusCode::kInvalidArgument, "'outputs' must be an array");
    for (const rj::Value& out : outputs->GetArray()) {
      if (!out.IsObject()) Refuse(StatusCode::kInvalidArgument, "each entry of 'outputs' must be an object");
      std::string name = StringMember(out, "name", "an output", true);
      const rj::Value* out_params = Member(out, "parameters");
      if (out_params && !out_params->IsObject())
        Refuse(StatusCode::kInvalidArgument, "output '", name, "': 'parameters' must be an object");
      if (out_params && Member(*out_params, "classification"))
        Refuse(StatusCode::kInvalidArgument, "output '", name, "': the classification extension is not supported");
      decoded.binary_output.push_back(BoolParameter(out_params, "binary_data", "output '" + name + "'"));
      req.outputs.push_back(std::move(name));
    }
  }
  return decoded;
}

HttpBody EncodeHttpInferResponse(const std::string& model, int64_t version, const HttpInferRequest& decoded,
                                 const NamedTensors& outputs) {
  rj::StringBuffer buf;
  rj::Writer<rj::StringBuffer> w(buf);
  std::vector<std::string> binary;  // each binary output's bytes, in order (BYTES serialized, else as in memory)
  w.StartObject();
  w.Key("model_name");
  w.String(model.c_str(), static_cast<rj::SizeType>(model.size()));
  w.Key("model_version");
  std::string v = std::to_string(version);
  w.String(v.c_str(), static_cast<rj::SizeType>(v.size()));
  if (!decoded.request.id.empty()) {
    w.Key("id");
    w.String(decoded.request.id.c_str(), static_cast<rj::SizeType>(decoded.request.id.size()));
  }
  w.Key("outputs");
  w.StartArray();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = outputs[i].first;
    const Tensor& t = outputs[i].second;
    bool as_binary = decoded.binary_all_outputs ||
                     (i < decoded.binary_output.size() && !decoded.request.outputs.empty() && decoded.binary_output[i]);
    w.StartObject();
    w.Key("name");
    w.String(name.c_str(), static_cast<rj::SizeType>(name.size()));
    w.Key("datatype");
    w.String(ProtocolDatatypeName(t.dtype()));
    w.Key("shape");
    w.StartArray();
    for (int64_t d : t.shape()) w.Int64(d);
    w.EndArray();
    if (as_binary) {
      binary.push_back(t.dtype() == DType::kString ? SerializeBytesTensor(t)
                                                   : std::string(static_cast<const char*>(t.raw()), t.nbytes()));
      w.Key("parameters");
      w.StartObject();
      w.Key("binary_data_size");
      w.Uint64(binary.back().size());
      w.EndObject();
    } else if (t.dtype() == DType::kString) {
      // A JSON string holds text: an element that is not UTF-8 can only travel as binary data.
      w.Key("data");
      w.StartArray();
      for (int64_t k = 0; k < t.numel(); ++k) {
        const std::string& e = t.strings()[k];
        if (!IsUtf8(e))
          Refuse(StatusCode::kInvalidArgument, "output '", name, "' element ", k,
                 " is not UTF-8, so JSON cannot carry it: request the output as binary data");
        w.String(e.data(), static_cast<rj::SizeType>(e.size()));
      }
      w.EndArray();
    } else {
      w.Key("data");
      w.StartArray();
      DispatchAll(t.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* p = t.data<T>();
        for (int64_t k = 0; k < t.numel(); ++k) WriteElement<T>(w, p[k]);
      });
      w.EndArray();
    }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();

  HttpBody body;
  body.bytes.assign(buf.GetString(), buf.GetSize());
  if (!binary.empty()) {
    body.header_length = body.bytes.size();
    for (const std::string& b : binary) body.bytes.append(b);
  }
  return body;
}

std::string ErrorJson(const std::string& message) {
  rj::StringBuffer buf;
  rj::Writer<rj::StringBuffer> w(buf);
  w.StartObject();
  w.Key("error");
  w.String(message.c_str(), static_cast<rj::SizeType>(message.size()));
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace serve
}  // namespace oneflow
