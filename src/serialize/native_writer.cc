// Writing the native format: graph and tensors -> flatbuffer + aligned raw segments, atomically.
// Tensor bytes stream from their storage straight into the file (no staging copy), so a model's
// size is bounded by the disk, not by memory or the 2 GB flatbuffer limit.
#include <filesystem>
#include <set>

#include "base/file_util.h"
#include "base/packed_strings.h"
#include "ofm_generated.h"
#include "serialize/native_layout.h"
#include "serialize/native_plan.h"

#ifndef ONEFLOW_VERSION_STRING
#define ONEFLOW_VERSION_STRING "0.0.0"
#endif

namespace oneflow {
namespace fs = std::filesystem;

const char* TensorRoleName(TensorRole role) {
  switch (role) {
    case TensorRole::kParameter: return "parameter";
    case TensorRole::kConstant: return "constant";
    case TensorRole::kAttrTensor: return "attribute tensor";
    case TensorRole::kGradient: return "gradient";
    case TensorRole::kOptimizerState: return "optimizer state";
    case TensorRole::kBuffer: return "buffer";
  }
  return "unknown";
}

const CheckpointTensor* Checkpoint::Find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

struct PendingSegment {
  std::string name;
  TensorRole role;
  Tensor tensor;
  std::string target, slot;
  uint64_t offset = 0;    // within the data area
  uint64_t checksum = 0;
  std::string packed{};   // a string tensor's elements as base/packed_strings.h lays them out

  // The bytes the file holds for the tensor: its memory, or for strings the packed run.
  const void* data() const { return tensor.dtype() == DType::kString ? packed.data() : tensor.raw(); }
  uint64_t size() const { return tensor.dtype() == DType::kString ? packed.size() : tensor.nbytes(); }
};

// What one file holds: optionally a graph, optionally checkpoint tensors and training state.
struct Contents {
  const Graph* graph = nullptr;
  const std::vector<CheckpointTensor>* tensors = nullptr;
  bool training = false;
  int64_t step = 0;
  const std::map<std::string, std::string>* training_properties = nullptr;
};

class StringSink final : public FileSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  void Write(const void* data, size_t size) override { out_->append(static_cast<const char*>(data), size); }
  size_t bytes_written() const override { return out_->size(); }

 private:
  std::string* out_;
};

void WriteZeros(FileSink& sink, uint64_t n) {
  static const unsigned char kZeros[kSegmentAlignment] = {};
  while (n > 0) {
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof(kZeros)));
    sink.Write(kZeros, k);
    n -= k;
  }
}

Offset<flatbuffers::Vector<Offset<ofm::KeyValue>>> KeyValues(FlatBufferBuilder& b,
                                                           const std::map<std::string, std::string>& kv) {
  std::vector<Offset<ofm::KeyValue>> out;
  for (const auto& [k, v] : kv) out.push_back(ofm::CreateKeyValue(b, b.CreateString(k), b.CreateString(v)));
  return b.CreateVector(out);
}

Offset<ofm::TensorType> EncodeType(FlatBufferBuilder& b, const TensorType& t) {
  std::vector<Offset<ofm::Dim>> dims;
  for (const Dim& d : t.dims)
    dims.push_back(ofm::CreateDim(b, d.known() ? d.value : -1, d.symbol.empty() ? 0 : b.CreateString(d.symbol)));
  return ofm::CreateTensorType(b, static_cast<int32_t>(t.dtype), t.has_rank, b.CreateVector(dims), t.is_sequence,
                               t.is_optional);
}

class Writer {
 public:
  int AddSegment(std::string name, TensorRole role, const Tensor& t, std::string target = {}, std::string slot = {}) {
    OF_REQUIRE(t.defined(), "tensor '", name, "' is undefined");
    OF_CHECK(DTypeSize(t.dtype()) != 0, kUnsupported, "tensor '", name, "' has dtype ", DTypeName(t.dtype()),
             ", which the native format cannot store");
    segments_.push_back({std::move(name), role, t, std::move(target), std::move(slot)});
    if (t.dtype() == DType::kString) segments_.back().packed = PackStrings(t.strings(), t.numel());
    return static_cast<int>(segments_.size() - 1);
  }

  Offset<ofm::Graph> EncodeGraph(FlatBufferBuilder& b, const Graph& g) {
    std::vector<Offset<ofm::Value>> values;
    for (const Value& v : g.values) {
      int seg = -1;
      if (v.constant.defined())
        seg = AddSegment(v.name, v.is_parameter ? TensorRole::kParameter : TensorRole::kConstant, v.constant);
      values.push_back(ofm::CreateValue(b, b.CreateString(v.name), EncodeType(b, v.type), seg, v.is_parameter));
    }
    std::vector<Offset<ofm::Node>> nodes;
    for (const Node& n : g.nodes) {
      std::vector<Offset<ofm::Attribute>> attrs;
      // Defaults filled in by schema resolution are left out, as the model did: loading resolves
      // them again, and an ONNX export of the loaded graph must not gain attributes its opset lacks.
      for (const auto& [name, a] : n.attrs.all())
        if (!n.defaulted_attrs.count(name)) attrs.push_back(EncodeAttribute(b, n, name, a));
      nodes.push_back(ofm::CreateNode(b, b.CreateString(n.name), b.CreateString(n.op_type), b.CreateString(n.domain),
                                      n.opset, b.CreateVector(n.inputs), b.CreateVector(n.outputs),
                                      b.CreateVector(attrs), b.CreateString(n.doc_string)));
    }
    std::vector<Offset<ofm::OpsetImport>> opsets;
    for (const auto& [domain, version] : g.opset_imports)
      opsets.push_back(ofm::CreateOpsetImport(b, b.CreateString(domain), version));
    return ofm::CreateGraph(b, b.CreateString(g.name), b.CreateVector(values), b.CreateVector(nodes),
                            b.CreateVector(g.inputs), b.CreateVector(g.outputs), b.CreateVector(opsets),
                            b.CreateString(g.metadata.graph_doc_string), static_cast<int32_t>(g.captured_inputs));
  }

  // Lays the segments out (64-byte aligned, in order) and computes their checksums.
  uint64_t Layout(bool checksums) {
    uint64_t offset = 0;
    for (PendingSegment& s : segments_) {
      s.offset = offset;
      offset = AlignUpChecked(offset + s.size(), s.name);
      if (checksums) s.checksum = ChunkedXxh64(s.data(), s.size(), kChecksumChunkBytes);
    }
    return offset;
  }

  Offset<flatbuffers::Vector<Offset<ofm::Segment>>> EncodeSegments(FlatBufferBuilder& b, uint32_t file, bool checksums) {
    std::vector<Offset<ofm::Segment>> out;
    for (const PendingSegment& s : segments_) {
      const Shape& shape = s.tensor.shape();
      out.push_back(ofm::CreateSegment(
          b, b.CreateString(s.name), static_cast<ofm::SegmentRole>(s.role), static_cast<int32_t>(s.tensor.dtype()),
          b.CreateVector(shape), file, s.offset, s.size(),
          checksums ? ofm::ChecksumKind::Xxh64Chunked : ofm::ChecksumKind::None, s.checksum,
          checksums ? kChecksumChunkBytes : 0, s.target.empty() ? 0 : b.CreateString(s.target),
          s.slot.empty() ? 0 : b.CreateString(s.slot)));
    }
    return b.CreateVector(out);
  }

  // Writes every segment followed by zero padding to the next 64-byte boundary.
  void WriteSegments(FileSink& sink) const {
    for (const PendingSegment& s : segments_) {
      if (s.size()) sink.Write(s.data(), s.size());
      WriteZeros(sink, native::AlignUp(s.size(), kSegmentAlignment) - s.size());
    }
  }

 private:
  static uint64_t AlignUpChecked(uint64_t v, const std::string& name) {
    OF_CHECK(v <= UINT64_MAX - kSegmentAlignment, kInvalidArgument, "tensor '", name, "' does not fit in a file");
    return native::AlignUp(v, kSegmentAlignment);
  }

  Offset<ofm::Attribute> EncodeAttribute(FlatBufferBuilder& b, const Node& n, const std::string& name,
                                         const Attribute& a) {
    auto bytes = [&](const std::string& s) {
      return b.CreateVector(reinterpret_cast<const uint8_t*>(s.data()), s.size());
    };
    auto fname = b.CreateString(name);
    switch (a.kind) {
      case AttrKind::kFloat: return ofm::CreateAttribute(b, fname, ofm::AttrKind::Float, a.f);
      case AttrKind::kInt: return ofm::CreateAttribute(b, fname, ofm::AttrKind::Int, 0, a.i);
      case AttrKind::kString: return ofm::CreateAttribute(b, fname, ofm::AttrKind::String, 0, 0, bytes(a.s));
      case AttrKind::kTensor: {
        int seg = AddSegment((n.name.empty() ? n.op_type : n.name) + "/" + name, TensorRole::kAttrTensor, a.t);
        return ofm::CreateAttribute(b, fname, ofm::AttrKind::Tensor, 0, 0, 0, seg);
      }
      case AttrKind::kFloats:
        return ofm::CreateAttribute(b, fname, ofm::AttrKind::Floats, 0, 0, 0, -1, b.CreateVector(a.floats));
      case AttrKind::kInts:
        return ofm::CreateAttribute(b, fname, ofm::AttrKind::Ints, 0, 0, 0, -1, 0, b.CreateVector(a.ints));
      case AttrKind::kStrings: {
        std::vector<Offset<ofm::Bytes>> list;
        for (const std::string& s : a.strings) list.push_back(ofm::CreateBytes(b, bytes(s)));
        return ofm::CreateAttribute(b, fname, ofm::AttrKind::Strings, 0, 0, 0, -1, 0, 0, b.CreateVector(list));
      }
      case AttrKind::kGraph: {
        OF_REQUIRE(a.graph != nullptr, n.Describe(), ": graph attribute '", name, "' holds no graph");
        auto sub = EncodeGraph(b, *a.graph);
        return ofm::CreateAttribute(b, fname, ofm::AttrKind::Graph, 0, 0, 0, -1, 0, 0, 0, sub);
      }
      case AttrKind::kType: {
        auto type = EncodeType(b, a.type);
        return ofm::CreateAttribute(b, fname, ofm::AttrKind::Type, 0, 0, 0, -1, 0, 0, 0, 0, type);
      }
      case AttrKind::kUndefined: break;
    }
    Fail(ErrorCode::kInvalidArgument, n.Describe(), ": attribute '", name, "' has no kind");
  }

  std::vector<PendingSegment> segments_;
};

// Serializes `c`: the main file goes to `main`; the segments to `external` when it is given
// (named `external_name` in the model), else after the flatbuffer in `main`.
struct Plan {
  std::string flatbuffer;
  Writer writer;
  uint64_t data_bytes = 0;
};

void BuildFlatbuffer(const Contents& c, const NativeWriteOptions& options, const std::string& external_name,
                     Plan& plan) {
  FlatBufferBuilder b(1 << 16);
  Offset<ofm::Graph> graph = 0;
  Offset<ofm::Plan> parallel_plan = 0;
  std::map<std::string, std::string> props = options.properties;
  props.emplace("written_by", "oneflow " ONEFLOW_VERSION_STRING);
  int64_t source_opset = 0;
  std::string producer, producer_version, doc_string = options.doc_string;
  if (c.graph) {
    // The source model's metadata travels with it (ONNX metadata_props become properties).
    producer_version = c.graph->metadata.producer_version;
    if (doc_string.empty()) doc_string = c.graph->metadata.doc_string;
    for (const auto& [key, value] : c.graph->metadata.metadata_props) props.emplace(key, value);
    graph = plan.writer.EncodeGraph(b, *c.graph);
    parallel_plan = EncodePlan(b, *c.graph);
    auto it = c.graph->opset_imports.find("");
    if (it != c.graph->opset_imports.end()) source_opset = it->second;
    producer = c.graph->producer;
  }
  if (c.tensors) {
    std::set<std::string> names;
    for (const CheckpointTensor& t : *c.tensors) {
      OF_REQUIRE(!t.name.empty(), "a checkpoint tensor has no name");
      OF_REQUIRE(names.insert(t.name).second, "checkpoint tensor name '", t.name, "' is used twice");
      OF_REQUIRE(t.role != TensorRole::kAttrTensor, "checkpoint tensor '", t.name, "' cannot have role ",
                 TensorRoleName(t.role));
      plan.writer.AddSegment(t.name, t.role, t.tensor, t.target, t.slot);
    }
  }
  plan.data_bytes = plan.writer.Layout(options.checksums);
  auto metadata = ofm::CreateMetadata(b, b.CreateString(producer), b.CreateString(producer_version),
                                      b.CreateString(options.source_format), source_opset,
                                      b.CreateString(doc_string), KeyValues(b, props));
  const uint32_t file = external_name.empty() ? 0 : 1;
  auto segments = plan.writer.EncodeSegments(b, file, options.checksums);
  Offset<flatbuffers::Vector<Offset<ofm::ExternalFile>>> externals = 0;
  if (file) {
    std::vector<Offset<ofm::ExternalFile>> list{ofm::CreateExternalFile(b, b.CreateString(external_name), plan.data_bytes)};
    externals = b.CreateVector(list);
  }
  Offset<ofm::Training> training = 0;
  if (c.training) {
    training = ofm::CreateTraining(b, c.step, c.training_properties ? KeyValues(b, *c.training_properties) : 0);
  }
  b.Finish(ofm::CreateModel(b, metadata, graph, parallel_plan, segments, externals, training));
  plan.flatbuffer.assign(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

void WriteMain(const Plan& plan, bool segments_inline, FileSink& sink) {
  native::Header h;
  h.flatbuffer_offset = kNativeHeaderBytes;
  h.flatbuffer_size = plan.flatbuffer.size();
  h.flatbuffer_checksum = Xxh64(plan.flatbuffer.data(), plan.flatbuffer.size());
  h.data_offset = native::AlignUp(kNativeHeaderBytes + plan.flatbuffer.size(), kSegmentAlignment);
  h.file_size = h.data_offset + (segments_inline ? plan.data_bytes : 0);
  unsigned char header[kNativeHeaderBytes];
  native::EncodeHeader(h, header);
  sink.Write(header, sizeof(header));
  sink.Write(plan.flatbuffer.data(), plan.flatbuffer.size());
  WriteZeros(sink, h.data_offset - kNativeHeaderBytes - plan.flatbuffer.size());
  if (segments_inline) plan.writer.WriteSegments(sink);
}

void WriteContents(const Contents& c, const std::string& path, const NativeWriteOptions& options) {
  OF_REQUIRE(!path.empty(), "output path is empty");
  const std::string& ext = options.external_data_file;
  if (!ext.empty()) {
    OF_REQUIRE(fs::path(ext).filename().string() == ext && ext != "." && ext != "..", "external data file '", ext,
               "' must be a plain file name (it is written next to the model)");
  }
  Plan plan;
  BuildFlatbuffer(c, options, ext, plan);
  if (!ext.empty()) {
    fs::path dir = fs::path(path).parent_path();
    WriteFileAtomically((dir / ext).string(), [&](FileSink& sink) { plan.writer.WriteSegments(sink); });
  }
  WriteFileAtomically(path, [&](FileSink& sink) { WriteMain(plan, ext.empty(), sink); });
}

}  // namespace

void WriteNativeModel(const Graph& g, const std::string& path, const NativeWriteOptions& options) {
  Contents c;
  c.graph = &g;
  WriteContents(c, path, options);
}

std::string SerializeNativeModel(const Graph& g, const NativeWriteOptions& options) {
  OF_REQUIRE(options.external_data_file.empty(), "an in-memory native model cannot use an external data file");
  Contents c;
  c.graph = &g;
  Plan plan;
  BuildFlatbuffer(c, options, "", plan);
  std::string out;
  StringSink sink(&out);
  WriteMain(plan, true, sink);
  return out;
}

void WriteCheckpoint(const Checkpoint& ckpt, const std::string& path, const NativeWriteOptions& options) {
  Contents c;
  c.graph = ckpt.graph.get();
  c.tensors = &ckpt.tensors;
  c.training = true;
  c.step = ckpt.step;
  c.training_properties = &ckpt.metadata;
  WriteContents(c, path, options);
}

}  // namespace oneflow
