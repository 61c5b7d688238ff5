// Native format (.ofm): round trips of graphs and checkpoints, zero-copy loading, the checksum
// against the reference xxHash library, and clean refusal of corrupt, truncated and newer files.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "base/half.h"
#include "engine/session.h"
#include "serialize/checksum.h"
#include "serialize/model_io.h"
#include "serialize/native_format.h"
#include "serialize/native_layout.h"
#include "../test_support.h"
#include "../graph_builder.h"

namespace oneflow {
namespace {

NativeWriteOptions ExternalData(const std::string& file) {
  NativeWriteOptions o;
  o.external_data_file = file;
  return o;
}

CheckpointTensor CkptTensor(std::string name, TensorRole role, Tensor t, std::string target = "", std::string slot = "") {
  CheckpointTensor c;
  c.name = std::move(name);
  c.role = role;
  c.tensor = std::move(t);
  c.target = std::move(target);
  c.slot = std::move(slot);
  return c;
}

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("oneflow_native_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// Removes the test's temporary directory after all tests ran.
class TempDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(TempDir(), ec);
  }
};
const ::testing::Environment* const kCleanup = ::testing::AddGlobalTestEnvironment(new TempDirCleanup);

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <typename T>
Tensor Make(DType dt, Shape shape, std::vector<T> values) {
  Tensor t(dt, std::move(shape));
  EXPECT_EQ(values.size(), static_cast<size_t>(t.numel()));
  std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

// X[batch,4] -> MatMul W -> Add B -> Relu -> Y, plus a Constant node (tensor attribute) added to Y.
Graph SmallMlp() {
  Graph g;
  g.name = "mlp";
  g.producer = "unit-test";
  g.opset_imports[""] = 17;
  int x = g.AddValue("X", TensorType::Of(DType::kFloat32, {Dim::Symbol("batch"), Dim::Known(4)}));
  g.inputs.push_back(x);
  std::vector<float> w(12), b(3), c(3);
  for (int i = 0; i < 12; ++i) w[i] = 0.25f * static_cast<float>(i) - 1.0f;
  for (int i = 0; i < 3; ++i) b[i] = 0.5f * static_cast<float>(i) - 0.25f, c[i] = 10.0f + static_cast<float>(i);
  int wid = g.AddConstant("W", Make<float>(DType::kFloat32, {4, 3}, w));
  int bid = g.AddConstant("B", Make<float>(DType::kFloat32, {3}, b));
  g.values[static_cast<size_t>(wid)].is_parameter = true;
  g.values[static_cast<size_t>(bid)].is_parameter = true;
  int mm = g.AddValue("mm"), add = g.AddValue("add"), relu = g.AddValue("relu"), cst = g.AddValue("cst");
  int y = g.AddValue("Y");
  auto node = [&](const char* op, const char* name, std::vector<int> in, std::vector<int> out) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.opset = 17;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    g.nodes.push_back(std::move(n));
    return &g.nodes.back();
  };
  node("MatMul", "mm", {x, wid}, {mm});
  node("Add", "add", {mm, bid}, {add});
  node("Relu", "relu", {add}, {relu});
  node("Constant", "const", {}, {cst})->attrs.set("value", Attribute::TensorValue(Make<float>(DType::kFloat32, {3}, c)));
  node("Add", "out", {relu, cst}, {y});
  g.outputs.push_back(y);
  return g;
}

void ExpectSameTensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  EXPECT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << what;
}

void ExpectSameGraph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.producer, b.producer);
  EXPECT_EQ(a.opset_imports, b.opset_imports);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const Value& va = a.values[i];
    const Value& vb = b.values[i];
    EXPECT_EQ(va.name, vb.name);
    EXPECT_EQ(va.type.dtype, vb.type.dtype) << va.name;
    EXPECT_EQ(va.type.has_rank, vb.type.has_rank) << va.name;
    EXPECT_EQ(va.type.dims, vb.type.dims) << va.name;
    EXPECT_EQ(va.is_parameter, vb.is_parameter) << va.name;
    ExpectSameTensor(va.constant, vb.constant, va.name);
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& na = a.nodes[i];
    const Node& nb = b.nodes[i];
    EXPECT_EQ(na.name, nb.name);
    EXPECT_EQ(na.op_type, nb.op_type);
    EXPECT_EQ(na.domain, nb.domain);
    EXPECT_EQ(na.opset, nb.opset);
    EXPECT_EQ(na.inputs, nb.inputs);
    EXPECT_EQ(na.outputs, nb.outputs);
    ASSERT_EQ(na.attrs.all().size(), nb.attrs.all().size()) << na.name;
    for (const auto& [name, x] : na.attrs.all()) {
      const Attribute* y = nb.attrs.find(name);
      ASSERT_NE(y, nullptr) << name;
      EXPECT_EQ(x.kind, y->kind) << name;
      if (x.kind == AttrKind::kFloat) {
        EXPECT_EQ(std::memcmp(&x.f, &y->f, 4), 0) << name;  // bit-exact (NaN too)
      }
      EXPECT_EQ(x.i, y->i) << name;
      EXPECT_EQ(x.s, y->s) << name;
      EXPECT_EQ(x.ints, y->ints) << name;
      EXPECT_EQ(x.strings, y->strings) << name;
      ASSERT_EQ(x.floats.size(), y->floats.size()) << name;
      if (!x.floats.empty()) {
        EXPECT_EQ(std::memcmp(x.floats.data(), y->floats.data(), 4 * x.floats.size()), 0);
      }
      ExpectSameTensor(x.t, y->t, name);
    }
  }
}

// A graph exercising every attribute kind and value type the IR holds; not meant to run.
Graph EveryKindGraph() {
  Graph g;
  g.name = "kinds";
  g.producer = "unit-test";
  g.opset_imports[""] = 18;
  g.opset_imports["com.example"] = 3;
  int in = g.AddValue("in", TensorType::Of(DType::kFloat16, {Dim::Symbol("n"), Dim::Unknown(), Dim::Known(0)}));
  g.inputs.push_back(in);
  int unranked = g.AddValue("unranked", TensorType::UnknownShape(DType::kInt64));
  int untyped = g.AddValue("untyped");
  Tensor h(DType::kFloat16, {2});
  h.data<Float16>()[0] = Float16(1.5f);
  h.data<Float16>()[1] = Float16(-2.0f);
  g.AddConstant("half", h);
  g.AddConstant("flags", Make<uint8_t>(DType::kBool, {2, 2}, {1, 0, 0, 1}));
  g.AddConstant("scalar", Make<int64_t>(DType::kInt64, {}, {-7}));
  g.AddConstant("empty", Tensor(DType::kFloat64, {0, 5}));
  g.AddConstant("bf", Make<uint16_t>(DType::kBFloat16, {1}, {0x3f80}));
  Node n;
  n.name = "custom";
  n.op_type = "Thing";
  n.domain = "com.example";
  n.opset = 3;
  n.inputs = {in, kNoValue, g.FindValue("half")};
  n.outputs = {unranked, kNoValue, untyped};
  n.attrs.set("f", Attribute::Float(std::nanf("")));
  n.attrs.set("i", Attribute::Int(-(int64_t{1} << 40)));
  n.attrs.set("s", Attribute::String(std::string("bytes\0with nul", 14)));
  n.attrs.set("t", Attribute::TensorValue(Make<int32_t>(DType::kInt32, {2, 1}, {3, -4})));
  n.attrs.set("fs", Attribute::Floats({1.0f, -0.0f, 3.5e-40f}));
  n.attrs.set("is", Attribute::Ints({}));
  n.attrs.set("ss", Attribute::Strings({"a", "", "ccc"}));
  g.nodes.push_back(n);
  g.outputs = {unranked, untyped};
  return g;
}

TEST(NativeFormat, Xxh64MatchesTheReferenceLibrary) {
  // Published test vectors of the xxHash project.
  EXPECT_EQ(Xxh64("", 0), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(Xxh64("abc", 3), 0x44BC2CF5AD770999ULL);
  void* lib = ::dlopen("libxxhash.so.0", RTLD_NOW);
  if (!lib) GTEST_SKIP() << "libxxhash.so.0 (the reference implementation) is not installed";
  using Fn = unsigned long long (*)(const void*, size_t, unsigned long long);
  auto ref = reinterpret_cast<Fn>(::dlsym(lib, "XXH64"));
  ASSERT_NE(ref, nullptr);
  // Every (offset, length) pair below hashes bytes inside `buf`: the buffer holds the longest
  // length at the largest (unaligned) offset, so both implementations read only what they are given.
  const std::vector<size_t> lens = {0, 1, 3, 4, 7, 8, 15, 31, 32, 33, 63, 64, 100, 1000, 4999};
  const std::vector<size_t> offs = {0, 1, 5};
  const size_t max_len = *std::max_element(lens.begin(), lens.end());
  const size_t max_off = *std::max_element(offs.begin(), offs.end());
  std::mt19937_64 rng(42);
  std::vector<unsigned char> buf(std::max<size_t>(5000, max_off + max_len));
  for (auto& c : buf) c = static_cast<unsigned char>(rng());
  for (size_t len : lens) {
    for (size_t off : offs) {
      ASSERT_LE(off + len, buf.size()) << len << " " << off;
      for (uint64_t seed : {0ULL, 1ULL, 0x123456789ULL}) {
        EXPECT_EQ(Xxh64(buf.data() + off, len, seed), ref(buf.data() + off, len, seed)) << len << " " << off;
      }
    }
  }
  // The chunked form is XXH64 over the chunk digests.
  std::vector<uint64_t> d = {ref(buf.data(), 2048, 0), ref(buf.data() + 2048, 2048, 0), ref(buf.data() + 4096, 904, 0)};
  EXPECT_EQ(ChunkedXxh64(buf.data(), 5000, 2048, 3), ref(d.data(), d.size() * 8, 0));
  ::dlclose(lib);
}

TEST(NativeFormat, GraphRoundTripsEveryFieldInMemoryAndOnDisk) {
  Graph g = EveryKindGraph();
  std::string bytes = SerializeNativeModel(g);
  ExpectSameGraph(g, ReadNativeModelMemory(bytes.data(), bytes.size()));
  fs::path path = TempDir() / "kinds.ofm";
  WriteNativeModel(g, path.string());
  EXPECT_EQ(ReadAll(path), bytes) << "a file and a memory image of the same graph are the same bytes";
  ExpectSameGraph(g, ReadNativeModel(path.string()));
  ModelLoadOptions as_stored;  // the graph holds an op this build does not know (com.example Thing)
  as_stored.validate = false;
  ExpectSameGraph(g, LoadModelFile(path.string(), as_stored));
  try {
    LoadModelFile(path.string());  // validated by default: the unknown op is named
    ADD_FAILURE() << "a model with an unknown op loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("Thing"), std::string::npos) << e.what();
  }
}

TEST(NativeFormat, FileLoadIsZeroCopyAndKeepsTheMappingAlive) {
  Graph g = SmallMlp();
  fs::path path = TempDir() / "mlp.ofm";
  WriteNativeModel(g, path.string());
  Tensor w;
  {
    Graph loaded = ReadNativeModel(path.string());
    w = loaded.values[static_cast<size_t>(loaded.FindValue("W"))].constant;
    EXPECT_FALSE(w.storage()->owned()) << "weights must view the mapping, not a copy";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.raw()) % kSegmentAlignment, 0u);
    // The tensor's bytes are those at its segment's place in the file.
    std::string file = ReadAll(path);
    const char* base = static_cast<const char*>(w.storage()->data());
    size_t offset = static_cast<size_t>(static_cast<const char*>(w.raw()) - base);
    EXPECT_EQ(std::memcmp(file.data() + offset, w.raw(), w.nbytes()), 0);
  }
  // The graph is gone; the tensor still holds the mapping.
  const Tensor& ref = g.values[static_cast<size_t>(g.FindValue("W"))].constant;
  EXPECT_EQ(std::memcmp(w.raw(), ref.raw(), ref.nbytes()), 0);
}

TEST(NativeFormat, BorrowedMemoryLoadUsesTheCallersBytes) {
  Graph g = SmallMlp();
  std::string bytes = SerializeNativeModel(g);
  auto* buf = static_cast<unsigned char*>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64));
  std::memcpy(buf, bytes.data(), bytes.size());
  bool released = false;
  {
    Graph loaded = ReadNativeModelMemory(buf, bytes.size(), {}, [&] { released = true; });
    const Tensor& w = loaded.values[static_cast<size_t>(loaded.FindValue("W"))].constant;
    EXPECT_GE(static_cast<unsigned char*>(w.raw()), buf);
    EXPECT_LT(static_cast<unsigned char*>(w.raw()), buf + bytes.size());
    EXPECT_FALSE(released);
  }
  EXPECT_TRUE(released) << "release runs once the last tensor is gone";
  // Unaligned buffers cannot be used in place.
  std::string shifted = " " + bytes;
  EXPECT_THROW(ReadNativeModelMemory(shifted.data() + 1 + (reinterpret_cast<uintptr_t>(shifted.data() + 1) % 64 == 0),
                                     bytes.size(), {}, [] {}),
               Error);
  std::free(buf);
}

// Reference: the MLP computed with plain loops from the weights it was built with.
std::vector<float> MlpReference(const Graph& g, const std::vector<float>& x, int batch) {
  const float* w = g.values[static_cast<size_t>(g.FindValue("W"))].constant.data<float>();
  const float* b = g.values[static_cast<size_t>(g.FindValue("B"))].constant.data<float>();
  const Tensor& c = g.nodes[3].attrs.GetTensor("value");
  std::vector<float> y(static_cast<size_t>(batch) * 3);
  for (int r = 0; r < batch; ++r)
    for (int j = 0; j < 3; ++j) {
      float acc = 0;
      for (int k = 0; k < 4; ++k) acc += x[static_cast<size_t>(r * 4 + k)] * w[k * 3 + j];
      y[static_cast<size_t>(r * 3 + j)] = std::max(acc + b[j], 0.0f) + c.data<float>()[j];
    }
  return y;
}

TEST(NativeFormat, LoadedModelRunsLikeTheOriginal) {
  Graph g = SmallMlp();
  fs::path path = TempDir() / "run.ofm";
  WriteNativeModel(g, path.string(), ExternalData("mlp.weights"));
  EXPECT_TRUE(fs::exists(path.parent_path() / "mlp.weights"));
  Graph loaded = LoadModelFile(path.string());  // prepared by the loader
  Session s(loaded, SessionOptions{1, 2});
  std::vector<float> x = {1, 2, 3, 4, -1, -2, 0.5f, 8};
  auto out = s.Run({{"X", Make<float>(DType::kFloat32, {2, 4}, x)}}, {});
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> ref = MlpReference(g, x, 2);
  ASSERT_EQ(out[0].second.numel(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(out[0].second.data<float>()[i], ref[static_cast<size_t>(i)], 1e-5f) << i;
}

TEST(NativeFormat, ExternalDataProblemsAreNamed) {
  fs::path dir = TempDir() / "ext";
  fs::create_directories(dir);
  fs::path path = dir / "m.ofm";
  WriteNativeModel(SmallMlp(), path.string(), ExternalData("m.weights"));
  std::string weights = ReadAll(dir / "m.weights");
  auto error_of = [&] {
    try {
      ReadNativeModel(path.string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  {
    std::ofstream(dir / "m.weights", std::ios::binary) << weights.substr(0, weights.size() - 64);
  }
  EXPECT_NE(error_of().find("(truncated)"), std::string::npos) << error_of();
  fs::remove(dir / "m.weights");
  EXPECT_NE(error_of().find("m.weights"), std::string::npos) << error_of();
  // From memory, external data needs a base directory.
  std::string bytes = ReadAll(path);
  EXPECT_THROW(ReadNativeModelMemory(bytes.data(), bytes.size()), Error);
  {
    std::ofstream(dir / "m.weights", std::ios::binary) << weights;
  }
  EXPECT_NO_THROW(ReadNativeModelMemory(bytes.data(), bytes.size(), {}, {}, dir.string()));
  EXPECT_THROW(WriteNativeModel(SmallMlp(), path.string(), ExternalData("../escape.bin")), Error);
}

TEST(NativeFormat, CheckpointRoundTripsRolesTargetsAndMetadata) {
  Checkpoint c;
  c.step = 12345;
  c.metadata = {{"optimizer", "adam"}, {"lr", "0.001"}};
  c.tensors.push_back(CkptTensor("w", TensorRole::kParameter, Make<float>(DType::kFloat32, {2}, {1.f, 2.f})));
  c.tensors.push_back(CkptTensor("w.grad", TensorRole::kGradient, Make<float>(DType::kFloat32, {2}, {0.1f, 0.2f}), "w"));
  c.tensors.push_back(CkptTensor("w.m", TensorRole::kOptimizerState, Make<float>(DType::kFloat32, {2}, {3.f, 4.f}), "w", "m"));
  c.tensors.push_back(CkptTensor("bn.mean", TensorRole::kBuffer, Make<double>(DType::kFloat64, {1}, {0.5})));
  fs::path path = TempDir() / "ckpt.ofm";
  for (bool with_graph : {false, true}) {
    if (with_graph) c.graph = std::make_shared<const Graph>(SmallMlp());
    WriteCheckpoint(c, path.string());
    Checkpoint r = ReadCheckpoint(path.string());
    EXPECT_EQ(r.step, 12345);
    EXPECT_EQ(r.metadata, c.metadata);
    ASSERT_EQ(r.tensors.size(), c.tensors.size()) << "graph constants are not checkpoint tensors";
    for (const CheckpointTensor& t : c.tensors) {
      const CheckpointTensor* got = r.Find(t.name);
      ASSERT_NE(got, nullptr) << t.name;
      EXPECT_EQ(got->role, t.role);
      EXPECT_EQ(got->target, t.target);
      EXPECT_EQ(got->slot, t.slot);
      ExpectSameTensor(got->tensor, t.tensor, t.name);
    }
    EXPECT_EQ(r.graph != nullptr, with_graph);
    if (with_graph) ExpectSameGraph(*c.graph, *r.graph);
  }
  Checkpoint dup;
  dup.tensors = {c.tensors[0], c.tensors[0]};
  EXPECT_THROW(WriteCheckpoint(dup, (TempDir() / "dup.ofm").string()), Error);
  EXPECT_NO_THROW(ReadNativeModel(path.string())) << "a checkpoint with a graph loads as a model";
  c.graph = nullptr;
  WriteCheckpoint(c, path.string());
  EXPECT_THROW(ReadNativeModel(path.string()), Error) << "a checkpoint without a graph is no model";
}

// Loads `bytes`; returns the error (kOk when it loaded).
ErrorCode LoadError(const std::string& bytes, std::string* message) {
  return test_util::ErrorCodeOf([&] { ReadNativeModelMemory(bytes.data(), bytes.size()); }, message);
}

// A model with several weights, big enough that most of the file is weight data.
Graph WeightHeavy() {
  Graph g = SmallMlp();
  int prev = g.outputs[0];
  for (int i = 0; i < 4; ++i) {
    std::vector<float> v(3 * 250);
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k % 17) * 0.125f + static_cast<float>(i);
    int c = test_util::AddParam(g, "extra" + std::to_string(i), Make<float>(DType::kFloat32, {250, 3}, v));
    prev = test_util::AddOp(g, "Add", {prev, c}, "sum" + std::to_string(i));
  }
  g.outputs = {prev};
  return g;
}

TEST(NativeFormat, EveryTruncationFailsCleanly) {
  std::string bytes = SerializeNativeModel(WeightHeavy());
  for (int k = 0; k < 64; ++k) {
    size_t len = bytes.size() * static_cast<size_t>(k) / 64;
    std::string msg;
    EXPECT_EQ(LoadError(bytes.substr(0, len), &msg), ErrorCode::kInvalidModel) << "truncated to " << len;
    EXPECT_TRUE(msg.find("truncated") != std::string::npos || msg.find("too short") != std::string::npos)
        << len << ": " << msg;
  }
  std::string msg;
  EXPECT_EQ(LoadError(bytes + std::string(64, '\0'), &msg), ErrorCode::kInvalidModel);
}

TEST(NativeFormat, ThousandRandomBitFlipsAreAllDetected) {
  Graph g = WeightHeavy();
  std::string bytes = SerializeNativeModel(g);
  // Where each weight's bytes are: found independently by searching the file for the tensor's data.
  struct Range { size_t begin, end; std::string name; };
  std::vector<Range> weights;
  for (const Value& v : g.values) {
    if (!v.constant.defined() || v.constant.nbytes() < 32) continue;
    size_t at = bytes.find(std::string(static_cast<const char*>(v.constant.raw()), v.constant.nbytes()));
    ASSERT_NE(at, std::string::npos) << v.name;
    weights.push_back({at, at + v.constant.nbytes(), v.name});
  }
  size_t weight_bytes = 0;
  for (const Range& r : weights) weight_bytes += r.end - r.begin;
  EXPECT_GT(weight_bytes * 2, bytes.size()) << "most of the file should be weights";
  std::mt19937_64 rng(7);
  int named = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::string bad = bytes;
    size_t bit = static_cast<size_t>(rng() % (bad.size() * 8));
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    std::string msg;
    ErrorCode code = LoadError(bad, &msg);
    ASSERT_NE(code, ErrorCode::kOk) << "flip of bit " << bit << " went unnoticed";
    EXPECT_TRUE(code == ErrorCode::kInvalidModel || code == ErrorCode::kUnsupported) << msg;
    for (const Range& r : weights)
      if (bit / 8 >= r.begin && bit / 8 < r.end) {
        EXPECT_NE(msg.find("checksum mismatch in tensor '" + r.name + "'"), std::string::npos) << msg;
        ++named;
      }
  }
  EXPECT_GT(named, 400) << "most flips land in weight data";
}

TEST(NativeFormat, WrongMagicAndNewerVersionAreNamed) {
  std::string bytes = SerializeNativeModel(SmallMlp());
  std::string msg;
  std::string onnxish = bytes;
  onnxish[1] = 'X';
  EXPECT_EQ(LoadError(onnxish, &msg), ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("wrong magic"), std::string::npos) << msg;
  // A well-formed header of the next major version: refused as unsupported, naming both versions.
  std::string newer = bytes;
  auto* h = reinterpret_cast<unsigned char*>(newer.data());
  native::Put32(h + 8, kNativeFormatMajor + 1);
  native::Put64(h + 56, Xxh64(h, 56));
  EXPECT_EQ(LoadError(newer, &msg), ErrorCode::kUnsupported);
  const std::string named = "format version " + std::to_string(kNativeFormatMajor + 1) + "." +
                            std::to_string(kNativeFormatMinor) + ", newer than the newest this build reads (" +
                            std::to_string(kNativeFormatMajor) + "." + std::to_string(kNativeFormatMinor) + ")";
  EXPECT_NE(msg.find(named), std::string::npos) << msg;
  // A newer minor version of our major version is read (fields are only appended).
  std::string minor = bytes;
  h = reinterpret_cast<unsigned char*>(minor.data());
  native::Put32(h + 12, kNativeFormatMinor + 3);
  native::Put64(h + 56, Xxh64(h, 56));
  EXPECT_EQ(LoadError(minor, &msg), ErrorCode::kOk) << msg;
}

TEST(NativeFormat, SniffingAndExtensionDispatch) {
  std::string bytes = SerializeNativeModel(SmallMlp());
  EXPECT_EQ(SniffModelFormat(bytes.data(), bytes.size()), ModelFormat::kNative);
  EXPECT_EQ(SniffModelFormat("\x08\x08", 2), ModelFormat::kOnnx);
  EXPECT_EQ(FormatFromExtension("a/b.OFM"), ModelFormat::kNative);
  EXPECT_EQ(FormatFromExtension("b.onnx"), ModelFormat::kOnnx);
  EXPECT_EQ(FormatFromExtension("b.bin"), ModelFormat::kAuto);
  Graph g = LoadModelMemory(bytes.data(), bytes.size());
  EXPECT_EQ(g.nodes.size(), 5u);
  try {
    SaveModel(g, (TempDir() / "x.bin").string());
    ADD_FAILURE() << "unknown extension accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(NativeFormat, FailedWriteLeavesTheOldFileIntact) {
  fs::path path = TempDir() / "keep.ofm";
  WriteNativeModel(SmallMlp(), path.string());
  std::string before = ReadAll(path);
  Graph bad = SmallMlp();
  Node n;
  n.op_type = "Constant";
  n.outputs = {bad.FindValue("mm")};
  Attribute a;  // a kind-less attribute cannot be written
  n.attrs.set("value", a);
  bad.nodes.push_back(n);
  EXPECT_THROW(WriteNativeModel(bad, path.string()), Error);
  EXPECT_EQ(ReadAll(path), before);
  for (const auto& e : fs::directory_iterator(path.parent_path()))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
}

}  // namespace
}  // namespace oneflow
