// ONNX import. Protobuf classes come from the installed onnx package's onnx.proto, generated at
// build time (see CMakeLists.txt); nothing generated is committed.
#include "serialize/onnx_import.h"

#include "serialize/onnx_legacy.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "base/narrow_types.h"
#include "graph/op_schema.h"
#include "onnx-data.pb.h"
#include "onnx.pb.h"

namespace oneflow {
namespace fs = std::filesystem;

namespace {

DType ToDType(int32_t elem_type, const std::string& what) {
  OF_CHECK(IsKnownDType(elem_type) || elem_type == static_cast<int32_t>(DType::kString), kUnsupported, what, " has element type ",
           onnx::TensorProto_DataType_IsValid(elem_type)
               ? onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type))
               : std::to_string(elem_type),
           ", which is not supported");
  return static_cast<DType>(elem_type);
}

TensorType ToTensorType(const onnx::TypeProto& tp, const std::string& what);

// seq(tensor), optional(tensor) and optional(seq(tensor)); maps, sparse tensors and deeper nesting
// (a sequence of sequences) are refused.
TensorType ToWrappedType(const onnx::TypeProto& tp, const std::string& what) {
  if (tp.has_sequence_type()) {
    OF_CHECK(tp.sequence_type().has_elem_type(), kInvalidModel, what, " is a sequence with no element type");
    const onnx::TypeProto& elem = tp.sequence_type().elem_type();
    OF_CHECK(elem.has_tensor_type(), kUnsupported, what,
             " is a sequence of non-tensors (only sequences of tensors are supported)");
    return TensorType::SequenceOf(ToTensorType(elem, what));
  }
  if (tp.has_optional_type()) {
    OF_CHECK(tp.optional_type().has_elem_type(), kInvalidModel, what, " is an optional with no element type");
    const onnx::TypeProto& elem = tp.optional_type().elem_type();
    OF_CHECK(elem.has_tensor_type() || elem.has_sequence_type(), kUnsupported, what,
             " is an optional of something other than a tensor or a sequence of tensors");
    return TensorType::OptionalOf(elem.has_tensor_type() ? ToTensorType(elem, what) : ToWrappedType(elem, what));
  }
  Fail(ErrorCode::kUnsupported, what, " is a ", tp.has_map_type() ? "map" : tp.has_sparse_tensor_type() ?
       "sparse tensor" : "value of an unknown kind", " (tensors, sequences of tensors and optionals are supported)");
}

TensorType ToTensorType(const onnx::TypeProto& tp, const std::string& what) {
  if (!tp.has_tensor_type()) return ToWrappedType(tp, what);
  const auto& tt = tp.tensor_type();
  OF_CHECK(tt.has_elem_type(), kInvalidModel, what, " has no element type");
  TensorType t;
  t.dtype = ToDType(tt.elem_type(), what);
  if (!tt.has_shape()) return t;
  t.has_rank = true;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      OF_CHECK(d.dim_value() >= 0, kInvalidModel, what, " has negative dimension ", d.dim_value());
      t.dims.push_back(Dim::Known(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      t.dims.push_back(Dim::Symbol(d.dim_param()));
    } else {
      t.dims.push_back(Dim::Unknown());
    }
  }
  return t;
}

struct ImportContext {
  std::string external_data_dir;  // empty: external data refused
};

// Reads `length` bytes at `offset` of an external data file, confined to the model directory.
// `expected` is the tensor's size in bytes, checked before reading so a bad length allocates nothing.
std::string ReadExternalData(const ImportContext& ctx, const onnx::TensorProto& tp, size_t expected) {
  std::string location;
  long long offset = 0, length = -1;
  for (const auto& kv : tp.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::strtoll(kv.value().c_str(), nullptr, 10);
    else if (kv.key() == "length") length = std::strtoll(kv.value().c_str(), nullptr, 10);
  }
  OF_CHECK(!location.empty(), kInvalidModel, "tensor '", tp.name(), "' has external data without a location");
  OF_CHECK(!ctx.external_data_dir.empty(), kInvalidArgument, "tensor '", tp.name(),
           "' uses external data, but the model was loaded from memory without a base directory");
  fs::path rel(location);
  OF_CHECK(!rel.is_absolute(), kInvalidModel, "external data path '", location, "' of tensor '", tp.name(),
           "' is absolute; it must be relative to the model's directory");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::path(ctx.external_data_dir), ec);
  fs::path full = fs::weakly_canonical(base / rel, ec);
  OF_CHECK(!ec, kIo, "cannot resolve external data path '", location, "': ", ec.message());
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  OF_CHECK(b == base.end(), kInvalidModel, "external data path '", location, "' of tensor '", tp.name(),
           "' escapes the model's directory");
  OF_CHECK(fs::is_regular_file(full, ec), kNotFound, "external data file '", full.string(), "' of tensor '", tp.name(),
           "' does not exist or is not a regular file");
  std::ifstream in(full, std::ios::binary);
  OF_CHECK(in.good(), kNotFound, "external data file '", full.string(), "' of tensor '", tp.name(), "' cannot be opened");
  in.seekg(0, std::ios::end);
  long long file_size = static_cast<long long>(in.tellg());
  OF_CHECK(offset >= 0 && offset <= file_size, kInvalidModel, "external data offset ", offset, " of tensor '",
           tp.name(), "' is outside '", location, "' (", file_size, " bytes)");
  if (length < 0) length = file_size - offset;
  OF_CHECK(static_cast<unsigned long long>(length) == expected, kInvalidModel, "external data of tensor '", tp.name(),
           "' has ", length, " bytes; its type needs ", expected);
  OF_CHECK(length <= file_size - offset, kInvalidModel, "external data of tensor '", tp.name(), "' (", length,
           " bytes at offset ", offset, ") runs past the end of '", location, "'");
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  OF_CHECK(in.good() || length == 0, kIo, "reading external data of tensor '", tp.name(), "' failed");
  return bytes;
}

template <typename T, typename Field>
void CopyTypedField(const Field& field, Tensor& t, const std::string& name) {
  OF_CHECK(field.size() == t.numel(), kInvalidModel, "tensor '", name, "' has ", field.size(),
           " values for shape ", ShapeToString(t.shape()));
  T* dst = t.data<T>();
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<T>(field.Get(i));
}

// Number of values in the typed field that holds `dtype`'s data (raw_data absent).
int TypedFieldSize(const onnx::TensorProto& tp, DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return tp.float_data_size();
    case DType::kFloat64: return tp.double_data_size();
    case DType::kInt64: return tp.int64_data_size();
    case DType::kUInt32:
    case DType::kUInt64: return tp.uint64_data_size();
    default: return tp.int32_data_size();
  }
}

// int4/uint4/int2/uint2/float4e2m1: ONNX packs two 4-bit or four 2-bit elements per byte (first
// element in the low bits), in raw_data, external data, or int32_data (one packed byte per entry);
// in memory each element takes a byte (base/narrow_types.h).
Tensor SubByteTensorFromProto(const onnx::TensorProto& tp, const ImportContext& ctx, DType dtype, const Shape& shape) {
  const std::string& name = tp.name();
  const int64_t numel = NumElements(shape);
  const size_t packed_bytes = PackedByteCount(dtype, numel);
  std::string packed;
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    packed = ReadExternalData(ctx, tp, packed_bytes);
  } else if (tp.has_raw_data()) {
    packed = tp.raw_data();
  } else {
    packed.resize(static_cast<size_t>(tp.int32_data_size()));
    for (int i = 0; i < tp.int32_data_size(); ++i) packed[static_cast<size_t>(i)] = static_cast<char>(tp.int32_data(i));
  }
  OF_CHECK(packed.size() == packed_bytes, kInvalidModel, "tensor '", name, "' has ", packed.size(), " bytes of packed ",
           DTypeName(dtype), " data; shape ", ShapeToString(shape), " needs ", packed_bytes, " (",
           8 / NarrowBitWidth(dtype), " elements per byte)");
  Tensor t = Tensor::Uninitialized(dtype, shape);
  UnpackSubByte(dtype, reinterpret_cast<const uint8_t*>(packed.data()), numel, static_cast<uint8_t*>(t.raw()));
  return t;
}

}  // namespace

Tensor TensorFromProto(const onnx::TensorProto& tp, const ImportContext& ctx) {
  const std::string& name = tp.name();
  OF_CHECK(tp.has_data_type(), kInvalidModel, "tensor '", name, "' has no data type");
  DType dtype = ToDType(tp.data_type(), "tensor '" + name + "'");
  Shape shape(tp.dims().begin(), tp.dims().end());
  for (int64_t d : shape) OF_CHECK(d >= 0, kInvalidModel, "tensor '", name, "' has negative dimension ", d);
  // The size is checked against the data actually present before anything is allocated, so a
  // corrupt shape cannot make the loader request an absurd buffer.
  int64_t numel = 0;
  try {
    numel = NumElements(shape);
  } catch (const Error&) {
    Fail(ErrorCode::kInvalidModel, "tensor '", name, "' has shape ", ShapeToString(shape), ", which is too large");
  }
  const size_t elem = DTypeSize(dtype);
  OF_CHECK(elem == 0 || static_cast<uint64_t>(numel) <= SIZE_MAX / elem, kInvalidModel, "tensor '", name,
           "' has shape ", ShapeToString(shape), ", which is too large");
  const size_t nbytes = static_cast<size_t>(numel) * elem;
  if (dtype == DType::kString) {
    // Strings live in string_data only (raw and external data are byte layouts; ONNX has none for them).
    OF_CHECK(!tp.has_raw_data() && tp.data_location() != onnx::TensorProto::EXTERNAL, kInvalidModel, "tensor '",
             name, "' is a string tensor with raw or external data (strings are stored in string_data)");
    OF_CHECK(tp.string_data_size() == numel, kInvalidModel, "tensor '", name, "' has ", tp.string_data_size(),
             " strings for shape ", ShapeToString(shape));
    Tensor t(dtype, shape);
    std::string* dst = t.strings();
    for (int i = 0; i < tp.string_data_size(); ++i) dst[i] = tp.string_data(i);
    return t;
  }
  if (NarrowBitWidth(dtype) < 8) return SubByteTensorFromProto(tp, ctx, dtype, shape);
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string bytes = ReadExternalData(ctx, tp, nbytes);
    OF_CHECK(bytes.size() == nbytes, kInvalidModel, "external data of tensor '", name, "' has ", bytes.size(),
             " bytes; ", DTypeName(dtype), ShapeToString(shape), " needs ", nbytes);
    Tensor t = Tensor::Uninitialized(dtype, shape);
    if (nbytes) std::memcpy(t.raw(), bytes.data(), nbytes);
    return t;
  }
  if (tp.has_raw_data()) {
    OF_CHECK(tp.raw_data().size() == nbytes, kInvalidModel, "tensor '", name, "' has ", tp.raw_data().size(),
             " bytes of raw data; ", DTypeName(dtype), ShapeToString(shape), " needs ", nbytes);
    Tensor t = Tensor::Uninitialized(dtype, shape);
    if (nbytes) std::memcpy(t.raw(), tp.raw_data().data(), nbytes);
    if (dtype == DType::kBool) {
      // Any non-zero byte is true; kernels rely on bools being exactly 0 or 1.
      auto* b = static_cast<unsigned char*>(t.raw());
      for (size_t i = 0; i < nbytes; ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  OF_CHECK(TypedFieldSize(tp, dtype) == numel, kInvalidModel, "tensor '", name, "' has ", TypedFieldSize(tp, dtype),
           " values for shape ", ShapeToString(shape));
  Tensor t(dtype, shape);
  switch (dtype) {
    case DType::kFloat32: CopyTypedField<float>(tp.float_data(), t, name); break;
    case DType::kFloat64: CopyTypedField<double>(tp.double_data(), t, name); break;
    case DType::kInt64: CopyTypedField<int64_t>(tp.int64_data(), t, name); break;
    case DType::kUInt32: CopyTypedField<uint32_t>(tp.uint64_data(), t, name); break;
    case DType::kUInt64: CopyTypedField<uint64_t>(tp.uint64_data(), t, name); break;
    case DType::kInt32: CopyTypedField<int32_t>(tp.int32_data(), t, name); break;
    case DType::kInt16: CopyTypedField<int16_t>(tp.int32_data(), t, name); break;
    case DType::kInt8: CopyTypedField<int8_t>(tp.int32_data(), t, name); break;
    case DType::kUInt16: CopyTypedField<uint16_t>(tp.int32_data(), t, name); break;
    case DType::kUInt8: CopyTypedField<uint8_t>(tp.int32_data(), t, name); break;
    case DType::kBool: CopyTypedField<bool>(tp.int32_data(), t, name); break;
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E4M3FNUZ:
    case DType::kFloat8E5M2:
    case DType::kFloat8E5M2FNUZ:
    case DType::kFloat8E8M0: {
      // 8-bit floats: one bit pattern per int32_data entry.
      uint8_t* dst = static_cast<uint8_t*>(t.raw());
      for (int i = 0; i < tp.int32_data_size(); ++i) dst[i] = static_cast<uint8_t>(tp.int32_data(i));
      break;
    }
    case DType::kFloat16:
    case DType::kBFloat16: {
      // 16-bit floats are stored as their bit patterns in int32_data.
      OF_CHECK(tp.int32_data_size() == t.numel(), kInvalidModel, "tensor '", name, "' has ",
               tp.int32_data_size(), " values for shape ", ShapeToString(shape));
      uint16_t* dst = static_cast<uint16_t*>(t.raw());
      for (int i = 0; i < tp.int32_data_size(); ++i) dst[i] = static_cast<uint16_t>(tp.int32_data(i));
      break;
    }
    default: Fail(ErrorCode::kUnsupported, "tensor '", name, "' has unsupported dtype ", DTypeName(dtype));
  }
  return t;
}

namespace {

// The graphs enclosing a subgraph being imported, innermost first: where a name the subgraph does
// not define resolves (ONNX lets a subgraph read any value of an enclosing graph by name).
struct OuterScope {
  const Graph* graph;
  const OuterScope* outer;
  bool Has(const std::string& name) const {
    return graph->FindValue(name) != kNoValue || (outer != nullptr && outer->Has(name));
  }
};

// Deep subgraph nesting comes only from a hostile file; the limit keeps the recursion off the stack's end.
constexpr int kMaxSubgraphDepth = 64;

void ImportGraphBody(const onnx::GraphProto& gp, const ImportContext& ctx, const OuterScope* outer, int depth,
                     Graph& g);

Attribute AttributeFromProto(const onnx::AttributeProto& ap, const ImportContext& ctx, const std::string& where) {
  OF_CHECK(ap.ref_attr_name().empty(), kInvalidModel, where, ": attribute '", ap.name(),
           "' refers to a function attribute outside a function");
  switch (ap.type()) {
    case onnx::AttributeProto::FLOAT: return Attribute::Float(ap.f());
    case onnx::AttributeProto::INT: return Attribute::Int(ap.i());
    case onnx::AttributeProto::STRING: return Attribute::String(ap.s());
    case onnx::AttributeProto::TENSOR: return Attribute::TensorValue(TensorFromProto(ap.t(), ctx));
    case onnx::AttributeProto::FLOATS: return Attribute::Floats({ap.floats().begin(), ap.floats().end()});
    case onnx::AttributeProto::INTS: return Attribute::Ints({ap.ints().begin(), ap.ints().end()});
    case onnx::AttributeProto::STRINGS: return Attribute::Strings({ap.strings().begin(), ap.strings().end()});
    case onnx::AttributeProto::TYPE_PROTO:
      return Attribute::Type(ToTensorType(ap.tp(), where + ": attribute '" + ap.name() + "'"));
    case onnx::AttributeProto::UNDEFINED: {
      // Writers before IR v3 left the type out; infer it from the one field that is set.
      if (ap.has_f()) return Attribute::Float(ap.f());
      if (ap.has_i()) return Attribute::Int(ap.i());
      if (ap.has_s()) return Attribute::String(ap.s());
      if (ap.has_t()) return Attribute::TensorValue(TensorFromProto(ap.t(), ctx));
      if (ap.floats_size()) return Attribute::Floats({ap.floats().begin(), ap.floats().end()});
      if (ap.ints_size()) return Attribute::Ints({ap.ints().begin(), ap.ints().end()});
      Fail(ErrorCode::kInvalidModel, where, ": attribute '", ap.name(), "' has no type");
    }
    default:
      Fail(ErrorCode::kUnsupported, where, ": attribute '", ap.name(), "' is of kind ",
           onnx::AttributeProto_AttributeType_Name(ap.type()),
           " (sparse tensors and lists of graphs or type protos are not supported)");
  }
}

// The value `name` of `g`; a name `g` does not define but an enclosing graph does becomes a captured
// input of `g` (appended to `captures`). Anything else is an error naming `what` reads it.
int ResolveName(Graph& g, const OuterScope* outer, std::vector<std::string>& captures, const std::string& name,
                const std::string& what) {
  int id = g.FindValue(name);
  if (id != kNoValue) return id;
  OF_CHECK(outer != nullptr && outer->Has(name), kInvalidModel, what, " reads '", name, "', which is not ",
           outer != nullptr ? "defined in this subgraph or an enclosing graph"
                            : "a graph input, an initializer or the output of any node");
  captures.push_back(name);
  return g.AddValue(name);
}

// Imports the subgraph attributes of node `np` (in `g`, enclosed by `outer`) into `n`. Every outer
// value any of them reads becomes a trailing input of `n`, and each subgraph gets the whole list
// as its trailing inputs in the same order (Graph::captured_inputs), whether it reads them or not,
// so the node's inputs mean the same to each of its subgraphs.
void ImportSubgraphs(const onnx::NodeProto& np, const ImportContext& ctx, Graph& g, const OuterScope* outer,
                     std::vector<std::string>& captures, int depth, Node& n) {
  OF_CHECK(depth < kMaxSubgraphDepth, kUnsupported, n.Describe(), ": subgraphs nest deeper than ",
           kMaxSubgraphDepth, " levels");
  std::vector<std::pair<std::string, std::unique_ptr<Graph>>> subgraphs;
  std::vector<std::string> read;  // outer names the subgraphs read, first use first
  const OuterScope scope{&g, outer};
  for (const auto& ap : np.attribute()) {
    if (ap.type() != onnx::AttributeProto::GRAPH) continue;
    auto sub = std::make_unique<Graph>();
    sub->opset_imports = g.opset_imports;  // a subgraph uses the model's opsets
    try {
      ImportGraphBody(ap.g(), ctx, &scope, depth + 1, *sub);
    } catch (const Error& e) {
      throw Error(e.code(), n.Describe() + ", subgraph '" + ap.name() + "': " + e.what());
    }
    const size_t formal = sub->inputs.size() - sub->captured_inputs;
    for (size_t i = formal; i < sub->inputs.size(); ++i) {
      const std::string& name = sub->values[static_cast<size_t>(sub->inputs[i])].name;
      if (std::find(read.begin(), read.end(), name) == read.end()) read.push_back(name);
    }
    subgraphs.emplace_back(ap.name(), std::move(sub));
  }
  for (const std::string& name : read)
    n.inputs.push_back(ResolveName(g, outer, captures, name, n.Describe() + " (in a subgraph)"));
  for (auto& [attr, sub] : subgraphs) {
    const size_t formal = sub->inputs.size() - sub->captured_inputs;
    sub->inputs.resize(formal);
    for (const std::string& name : read) {
      int id = sub->FindValue(name);
      if (id == kNoValue) id = sub->AddValue(name);  // read by a sibling subgraph only
      sub->inputs.push_back(id);
    }
    sub->captured_inputs = read.size();
    n.attrs.set(attr, Attribute::Subgraph(std::shared_ptr<const Graph>(std::move(sub))));
  }
}

// Fills `g` from `gp`: initializers, inputs, nodes, outputs. For a subgraph, `outer` holds the
// enclosing graphs and names found there become captured inputs (Graph::captured_inputs).
void ImportGraphBody(const onnx::GraphProto& gp, const ImportContext& ctx, const OuterScope* outer, int depth,
                     Graph& g) {
  g.name = gp.name();
  OF_CHECK(gp.sparse_initializer_size() == 0, kUnsupported, "sparse initializers are not supported");
  std::set<std::string> initializer_names;
  for (const auto& tp : gp.initializer()) {
    OF_CHECK(!tp.name().empty(), kInvalidModel, "an initializer has no name");
    int id = g.AddConstant(tp.name(), TensorFromProto(tp, ctx));
    g.values[static_cast<size_t>(id)].is_parameter = outer == nullptr;  // a subgraph's are not trained
    initializer_names.insert(tp.name());
  }
  for (const auto& vi : gp.input()) {
    // Before IR v4 initializers were also listed as inputs; they stay constants here.
    if (initializer_names.count(vi.name())) continue;
    OF_CHECK(!vi.name().empty(), kInvalidModel, "a graph input has no name");
    // A subgraph's inputs may leave the type out (the node's inputs give it).
    OF_CHECK(vi.has_type() || outer != nullptr, kInvalidModel, "graph input '", vi.name(), "' has no type");
    TensorType type;
    const bool untyped_subgraph_input = outer != nullptr && (!vi.has_type() || (vi.type().has_tensor_type() &&
                                                                               !vi.type().tensor_type().has_elem_type()));
    if (!untyped_subgraph_input) type = ToTensorType(vi.type(), "graph input '" + vi.name() + "'");
    int id = g.AddValue(vi.name(), type);
    g.inputs.push_back(id);
  }
  // Create node outputs first so nodes listed out of order still resolve.
  for (const auto& np : gp.node()) {
    for (const std::string& out : np.output()) {
      if (out.empty()) continue;
      OF_CHECK(g.FindValue(out) == kNoValue, kInvalidModel, "value '", out, "' is produced twice (by node '",
               np.name(), "' and earlier)");
      g.AddValue(out);
    }
  }
  for (const auto& vi : gp.value_info()) {
    int id = g.FindValue(vi.name());
    if (id == kNoValue || !vi.has_type() || vi.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) continue;
    if (!g.values[static_cast<size_t>(id)].constant.defined()) {
      g.values[static_cast<size_t>(id)].type = ToTensorType(vi.type(), "value '" + vi.name() + "'");
      g.metadata.annotated_values.push_back(vi.name());
    }
  }
  std::vector<std::string> captures;  // outer names this graph reads, in first-use order
  for (const auto& np : gp.node()) {
    Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.doc_string = np.doc_string();
    OF_CHECK(!n.op_type.empty(), kInvalidModel, "node '", n.name, "' has no op_type");
    auto opset = g.opset_imports.find(n.domain);
    OF_CHECK(opset != g.opset_imports.end(), kUnsupported, "node ", n.name.empty() ? n.op_type : "'" + n.name + "'",
             " uses domain '", n.domain, "', which the model does not import (op '", n.op_type, "')");
    n.opset = opset->second;
    for (const std::string& in : np.input())
      n.inputs.push_back(in.empty() ? kNoValue : ResolveName(g, outer, captures, in, n.Describe() + ": input"));
    for (const std::string& out : np.output()) n.outputs.push_back(out.empty() ? kNoValue : g.FindValue(out));
    bool has_subgraphs = false;
    for (const auto& ap : np.attribute()) {
      OF_CHECK(!ap.name().empty(), kInvalidModel, n.Describe(), ": an attribute has no name");
      if (ap.type() == onnx::AttributeProto::GRAPH) {
        has_subgraphs = true;
        continue;
      }
      n.attrs.set(ap.name(), AttributeFromProto(ap, ctx, n.Describe()));
    }
    if (has_subgraphs) ImportSubgraphs(np, ctx, g, outer, captures, depth, n);
    g.nodes.push_back(std::move(n));
  }
  for (const auto& vi : gp.output()) {
    int id = outer == nullptr ? g.FindValue(vi.name())
                              : ResolveName(g, outer, captures, vi.name(), "subgraph output");
    OF_CHECK(id != kNoValue, kInvalidModel, "graph output '", vi.name(), "' is not produced by any node");
    if (vi.has_type() && vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET &&
        !g.values[static_cast<size_t>(id)].constant.defined()) {
      // A subgraph's outputs may leave the element type out (onnx's own If/Loop test models do).
      const bool untyped = vi.type().has_tensor_type() && !vi.type().tensor_type().has_elem_type();
      Value& v = g.values[static_cast<size_t>(id)];
      if (!untyped && v.type.unknown()) v.type = ToTensorType(vi.type(), "graph output '" + vi.name() + "'");
    }
    g.outputs.push_back(id);
  }
  OF_CHECK(!g.outputs.empty(), kInvalidModel, outer != nullptr ? "a subgraph" : "the graph", " has no outputs");
  for (const std::string& name : captures) g.inputs.push_back(g.FindValue(name));
  g.captured_inputs = captures.size();
  // Opsets 1-12: the nodes in their opset-13 forms (onnx_legacy.h), so each op has one definition.
  auto onnx_opset = g.opset_imports.find("");
  if (onnx_opset != g.opset_imports.end() && onnx_opset->second < kMinOnnxOpset)
    UpgradeLegacyOnnxOpset(g, onnx_opset->second);
}

Graph GraphFromModel(const onnx::ModelProto& model, const ImportContext& ctx) {
  OF_CHECK(model.has_graph(), kInvalidModel, "the ONNX model has no graph");
  Graph g;
  g.producer = model.producer_name();
  const onnx::GraphProto& gp = model.graph();
  g.metadata.producer_version = model.producer_version();
  g.metadata.domain = model.domain();
  g.metadata.model_version = model.model_version();
  g.metadata.doc_string = model.doc_string();
  g.metadata.graph_doc_string = gp.doc_string();
  for (const auto& kv : model.metadata_props()) g.metadata.metadata_props.emplace_back(kv.key(), kv.value());

  for (const auto& os : model.opset_import()) {
    std::string domain = os.domain() == "ai.onnx" ? "" : os.domain();
    g.opset_imports[domain] = static_cast<int>(std::min<int64_t>(os.version(), INT_MAX));
  }
  if (model.opset_import_size() == 0) g.opset_imports[""] = 1;  // IR v2 models: opset 1
  auto onnx_opset = g.opset_imports.find("");
  if (onnx_opset != g.opset_imports.end()) {
    OF_CHECK(onnx_opset->second >= kMinLegacyOnnxOpset, kUnsupported, "the model uses ONNX opset ",
             onnx_opset->second, "; opsets ", kMinLegacyOnnxOpset, " to ", kMaxOnnxOpset,
             " are supported (convert it with onnx.version_converter)");
    OF_CHECK(onnx_opset->second <= kMaxOnnxOpset, kUnsupported, "the model uses ONNX opset ", onnx_opset->second,
             ", newer than the newest supported opset ", kMaxOnnxOpset);
  }
  ImportGraphBody(gp, ctx, nullptr, 0, g);
  return g;
}

}  // namespace

Graph LoadOnnxBytes(const void* data, size_t size, const std::string& external_data_dir) {
  OF_REQUIRE(data != nullptr || size == 0, "model data is null");
  OF_CHECK(size > 0, kInvalidModel, "the model is empty (0 bytes)");
  OF_CHECK(size <= static_cast<size_t>(INT_MAX), kUnsupported, "ONNX protobufs over 2 GB are not supported; "
           "store weights as external data");
  onnx::ModelProto model;
  OF_CHECK(model.ParseFromArray(data, static_cast<int>(size)), kInvalidModel,
           "the data is not a valid ONNX model (protobuf parse failed; the file may be truncated or not ONNX)");
  ImportContext ctx;
  ctx.external_data_dir = external_data_dir;
  return GraphFromModel(model, ctx);
}

Tensor LoadOnnxTensorBytes(const void* data, size_t size, std::string* out_name) {
  OF_REQUIRE(data != nullptr || size == 0, "tensor data is null");
  OF_CHECK(size <= static_cast<size_t>(INT_MAX), kUnsupported, "tensor protobufs over 2 GB are not supported");
  onnx::TensorProto tp;
  OF_CHECK(tp.ParseFromArray(data, static_cast<int>(size)), kInvalidModel, "the data is not a valid ONNX TensorProto");
  if (out_name) *out_name = tp.name();
  return TensorFromProto(tp, ImportContext{});
}

namespace {

Tensor SequenceFromProto(const onnx::SequenceProto& sp, DType declared) {
  OF_CHECK(sp.elem_type() == onnx::SequenceProto::TENSOR || sp.tensor_values_size() == 0, kUnsupported,
           "sequence '", sp.name(), "' holds non-tensors (only sequences of tensors are supported)");
  std::vector<Tensor> elements;
  for (const auto& tp : sp.tensor_values()) elements.push_back(TensorFromProto(tp, ImportContext{}));
  DType dtype = elements.empty() ? declared : elements[0].dtype();
  for (const Tensor& e : elements)
    OF_CHECK(e.dtype() == dtype, kInvalidArgument, "sequence '", sp.name(), "' mixes ", DTypeName(dtype), " and ",
             DTypeName(e.dtype()), " elements");
  return Tensor::Sequence(dtype, std::move(elements));
}

}  // namespace

Tensor LoadOnnxValueBytes(const void* data, size_t size, const TensorType& type, std::string* out_name) {
  if (type.is_tensor()) return LoadOnnxTensorBytes(data, size, out_name);
  OF_REQUIRE(data != nullptr || size == 0, "value data is null");
  OF_CHECK(size <= static_cast<size_t>(INT_MAX), kUnsupported, "value protobufs over 2 GB are not supported");
  if (!type.is_optional) {
    onnx::SequenceProto sp;
    OF_CHECK(sp.ParseFromArray(data, static_cast<int>(size)), kInvalidModel, "the data is not a valid ONNX SequenceProto");
    if (out_name) *out_name = sp.name();
    return SequenceFromProto(sp, type.dtype);
  }
  onnx::OptionalProto op;
  OF_CHECK(op.ParseFromArray(data, static_cast<int>(size)), kInvalidModel, "the data is not a valid ONNX OptionalProto");
  if (out_name) *out_name = op.name();
  if (op.has_tensor_value()) return TensorFromProto(op.tensor_value(), ImportContext{});
  if (op.has_sequence_value()) return SequenceFromProto(op.sequence_value(), type.dtype);
  return Tensor::None(type.dtype);
}

Graph LoadOnnxFile(const std::string& path) {
  std::error_code ec;
  OF_CHECK(fs::exists(path, ec), kNotFound, "model file '", path, "' does not exist");
  OF_CHECK(!fs::is_directory(path, ec), kInvalidArgument, "model path '", path, "' is a directory");
  std::ifstream in(path, std::ios::binary);
  OF_CHECK(in.good(), kIo, "cannot open model file '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  try {
    return LoadOnnxBytes(bytes.data(), bytes.size(), dir.string());
  } catch (const Error& e) {
    throw Error(e.code(), "'" + path + "': " + e.what());
  }
}

}  // namespace oneflow
