// ONNX export, the inverse of onnx_import.cc: Graph -> ModelProto, written atomically, with the
// large initializers optionally in an external data file (ONNX's location/offset/length fields).
#include "serialize/onnx_export.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <random>
#include <set>
#include <utility>

#include "base/file_util.h"
#include "base/narrow_types.h"
#include "graph/op_schema.h"
#include "onnx.pb.h"

#ifndef ONEFLOW_VERSION_STRING
#define ONEFLOW_VERSION_STRING "0.0.0"
#endif

namespace oneflow {
namespace {

constexpr size_t kExternalAlignment = 64;  // each tensor's offset in the data file (cache line)

// The IR version we stamp: the oldest that may carry `opset` of the default domain (onnx/helper.py
// VERSION_TABLE), not the source file's. What we write (raw tensors of our dtypes, dim_param,
// external data, metadata) needs nothing newer, and readers refuse IR versions they do not know
// (onnxruntime 1.31 stops at 13 while onnx 1.23 stamps 14 on every model it makes). IR 4 is the
// floor: from it on initializers need not be listed as graph inputs, and we do not list them.
int64_t MinIrVersionForOpset(int opset) {
  static const std::pair<int, int64_t> kTable[] = {{28, 14}, {25, 13}, {24, 12}, {23, 11}, {21, 10}, {19, 9},
                                                   {15, 8},  {12, 7}};
  for (const auto& [first_opset, ir] : kTable)
    if (opset >= first_opset) return ir;
  return 4;
}

void RefuseInternalOps(const Graph& g) {
  for (const Node& n : g.nodes) {
    OF_CHECK(n.domain != kOneflowDomain, kInvalidArgument, "cannot export ", n.Describe(), " of the internal '",
             kOneflowDomain, "' domain: it comes from an optimization pass, and exports are of model graphs "
             "(export the graph as loaded, not the optimized one)");
  }
}

void FillType(const TensorType& t, onnx::TypeProto* tp) {
  if (t.is_optional) return FillType(t.Unwrapped(), tp->mutable_optional_type()->mutable_elem_type());
  if (t.is_sequence) return FillType(t.Element(), tp->mutable_sequence_type()->mutable_elem_type());
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(t.dtype));
  if (!t.has_rank) return;
  auto* shape = tt->mutable_shape();
  for (const Dim& d : t.dims) {
    auto* dim = shape->add_dim();
    if (d.known()) dim->set_dim_value(d.value);
    else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
  }
}

void FillValueInfo(const Value& v, onnx::ValueInfoProto* vi) {
  vi->set_name(v.name);
  if (v.type.dtype != DType::kUndefined) FillType(v.type, vi->mutable_type());
}

void FillTensorHeader(const Tensor& t, const std::string& name, onnx::TensorProto* tp) {
  OF_CHECK(t.defined() && DTypeSize(t.dtype()) > 0, kUnsupported, "tensor '", name, "' has dtype ",
           DTypeName(t.dtype()), ", which cannot be exported");
  tp->set_name(name);
  tp->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) tp->add_dims(d);
}

void FillTensorInline(const Tensor& t, const std::string& name, onnx::TensorProto* tp) {
  FillTensorHeader(t, name, tp);
  if (t.dtype() == DType::kString) {  // ONNX keeps strings in string_data, never raw bytes
    for (int64_t i = 0; i < t.numel(); ++i) tp->add_string_data(t.strings()[i]);
    return;
  }
  if (NarrowBitWidth(t.dtype()) < 8) {  // ONNX packs the sub-byte types; memory holds a byte each
    std::string packed(PackedByteCount(t.dtype(), t.numel()), '\0');
    PackSubByte(t.dtype(), static_cast<const uint8_t*>(t.raw()), t.numel(), reinterpret_cast<uint8_t*>(packed.data()));
    tp->set_raw_data(std::move(packed));
    return;
  }
  tp->set_raw_data(t.raw(), t.nbytes());
}

void FillSubgraph(const Graph& sub, const std::vector<std::string>& captured_names, onnx::GraphProto* gp);

void FillAttribute(const std::string& name, const Attribute& a, const Node& n, const Graph& g,
                   onnx::AttributeProto* ap) {
  ap->set_name(name);
  using AP = onnx::AttributeProto;
  switch (a.kind) {
    case AttrKind::kFloat: ap->set_type(AP::FLOAT); ap->set_f(a.f); break;
    case AttrKind::kInt: ap->set_type(AP::INT); ap->set_i(a.i); break;
    case AttrKind::kString: ap->set_type(AP::STRING); ap->set_s(a.s); break;
    case AttrKind::kTensor: ap->set_type(AP::TENSOR); FillTensorInline(a.t, "", ap->mutable_t()); break;
    case AttrKind::kFloats:
      ap->set_type(AP::FLOATS);
      for (float f : a.floats) ap->add_floats(f);
      break;
    case AttrKind::kInts:
      ap->set_type(AP::INTS);
      for (int64_t i : a.ints) ap->add_ints(i);
      break;
    case AttrKind::kStrings:
      ap->set_type(AP::STRINGS);
      for (const std::string& s : a.strings) ap->add_strings(s);
      break;
    case AttrKind::kGraph: {
      ap->set_type(AP::GRAPH);
      // The subgraph reads its captured values by the names they have in `g` now (a pass may
      // have rewired the node to another value since import).
      std::vector<std::string> captured;
      for (size_t i = n.inputs.size() - a.graph->captured_inputs; i < n.inputs.size(); ++i)
        captured.push_back(g.values[static_cast<size_t>(n.inputs[i])].name);
      FillSubgraph(*a.graph, captured, ap->mutable_g());
      break;
    }
    case AttrKind::kType: ap->set_type(AP::TYPE_PROTO); FillType(a.type, ap->mutable_tp()); break;
    default:
      Fail(ErrorCode::kInvalidArgument, n.Describe(), ": attribute '", name, "' has no value to export");
  }
}

void FillNode(const Graph& g, const Node& n, onnx::NodeProto* np) {
  if (!n.name.empty()) np->set_name(n.name);
  np->set_op_type(n.op_type);
  if (!n.domain.empty()) np->set_domain(n.domain);
  if (!n.doc_string.empty()) np->set_doc_string(n.doc_string);
  // Values the node's subgraphs capture are implicit in ONNX: the subgraphs name them.
  const size_t declared = n.inputs.size() - CapturedInputCount(n.attrs);
  for (size_t i = 0; i < declared; ++i)
    np->add_input(n.inputs[i] == kNoValue ? "" : g.values[static_cast<size_t>(n.inputs[i])].name);
  for (int v : n.outputs) np->add_output(v == kNoValue ? "" : g.values[static_cast<size_t>(v)].name);
  for (const auto& [name, a] : n.attrs.all()) {
    if (n.defaulted_attrs.count(name)) continue;
    FillAttribute(name, a, n, g, np->add_attribute());
  }
}

std::vector<int> ExportOrder(const Graph& g);

// A subgraph as ONNX holds it: its formal inputs only, its captured values read by the names
// `captured_names` gives them (the enclosing graph's), constants inline.
void FillSubgraph(const Graph& sub, const std::vector<std::string>& captured_names, onnx::GraphProto* gp) {
  Graph g = sub;
  const size_t formal = g.inputs.size() - g.captured_inputs;
  OF_ASSERT(captured_names.size() == g.captured_inputs);
  for (size_t i = 0; i < captured_names.size(); ++i) {
    Value& v = g.values[static_cast<size_t>(g.inputs[formal + i])];
    if (v.name == captured_names[i]) continue;
    OF_CHECK(g.FindValue(captured_names[i]) == kNoValue, kInternal, "subgraph '", g.name, "' defines '",
             captured_names[i], "', the name of a value it captures");
    v.name = captured_names[i];
  }
  g.Reindex();
  gp->set_name(g.name);
  std::vector<int> producer = g.Producers();
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant.defined() && producer[v] == kNoValue)
      FillTensorInline(g.values[v].constant, g.values[v].name, gp->add_initializer());
  for (size_t i = 0; i < formal; ++i) FillValueInfo(g.values[static_cast<size_t>(g.inputs[i])], gp->add_input());
  for (int id : g.outputs) FillValueInfo(g.values[static_cast<size_t>(id)], gp->add_output());
  for (int idx : ExportOrder(g)) FillNode(g, g.nodes[static_cast<size_t>(idx)], gp->add_node());
}

// Node order for the file: ONNX requires producers before consumers. The graph's own order is kept
// when it already is one (so a round trip keeps the source's order); otherwise a topological order.
std::vector<int> ExportOrder(const Graph& g) {
  std::vector<int> producer = g.Producers();
  std::vector<int> order(g.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int v : g.nodes[i].inputs) {
      if (v != kNoValue && producer[static_cast<size_t>(v)] >= static_cast<int>(i)) return g.TopologicalOrder();
    }
  }
  return order;
}

// Which initializers are written, and for each whether it goes to the data file and where.
struct TensorPlan {
  std::vector<int> initializers;  // value ids: constants no node produces
  std::vector<bool> external;     // parallel to initializers
  std::vector<uint64_t> offset;   // parallel; byte offset in the data file when external
  uint64_t initializer_bytes = 0;  // all initializers together
  uint64_t attribute_bytes = 0;    // tensors in attributes (always inline)
};

TensorPlan PlanTensors(const Graph& g) {
  TensorPlan plan;
  std::vector<int> producer = g.Producers();
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!g.values[v].constant.defined() || producer[v] != kNoValue) continue;
    plan.initializers.push_back(static_cast<int>(v));
    plan.initializer_bytes += g.values[v].constant.nbytes();
  }
  for (const Node& n : g.nodes) {
    for (const auto& [name, a] : n.attrs.all())
      if (a.kind == AttrKind::kTensor && !n.defaulted_attrs.count(name)) plan.attribute_bytes += a.t.nbytes();
  }
  plan.external.assign(plan.initializers.size(), false);
  plan.offset.assign(plan.initializers.size(), 0);
  return plan;
}

void PlaceExternal(const Graph& g, const OnnxExportOptions& options, TensorPlan& plan) {
  using Mode = OnnxExportOptions::ExternalData;
  bool use = options.external_data == Mode::kAlways ||
             (options.external_data == Mode::kAuto && plan.initializer_bytes > options.external_threshold_bytes);
  if (!use) return;
  uint64_t end = 0;
  for (size_t i = 0; i < plan.initializers.size(); ++i) {
    const Tensor& t = g.values[static_cast<size_t>(plan.initializers[i])].constant;
    uint64_t bytes = t.nbytes();
    // Sub-byte tensors stay inline, packed (FillTensorInline): the data file holds memory's bytes.
    if (bytes < options.min_external_tensor_bytes || NarrowBitWidth(t.dtype()) < 8 || t.dtype() == DType::kString) continue;
    end = (end + kExternalAlignment - 1) / kExternalAlignment * kExternalAlignment;
    plan.external[i] = true;
    plan.offset[i] = end;
    end += bytes;
  }
}

onnx::ModelProto BuildModel(const Graph& g, const TensorPlan& plan, const std::string& data_location) {
  RefuseInternalOps(g);
  onnx::ModelProto model;
  const ModelMetadata& md = g.metadata;
  auto onnx_opset = g.opset_imports.find("");
  model.set_ir_version(onnx_opset == g.opset_imports.end() ? 4 : MinIrVersionForOpset(onnx_opset->second));
  if (g.producer.empty()) {
    model.set_producer_name("oneflow");
    model.set_producer_version(ONEFLOW_VERSION_STRING);
  } else {
    model.set_producer_name(g.producer);
    if (!md.producer_version.empty()) model.set_producer_version(md.producer_version);
  }
  if (!md.domain.empty()) model.set_domain(md.domain);
  if (md.model_version != 0) model.set_model_version(md.model_version);
  if (!md.doc_string.empty()) model.set_doc_string(md.doc_string);
  for (const auto& [key, value] : md.metadata_props) {
    auto* kv = model.add_metadata_props();
    kv->set_key(key);
    kv->set_value(value);
  }
  for (const auto& [domain, version] : g.opset_imports) {
    if (domain == kOneflowDomain) continue;  // a leftover import of an optimized copy; no node uses it
    auto* os = model.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }

  onnx::GraphProto* gp = model.mutable_graph();
  gp->set_name(g.name);
  if (!md.graph_doc_string.empty()) gp->set_doc_string(md.graph_doc_string);
  for (size_t i = 0; i < plan.initializers.size(); ++i) {
    const Value& v = g.values[static_cast<size_t>(plan.initializers[i])];
    onnx::TensorProto* tp = gp->add_initializer();
    if (!plan.external[i]) {
      FillTensorInline(v.constant, v.name, tp);
      continue;
    }
    FillTensorHeader(v.constant, v.name, tp);
    tp->set_data_location(onnx::TensorProto::EXTERNAL);
    const std::pair<const char*, std::string> entries[] = {
        {"location", data_location},
        {"offset", std::to_string(plan.offset[i])},
        {"length", std::to_string(v.constant.nbytes())}};
    for (const auto& [key, value] : entries) {
      auto* kv = tp->add_external_data();
      kv->set_key(key);
      kv->set_value(value);
    }
  }
  for (int id : g.inputs) FillValueInfo(g.values[static_cast<size_t>(id)], gp->add_input());
  for (int id : g.outputs) FillValueInfo(g.values[static_cast<size_t>(id)], gp->add_output());
  std::set<std::string> io;
  for (int id : g.inputs) io.insert(g.values[static_cast<size_t>(id)].name);
  for (int id : g.outputs) io.insert(g.values[static_cast<size_t>(id)].name);
  for (const std::string& name : md.annotated_values) {
    int id = g.FindValue(name);
    if (id == kNoValue || io.count(name)) continue;
    const Value& v = g.values[static_cast<size_t>(id)];
    if (v.constant.defined() || v.type.dtype == DType::kUndefined) continue;
    FillValueInfo(v, gp->add_value_info());
  }

  for (int idx : ExportOrder(g)) FillNode(g, g.nodes[static_cast<size_t>(idx)], gp->add_node());
  return model;
}

[[noreturn]] void FailTooLarge(uint64_t bytes) {
  Fail(ErrorCode::kInvalidArgument, "the model's tensors total ", bytes, " bytes, over protobuf's 2 GB limit for "
       "one message; save it to a file with SaveOnnxModel (the path form), which stores the weights as "
       "ONNX external data");
}

void CheckProtoSize(const onnx::ModelProto& model) {
  size_t size = model.ByteSizeLong();
  if (size > kOnnxProtoLimitBytes) FailTooLarge(size);
}

// Streams protobuf's serialization into a FileSink without a second in-memory copy of the model.
class SinkStream final : public google::protobuf::io::CopyingOutputStream {
 public:
  explicit SinkStream(FileSink& sink) : sink_(sink) {}
  bool Write(const void* buffer, int size) override {
    try {
      sink_.Write(buffer, static_cast<size_t>(size));
      return true;
    } catch (...) {
      error_ = std::current_exception();  // protobuf code is not exception-safe; rethrown below
      return false;
    }
  }
  std::exception_ptr error() const { return error_; }

 private:
  FileSink& sink_;
  std::exception_ptr error_;
};

void WriteModel(const std::string& path, const onnx::ModelProto& model) {
  WriteFileAtomically(path, [&](FileSink& sink) {
    SinkStream stream(sink);
    bool ok;
    {
      google::protobuf::io::CopyingOutputStreamAdaptor adaptor(&stream);
      ok = model.SerializeToZeroCopyStream(&adaptor);
      ok = adaptor.Flush() && ok;
    }
    if (stream.error()) std::rethrow_exception(stream.error());
    OF_CHECK(ok, kRuntime, "serializing the model to '", path, "' failed");
  });
}

void WriteDataFile(const std::string& path, const Graph& g, const TensorPlan& plan) {
  WriteFileAtomically(path, [&](FileSink& sink) {
    static const char kZeros[kExternalAlignment] = {};
    for (size_t i = 0; i < plan.initializers.size(); ++i) {
      if (!plan.external[i]) continue;
      sink.Write(kZeros, plan.offset[i] - sink.bytes_written());  // alignment padding
      const Tensor& t = g.values[static_cast<size_t>(plan.initializers[i])].constant;
      sink.Write(t.raw(), t.nbytes());
    }
  });
}

std::string DirOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// True for the data file names SaveOnnxModel generates for the model file `base`.
bool IsGeneratedDataName(const std::string& location, const std::string& base) {
  const std::string suffix = ".data";
  if (location.size() != base.size() + 1 + 8 + suffix.size()) return false;
  if (location.compare(0, base.size() + 1, base + ".") != 0) return false;
  if (location.compare(location.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  return std::all_of(location.begin() + static_cast<long>(base.size()) + 1,
                     location.begin() + static_cast<long>(base.size()) + 9,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Generated data files the model now at `path` references (candidates for removal once replaced).
// Only small files are read: a model with external data is small, a large one holds inline weights.
std::set<std::string> GeneratedDataFilesOf(const std::string& path) {
  std::set<std::string> found;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) return found;
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::ModelProto old;
  if (!old.ParseFromString(bytes)) return found;
  for (const auto& tp : old.graph().initializer()) {
    for (const auto& kv : tp.external_data())
      if (kv.key() == "location" && IsGeneratedDataName(kv.value(), BaseName(path))) found.insert(kv.value());
  }
  return found;
}

std::string FreshDataName(const std::string& path) {
  std::random_device rd;
  for (;;) {
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(rd()));
    std::string name = BaseName(path) + "." + hex + ".data";
    if (!Exists(DirOf(path) + name)) return name;
  }
}

}  // namespace

std::string SerializeOnnxModel(const Graph& g) {
  RefuseInternalOps(g);
  TensorPlan plan = PlanTensors(g);
  if (plan.initializer_bytes + plan.attribute_bytes > kOnnxProtoLimitBytes)
    FailTooLarge(plan.initializer_bytes + plan.attribute_bytes);
  onnx::ModelProto model = BuildModel(g, plan, "");
  CheckProtoSize(model);
  std::string out;
  OF_CHECK(model.SerializeToString(&out), kInternal, "serializing the ONNX model failed");
  return out;
}

void SaveOnnxModel(const Graph& g, const std::string& path, const OnnxExportOptions& options) {
  OF_REQUIRE(!path.empty(), "the output path is empty");
  RefuseInternalOps(g);
  OF_REQUIRE(options.data_file.empty() ||
                 (options.data_file[0] != '/' && options.data_file.find("..") == std::string::npos),
             "data_file '", options.data_file, "' must be relative to the model's directory, without '..'");
  TensorPlan plan = PlanTensors(g);
  PlaceExternal(g, options, plan);
  const bool external = std::find(plan.external.begin(), plan.external.end(), true) != plan.external.end();
  if (!external && plan.initializer_bytes + plan.attribute_bytes > kOnnxProtoLimitBytes)
    FailTooLarge(plan.initializer_bytes + plan.attribute_bytes);
  const std::string location = !external                ? ""
                               : options.data_file.empty() ? FreshDataName(path)
                                                           : options.data_file;
  onnx::ModelProto model = BuildModel(g, plan, location);
  CheckProtoSize(model);

  const std::set<std::string> old_data = GeneratedDataFilesOf(path);
  if (external) WriteDataFile(DirOf(path) + location, g, plan);
  try {
    WriteModel(path, model);
  } catch (...) {
    // The old model (if any) is intact and still references its own data; drop the orphan, unless
    // it is a fixed name an existing model may also use.
    if (external && options.data_file.empty()) ::unlink((DirOf(path) + location).c_str());
    throw;
  }
  for (const std::string& name : old_data)
    if (name != location) ::unlink((DirOf(path) + name).c_str());
}

}  // namespace oneflow
