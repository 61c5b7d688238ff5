// Reading the native format: map the file, verify the header, the flatbuffer (Verifier) and every
// segment (bounds, alignment, overlap, padding, checksums) before any tensor or graph is built;
// weight tensors then view the mapping without a copy.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "base/file_pages.h"
#include "base/packed_strings.h"
#include "ofm_generated.h"
#include "serialize/native_layout.h"
#include "serialize/native_plan.h"

namespace oneflow {
namespace fs = std::filesystem;

namespace {

// A read-only byte range plus whatever keeps it alive (a mapping, a copy, the caller's promise).
struct Region {
  const unsigned char* data = nullptr;
  uint64_t size = 0;
  std::shared_ptr<Storage> storage;  // views `data`; tensors share it, so it lives while they do
  std::string label;                 // for messages: the file name or "the model"
};

// Maps `path` privately (copy-on-write): kernels that write into a constant get their own pages
// and can neither crash on a read-only page nor change the file.
Region MapFile(const std::string& path, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  OF_CHECK(fd >= 0, kNotFound, "cannot open ", what, " '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    Fail(ErrorCode::kInvalidArgument, what, " '", path, "' is not a regular file");
  }
  Region r;
  r.label = "'" + path + "'";
  r.size = static_cast<uint64_t>(st.st_size);
  if (r.size == 0) {
    ::close(fd);
    r.storage = Storage::Allocate(0);
    return r;
  }
  void* addr = ::mmap(nullptr, static_cast<size_t>(r.size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps the file referenced
  OF_CHECK(addr != MAP_FAILED, kIo, "cannot map ", what, " '", path, "': ", std::strerror(err));
  size_t len = static_cast<size_t>(r.size);
  r.data = static_cast<const unsigned char*>(addr);
  RegisterFileMapping(addr, len);
  r.storage = Storage::Borrow(addr, len, [addr, len] {
    UnregisterFileMapping(addr);
    ::munmap(addr, len);
  });
  return r;
}

// Copies `size` bytes into one aligned buffer (for memory loads without a lifetime promise).
Region CopyRegion(const void* data, size_t size) {
  Region r;
  r.storage = Storage::AllocateUninitialized(size);
  if (size) std::memcpy(r.storage->data(), data, size);
  r.data = static_cast<const unsigned char*>(r.storage->data());
  r.size = size;
  r.label = "the model";
  return r;
}

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// A verified vector's elements, copied out with memcpy: the Verifier checks a vector's bounds but
// only 4-byte alignment of its start, so 8-byte elements of a crafted file may be misaligned.
template <typename T>
std::vector<T> Elements(const flatbuffers::Vector<T>* v) {
  std::vector<T> out(v ? v->size() : 0);
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}

struct SegmentInfo {
  const ofm::Segment* fb = nullptr;
  std::string name;
  TensorRole role = TensorRole::kParameter;
  DType dtype = DType::kUndefined;
  Shape shape;
  const Region* region = nullptr;
  uint64_t file_offset = 0;  // absolute, within region
  uint64_t length = 0;
  Tensor tensor;             // set after all checks
};

class Reader {
 public:
  Reader(Region main, const NativeReadOptions& options, std::string base_dir)
      : main_(std::move(main)), options_(options), base_dir_(std::move(base_dir)) {}

  void Parse() {
    CheckHeaderAndFlatbuffer();
    MapExternalFiles();
    CheckSegments();
    CheckPadding();
    if (options_.verify_checksums) VerifyChecksums();
    MakeTensors();
  }

  const ofm::Model& model() const { return *model_; }
  const std::vector<SegmentInfo>& segments() const { return segments_; }

  // Builds the graph; records which segments it uses in `used` (when non-null).
  Graph BuildGraph(std::vector<bool>* used) const;

 private:
  template <typename... Args>
  [[noreturn]] void Bad(const Args&... args) const {
    Fail(ErrorCode::kInvalidModel, "native model ", main_.label, ": ", args...);
  }

  void CheckHeaderAndFlatbuffer();
  void MapExternalFiles();
  void CheckSegments();
  void CheckPadding() const;
  void VerifyChecksums() const;
  void MakeTensors();
  Attribute DecodeAttribute(const ofm::Attribute& a, const std::string& where, std::vector<bool>* used,
                            int depth) const;
  // Values, nodes, inputs and outputs of `fg` into `g` (the main graph or a subgraph at `depth`).
  void DecodeGraphBody(const ofm::Graph& fg, Graph& g, std::vector<bool>* used, int depth) const;

  Region main_;
  NativeReadOptions options_;
  std::string base_dir_;
  native::Header header_;
  const ofm::Model* model_ = nullptr;
  std::vector<Region> externals_;
  std::vector<SegmentInfo> segments_;
};

void Reader::CheckHeaderAndFlatbuffer() {
  const unsigned char* p = main_.data;
  const uint64_t size = main_.size;
  if (size < 8 || std::memcmp(p, kNativeMagic, 8) != 0)
    Bad(size < 8 ? "the file is too short to be a native model (" : "wrong magic: not a native model (",
        size, " bytes)");
  if (size < 16) Bad("the file is truncated (", size, " bytes; the header alone has ", kNativeHeaderBytes, ")");
  header_.major = native::Get32(p + 8);
  header_.minor = native::Get32(p + 12);
  OF_CHECK(header_.major <= kNativeFormatMajor, kUnsupported, "native model ", main_.label, " has format version ",
           native::VersionString(header_.major, header_.minor), ", newer than the newest this build reads (",
           native::VersionString(kNativeFormatMajor, kNativeFormatMinor), "); upgrade OneFlow");
  if (header_.major == 0) Bad("format version 0.", header_.minor, " is not a valid version");
  if (size < kNativeHeaderBytes)
    Bad("the file is truncated (", size, " bytes; the header alone has ", kNativeHeaderBytes, ")");
  if (native::Get64(p + 56) != Xxh64(p, 56)) Bad("the header checksum does not match (the header is corrupt)");
  header_.flatbuffer_offset = native::Get64(p + 16);
  header_.flatbuffer_size = native::Get64(p + 24);
  header_.file_size = native::Get64(p + 32);
  header_.flatbuffer_checksum = native::Get64(p + 40);
  header_.data_offset = native::Get64(p + 48);
  if (header_.file_size != size)
    Bad(size < header_.file_size ? "the file is truncated: " : "the file has trailing bytes: ", "the header says ",
        header_.file_size, " bytes, the file has ", size);
  if (header_.flatbuffer_offset != kNativeHeaderBytes) Bad("the flatbuffer offset ", header_.flatbuffer_offset, " is not ", kNativeHeaderBytes);
  if (header_.flatbuffer_size > size - kNativeHeaderBytes || header_.flatbuffer_size >= (1ull << 31))
    Bad("the flatbuffer size ", header_.flatbuffer_size, " does not fit in the file");
  const uint64_t fb_end = kNativeHeaderBytes + header_.flatbuffer_size;
  if (header_.data_offset % kSegmentAlignment != 0 || header_.data_offset < fb_end || header_.data_offset > size)
    Bad("the data offset ", header_.data_offset, " is not a 64-byte-aligned offset after the flatbuffer");
  const unsigned char* fb = p + kNativeHeaderBytes;
  const size_t fb_size = static_cast<size_t>(header_.flatbuffer_size);
  if (Xxh64(fb, fb_size) != header_.flatbuffer_checksum)
    Bad("the flatbuffer checksum does not match (the graph/metadata section is corrupt)");
  // The Verifier bounds-checks every offset, vector and string, and required fields, before any
  // field is read. Depth and table count are capped far above any real model.
  flatbuffers::Verifier verifier(fb, fb_size, /*max_depth=*/64, /*max_tables=*/1u << 26);
  if (!ofm::VerifyModelBuffer(verifier)) Bad("the flatbuffer failed verification (corrupt or not written by OneFlow)");
  model_ = ofm::GetModel(fb);
}

void Reader::MapExternalFiles() {
  const auto* files = model_->external_files();
  if (!files) return;
  for (const ofm::ExternalFile* f : *files) {
    const std::string rel = f->path()->str();
    OF_CHECK(!base_dir_.empty(), kInvalidArgument, "native model ", main_.label, " keeps its weights in '", rel,
             "', but it was loaded from memory without a base directory");
    fs::path relp(rel);
    if (rel.empty() || relp.is_absolute()) Bad("external data path '", rel, "' must be relative to the model's directory");
    std::error_code ec;
    fs::path base = fs::weakly_canonical(fs::path(base_dir_), ec);
    fs::path full = fs::weakly_canonical(base / relp, ec);
    OF_CHECK(!ec, kIo, "cannot resolve external data path '", rel, "': ", ec.message());
    auto [b, e] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
    if (b != base.end()) Bad("external data path '", rel, "' escapes the model's directory");
    Region r = MapFile(full.string(), "external data file");
    if (r.size != f->size())
      Bad("external data file '", rel, "' has ", r.size, " bytes; the model expects ", f->size(),
          r.size < f->size() ? " (truncated)" : "");
    externals_.push_back(std::move(r));
  }
}

void Reader::CheckSegments() {
  const auto* segs = model_->segments();
  if (!segs) return;
  segments_.resize(segs->size());
  for (size_t i = 0; i < segs->size(); ++i) {
    const ofm::Segment* s = segs->Get(static_cast<flatbuffers::uoffset_t>(i));
    SegmentInfo& info = segments_[i];
    info.fb = s;
    info.name = s->name()->str();
    const std::string what = "segment " + std::to_string(i) + " ('" + info.name + "')";
    if (static_cast<uint8_t>(s->role()) > static_cast<uint8_t>(ofm::SegmentRole::MAX))
      Bad(what, " has unknown role ", static_cast<int>(s->role()));
    info.role = static_cast<TensorRole>(s->role());
    const bool strings = s->dtype() == static_cast<int32_t>(DType::kString);
    if (!strings && (!IsKnownDType(s->dtype()) || DTypeSize(static_cast<DType>(s->dtype())) == 0))
      Bad(what, " has unknown or unstorable dtype ", s->dtype());
    info.dtype = static_cast<DType>(s->dtype());
    if (s->dims() && s->dims()->size() > 64) Bad(what, " has rank ", s->dims()->size(), " (at most 64)");
    info.shape = Elements(s->dims());
    for (int64_t d : info.shape)
      if (d < 0) Bad(what, " has negative dimension ", d);
    // dtype x shape must equal the stored length; computed without overflow. A string segment is a
    // packed run (base/packed_strings.h) of any length: MakeTensors checks its element count.
    uint64_t expect = strings ? 1 : DTypeSize(info.dtype);
    for (int64_t d : info.shape) {
      if (d != 0 && expect > UINT64_MAX / static_cast<uint64_t>(d)) Bad(what, " has a shape too large to address");
      expect *= static_cast<uint64_t>(d);
    }
    info.length = s->length();
    if (!strings && info.length != expect)
      Bad(what, " holds ", info.length, " bytes; ", DTypeName(info.dtype), ShapeToString(info.shape), " needs ", expect);
    if (s->file() > externals_.size()) Bad(what, " names external file ", s->file(), ", which does not exist");
    info.region = s->file() == 0 ? &main_ : &externals_[s->file() - 1];
    const uint64_t base = s->file() == 0 ? header_.data_offset : 0;
    const uint64_t area = info.region->size - base;
    if (s->offset() % kSegmentAlignment != 0) Bad(what, " offset ", s->offset(), " is not 64-byte aligned");
    if (s->offset() > area || info.length > area - s->offset())
      Bad(what, " (", info.length, " bytes at offset ", s->offset(), ") runs past the end of ",
          s->file() == 0 ? main_.label : "its external file", " (the file may be truncated)");
    info.file_offset = base + s->offset();
    if (s->checksum_kind() == ofm::ChecksumKind::Xxh64Chunked) {
      if (s->chunk_bytes() == 0) Bad(what, " has a checksum with chunk size 0");
    } else if (s->checksum_kind() != ofm::ChecksumKind::None) {
      Bad(what, " uses unknown checksum kind ", static_cast<int>(s->checksum_kind()));
    }
  }
  // No two segments of one file may overlap.
  std::vector<const SegmentInfo*> order;
  for (const SegmentInfo& s : segments_) order.push_back(&s);
  std::sort(order.begin(), order.end(), [](const SegmentInfo* a, const SegmentInfo* b) {
    return a->region != b->region ? a->region < b->region : a->file_offset < b->file_offset;
  });
  for (size_t i = 1; i < order.size(); ++i) {
    const SegmentInfo* a = order[i - 1];
    const SegmentInfo* b = order[i];
    if (a->region == b->region && a->length > 0 && b->length > 0 && a->file_offset + a->length > b->file_offset)
      Bad("segments '", a->name, "' and '", b->name, "' overlap");
  }
}

// Every byte of the data areas that no segment covers must be zero: together with the checksums
// this leaves no byte of a file whose corruption would go unnoticed.
void Reader::CheckPadding() const {
  auto check_area = [&](const Region& r, uint64_t begin) {
    std::vector<std::pair<uint64_t, uint64_t>> covered;
    for (const SegmentInfo& s : segments_)
      if (s.region == &r && s.length) covered.emplace_back(s.file_offset, s.file_offset + s.length);
    std::sort(covered.begin(), covered.end());
    uint64_t pos = begin;
    auto zero = [&](uint64_t from, uint64_t to) {
      for (uint64_t i = from; i < to; ++i)
        if (r.data[i] != 0) Bad("byte ", i, " of ", r.label, " lies outside every segment and is not zero padding");
    };
    for (const auto& [b, e] : covered) {
      zero(pos, b);
      pos = e;
    }
    zero(pos, r.size);
  };
  check_area(main_, kNativeHeaderBytes + header_.flatbuffer_size);
  for (const Region& r : externals_) check_area(r, 0);
}

void Reader::VerifyChecksums() const {
  // One work list of chunks over all segments, so many small segments and one huge one both
  // spread over the threads.
  struct Job { size_t seg; uint64_t begin, len; };
  std::vector<Job> jobs;
  std::vector<size_t> first_job(segments_.size() + 1, 0);
  for (size_t i = 0; i < segments_.size(); ++i) {
    first_job[i] = jobs.size();
    const SegmentInfo& s = segments_[i];
    if (s.fb->checksum_kind() != ofm::ChecksumKind::Xxh64Chunked) continue;
    const uint64_t chunk = s.fb->chunk_bytes();
    for (uint64_t b = 0; b < s.length; b += chunk) jobs.push_back({i, b, std::min(chunk, s.length - b)});
  }
  first_job[segments_.size()] = jobs.size();
  std::vector<uint64_t> digests(jobs.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t j; (j = next.fetch_add(1)) < jobs.size();) {
      const SegmentInfo& s = segments_[jobs[j].seg];
      const unsigned char* chunk = s.region->data + s.file_offset + jobs[j].begin;
      digests[j] = Xxh64(chunk, static_cast<size_t>(jobs[j].len));
      // Read once here, then again only by whoever uses this tensor (a rank keeps its slices).
      ReleaseFilePages(chunk, static_cast<size_t>(jobs[j].len));
    }
  };
  uint64_t total = 0;
  for (const Job& j : jobs) total += j.len;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = total >= (8u << 20) ? std::min<size_t>(hw, jobs.size()) : 1;
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < segments_.size(); ++i) {
    const SegmentInfo& s = segments_[i];
    if (s.fb->checksum_kind() != ofm::ChecksumKind::Xxh64Chunked) continue;
    const uint64_t got = Xxh64(digests.data() + first_job[i], (first_job[i + 1] - first_job[i]) * sizeof(uint64_t));
    if (got != s.fb->checksum())
      Bad("checksum mismatch in tensor '", s.name, "' (", TensorRoleName(s.role), ", ", s.length,
          " bytes): its data is corrupt");
  }
}

void Reader::MakeTensors() {
  for (SegmentInfo& s : segments_) {
    if (s.dtype == DType::kBool) {
      // Kernels rely on bools being exactly 0 or 1.
      const unsigned char* b = s.region->data + s.file_offset;
      for (uint64_t i = 0; i < s.length; ++i)
        if (b[i] > 1) Bad("bool tensor '", s.name, "' holds the byte ", static_cast<int>(b[i]), " (must be 0 or 1)");
    }
    if (s.dtype == DType::kString) {  // unpacked into strings of their own: the file's bytes are not objects
      const char* run = reinterpret_cast<const char*>(s.region->data + s.file_offset);
      std::string problem;
      const int64_t count = CountPackedStrings(run, static_cast<size_t>(s.length), &problem);
      if (count < 0) Bad("string tensor '", s.name, "' is malformed: ", problem);
      if (count != NumElements(s.shape))
        Bad("string tensor '", s.name, "' packs ", count, " strings; shape ", ShapeToString(s.shape), " holds ",
            NumElements(s.shape));
      s.tensor = Tensor(DType::kString, s.shape);
      UnpackStrings(run, count, s.tensor.strings());
      continue;
    }
    s.tensor = Tensor(s.dtype, s.shape, s.region->storage, static_cast<size_t>(s.file_offset));
  }
}

TensorType DecodeType(const ofm::TensorType* t, const std::string& what) {
  TensorType out;
  if (!t) return out;
  OF_CHECK(t->dtype() == 0 || t->dtype() == static_cast<int32_t>(DType::kString) || IsKnownDType(t->dtype()),
           kInvalidModel, what, " has unknown dtype ", t->dtype());
  out.dtype = static_cast<DType>(t->dtype());
  out.has_rank = t->has_rank();
  out.is_sequence = t->is_sequence();
  out.is_optional = t->is_optional();
  if (t->dims()) {
    OF_CHECK(out.has_rank || t->dims()->size() == 0, kInvalidModel, what, " has dims but no rank");
    for (const ofm::Dim* d : *t->dims()) {
      if (d->value() >= 0) out.dims.push_back(Dim::Known(d->value()));
      else if (d->symbol() && d->symbol()->size()) out.dims.push_back(Dim::Symbol(d->symbol()->str()));
      else out.dims.push_back(Dim::Unknown());
    }
  }
  return out;
}

Attribute Reader::DecodeAttribute(const ofm::Attribute& a, const std::string& where, std::vector<bool>* used,
                                  int depth) const {
  const std::string name = a.name()->str();
  auto bytes = [](const flatbuffers::Vector<uint8_t>* v) {
    return v ? std::string(reinterpret_cast<const char*>(v->data()), v->size()) : std::string();
  };
  switch (a.kind()) {
    case ofm::AttrKind::Float: return Attribute::Float(a.f());
    case ofm::AttrKind::Int: return Attribute::Int(a.i());
    case ofm::AttrKind::String: return Attribute::String(bytes(a.s()));
    case ofm::AttrKind::Tensor: {
      const int seg = a.tensor();
      if (seg < 0 || static_cast<size_t>(seg) >= segments_.size())
        Bad(where, ": tensor attribute '", name, "' refers to segment ", seg, ", which does not exist");
      if (segments_[static_cast<size_t>(seg)].role != TensorRole::kAttrTensor)
        Bad(where, ": tensor attribute '", name, "' refers to a segment of role ",
            TensorRoleName(segments_[static_cast<size_t>(seg)].role));
      if (used) (*used)[static_cast<size_t>(seg)] = true;
      return Attribute::TensorValue(segments_[static_cast<size_t>(seg)].tensor);
    }
    case ofm::AttrKind::Floats: return Attribute::Floats(Elements(a.floats()));
    case ofm::AttrKind::Ints: return Attribute::Ints(Elements(a.ints()));
    case ofm::AttrKind::Strings: {
      std::vector<std::string> list;
      if (a.strings())
        for (const ofm::Bytes* b : *a.strings()) list.push_back(bytes(b->data()));
      return Attribute::Strings(std::move(list));
    }
    case ofm::AttrKind::Graph: {
      if (!a.graph()) Bad(where, ": graph attribute '", name, "' holds no graph");
      auto sub = std::make_shared<Graph>();
      DecodeGraphBody(*a.graph(), *sub, used, depth + 1);
      return Attribute::Subgraph(std::move(sub));
    }
    case ofm::AttrKind::Type:
      if (!a.type()) Bad(where, ": type attribute '", name, "' holds no type");
      return Attribute::Type(DecodeType(a.type(), where + ": attribute '" + name + "'"));
    default: break;
  }
  Bad(where, ": attribute '", name, "' has unknown kind ", static_cast<int>(a.kind()));
}

Graph Reader::BuildGraph(std::vector<bool>* used) const {
  const ofm::Graph* fg = model_->graph();
  if (!fg) Bad("the file holds no graph (is it a checkpoint?)");
  Graph g;
  g.name = Str(fg->name());
  g.metadata.graph_doc_string = Str(fg->doc_string());
  if (const ofm::Metadata* m = model_->metadata()) {
    g.producer = Str(m->producer_name());
    g.metadata.producer_version = Str(m->producer_version());
    g.metadata.doc_string = Str(m->doc_string());
    if (m->properties())
      for (const ofm::KeyValue* kv : *m->properties())
        if (kv->key()->str() != "written_by") g.metadata.metadata_props.emplace_back(kv->key()->str(), Str(kv->value()));
  }
  DecodeGraphBody(*fg, g, used, 0);
  DecodePlan(model_->plan(), main_.label, g);
  return g;
}

void Reader::DecodeGraphBody(const ofm::Graph& graph, Graph& g, std::vector<bool>* used, int depth) const {
  // The flatbuffers verifier bounds the nesting already; this names the problem.
  if (depth > 32) Bad("subgraphs nest deeper than 32 levels");
  const ofm::Graph* fg = &graph;
  if (depth > 0) g.name = Str(fg->name());
  if (fg->opset_imports())
    for (const ofm::OpsetImport* o : *fg->opset_imports()) {
      if (o->version() < 1 || o->version() > INT32_MAX) Bad("opset import '", Str(o->domain()), "' has version ", o->version());
      g.opset_imports[Str(o->domain())] = static_cast<int>(o->version());
    }
  const size_t num_values = fg->values() ? fg->values()->size() : 0;
  if (fg->values()) {
    for (const ofm::Value* v : *fg->values()) {
      const std::string name = v->name()->str();
      if (!name.empty() && g.FindValue(name) != kNoValue) Bad("value name '", name, "' is defined twice");
      int id = g.AddValue(name, DecodeType(v->type(), "value '" + name + "'"));
      Value& val = g.values[static_cast<size_t>(id)];
      val.is_parameter = v->is_parameter();
      if (v->segment() >= 0) {
        if (static_cast<size_t>(v->segment()) >= segments_.size())
          Bad("value '", name, "' refers to segment ", v->segment(), ", which does not exist");
        const SegmentInfo& s = segments_[static_cast<size_t>(v->segment())];
        if (s.role == TensorRole::kAttrTensor) Bad("value '", name, "' refers to attribute tensor segment '", s.name, "'");
        val.constant = s.tensor;
        val.type = TensorType::Of(s.dtype, s.shape);
        if (used) (*used)[static_cast<size_t>(v->segment())] = true;
      } else if (v->segment() != -1) {
        Bad("value '", name, "' has segment index ", v->segment());
      }
    }
  }
  auto check_ref = [&](int id, const std::string& what, bool allow_none) {
    if ((id == kNoValue && allow_none) || (id >= 0 && static_cast<size_t>(id) < num_values)) return;
    Bad(what, " refers to value ", id, ", out of range (", num_values, " values)");
  };
  std::vector<int> producer(num_values, -1);
  if (fg->nodes()) {
    for (const ofm::Node* fn : *fg->nodes()) {
      Node n;
      n.name = Str(fn->name());
      n.op_type = fn->op_type()->str();
      n.doc_string = Str(fn->doc_string());
      n.domain = Str(fn->domain());
      n.opset = fn->opset();
      const std::string where = "node " + std::to_string(g.nodes.size()) + " (" + n.op_type + " '" + n.name + "')";
      if (n.op_type.empty()) Bad(where, " has no op_type");
      if (fn->inputs())
        for (int id : *fn->inputs()) {
          check_ref(id, where + " input", true);
          n.inputs.push_back(id);
        }
      if (fn->outputs())
        for (int id : *fn->outputs()) {
          check_ref(id, where + " output", true);
          if (id != kNoValue) {
            if (g.values[static_cast<size_t>(id)].constant.defined())
              Bad(where, " writes constant '", g.values[static_cast<size_t>(id)].name, "'");
            if (producer[static_cast<size_t>(id)] >= 0)
              Bad("value '", g.values[static_cast<size_t>(id)].name, "' is produced twice");
            producer[static_cast<size_t>(id)] = static_cast<int>(g.nodes.size());
          }
          n.outputs.push_back(id);
        }
      if (fn->attributes())
        for (const ofm::Attribute* a : *fn->attributes()) {
          if (n.attrs.has(a->name()->str())) Bad(where, ": attribute '", a->name()->str(), "' appears twice");
          n.attrs.set(a->name()->str(), DecodeAttribute(*a, where, used, depth));
        }
      g.nodes.push_back(std::move(n));
    }
  }
  if (fg->inputs())
    for (int id : *fg->inputs()) {
      check_ref(id, "a graph input", false);
      if (g.values[static_cast<size_t>(id)].constant.defined() || producer[static_cast<size_t>(id)] >= 0)
        Bad("graph input '", g.values[static_cast<size_t>(id)].name, "' is a constant or a node output");
      g.inputs.push_back(id);
    }
  if (fg->outputs())
    for (int id : *fg->outputs()) {
      check_ref(id, "a graph output", false);
      g.outputs.push_back(id);
    }
  if (g.outputs.empty()) Bad(depth > 0 ? "a subgraph" : "the graph", " has no outputs");
  if (fg->captured_inputs() < 0 || static_cast<size_t>(fg->captured_inputs()) > g.inputs.size() ||
      (depth == 0 && fg->captured_inputs() != 0))
    Bad("graph '", g.name, "' says ", fg->captured_inputs(), " of its ", g.inputs.size(), " inputs are captured");
  g.captured_inputs = static_cast<size_t>(fg->captured_inputs());
}

// Reads a file or memory image into a Reader that has passed every check.
std::unique_ptr<Reader> OpenPath(const std::string& path, const NativeReadOptions& options) {
  std::error_code ec;
  OF_CHECK(fs::exists(path, ec), kNotFound, "model file '", path, "' does not exist");
  OF_CHECK(!fs::is_directory(path, ec), kInvalidArgument, "model path '", path, "' is a directory");
  fs::path dir = fs::path(path).parent_path();
  auto r = std::make_unique<Reader>(MapFile(path, "model file"), options, dir.empty() ? "." : dir.string());
  r->Parse();
  return r;
}

std::unique_ptr<Reader> OpenMemory(const void* data, size_t size, const NativeReadOptions& options,
                                   std::function<void()> release, const std::string& external_data_dir) {
  OF_REQUIRE(data != nullptr || size == 0, "model data is null");
  Region region;
  if (release) {
    // The storage owns `release` from here on, so it runs on every failure below as well.
    region.storage = Storage::Borrow(const_cast<void*>(data), size, std::move(release));
    OF_REQUIRE(reinterpret_cast<uintptr_t>(data) % kSegmentAlignment == 0,
               "a native model loaded from memory without a copy must be 64-byte aligned (weights are used in place)");
    region.data = static_cast<const unsigned char*>(data);
    region.size = size;
    region.label = "the model";
  } else {
    region = CopyRegion(data, size);
  }
  auto r = std::make_unique<Reader>(std::move(region), options, external_data_dir);
  r->Parse();
  return r;
}

Checkpoint ToCheckpoint(const Reader& r) {
  Checkpoint ckpt;
  std::vector<bool> used(r.segments().size(), false);
  if (r.model().graph()) ckpt.graph = std::make_shared<const Graph>(r.BuildGraph(&used));
  std::set<std::string> names;
  for (size_t i = 0; i < r.segments().size(); ++i) {
    const SegmentInfo& s = r.segments()[i];
    if (used[i] || s.role == TensorRole::kAttrTensor) continue;
    OF_CHECK(names.insert(s.name).second, kInvalidModel, "checkpoint tensor '", s.name, "' appears twice");
    ckpt.tensors.push_back({s.name, s.role, s.tensor, Str(s.fb->target()), Str(s.fb->slot())});
  }
  if (const ofm::Training* t = r.model().training()) {
    ckpt.step = t->step();
    if (t->properties())
      for (const ofm::KeyValue* kv : *t->properties()) ckpt.metadata[kv->key()->str()] = Str(kv->value());
  }
  return ckpt;
}

}  // namespace

bool IsNativeFormat(const void* data, size_t size) {
  return data != nullptr && size >= 8 && std::memcmp(data, kNativeMagic, 8) == 0;
}

Graph ReadNativeModel(const std::string& path, const NativeReadOptions& options) {
  return OpenPath(path, options)->BuildGraph(nullptr);
}

Graph ReadNativeModelMemory(const void* data, size_t size, const NativeReadOptions& options,
                            std::function<void()> release, const std::string& external_data_dir) {
  return OpenMemory(data, size, options, std::move(release), external_data_dir)->BuildGraph(nullptr);
}

Checkpoint ReadCheckpoint(const std::string& path, const NativeReadOptions& options) {
  return ToCheckpoint(*OpenPath(path, options));
}

Checkpoint ReadCheckpointMemory(const void* data, size_t size, const NativeReadOptions& options) {
  return ToCheckpoint(*OpenMemory(data, size, options, {}, ""));
}

}  // namespace oneflow
