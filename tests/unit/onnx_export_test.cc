// ONNX export: every attribute kind, symbolic dims, metadata, external data, refusals, atomic saves.
// Exports are read back with the protobuf classes directly (not only through our importer), and
// compared with the values the test put in.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/session.h"
#include "graph/op_schema.h"
#include "onnx.pb.h"
#include "serialize/onnx_export.h"
#include "serialize/onnx_import.h"
#include "../test_support.h"
#include "../graph_builder.h"

namespace oneflow {
namespace {

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// A fresh directory under /tmp, removed with its (flat) contents when the test ends.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/oneflow_export_test_XXXXXX";
    const char* dir = ::mkdtemp(tmpl);
    EXPECT_NE(dir, nullptr);
    path = dir ? dir : "/tmp";
  }
  ~TempDir() {
    for (const std::string& f : ListDir(path)) ::unlink((path + "/" + f).c_str());
    ::rmdir(path.c_str());
  }
};

onnx::ModelProto Parse(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

Tensor FloatTensor(Shape shape, float start) {
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

// Y = X + W with W an initializer of `w_elems` floats; X is float[batch, w_elems].
Graph AddGraph(int64_t w_elems) {
  Graph g;
  g.name = "add";
  g.opset_imports[""] = 17;
  int x = g.AddValue("X", TensorType::Of(DType::kFloat32, {Dim::Symbol("batch"), Dim::Known(w_elems)}));
  int w = test_util::AddParam(g, "W", FloatTensor({w_elems}, 0.5f));
  int y = test_util::AddOp(g, "Add", {x, w}, "Y");
  g.values[static_cast<size_t>(y)].type = TensorType::Of(DType::kFloat32, {Dim::Symbol("batch"), Dim::Known(w_elems)});
  g.inputs = {x};
  g.outputs = {y};
  return g;
}

TEST(OnnxExport, AttributesOfEveryKind) {
  Graph g = AddGraph(2);
  g.opset_imports["test.domain"] = 1;
  Node n;
  n.name = "custom";
  n.op_type = "Custom";
  n.domain = "test.domain";
  n.opset = 1;
  n.inputs = {g.FindValue("Y")};
  n.outputs = {g.AddValue("Z")};
  Tensor t(DType::kInt32, {2, 2});
  for (int i = 0; i < 4; ++i) t.data<int32_t>()[i] = 10 * i - 7;
  n.attrs.set("f", Attribute::Float(-2.5f));
  n.attrs.set("i", Attribute::Int(int64_t{1} << 40));
  n.attrs.set("s", Attribute::String(std::string("a\0b", 3)));
  n.attrs.set("t", Attribute::TensorValue(t));
  n.attrs.set("fs", Attribute::Floats({1.5f, -0.25f}));
  n.attrs.set("is", Attribute::Ints({-1, 0, 7}));
  n.attrs.set("ss", Attribute::Strings({"x", "", "yz"}));
  n.attrs.set("empty_ints", Attribute::Ints({}));
  g.nodes.push_back(n);
  g.outputs.push_back(g.FindValue("Z"));

  onnx::ModelProto m = Parse(SerializeOnnxModel(g));
  ASSERT_EQ(m.graph().node_size(), 2);
  const onnx::NodeProto& np = m.graph().node(1);
  EXPECT_EQ(np.domain(), "test.domain");
  std::map<std::string, const onnx::AttributeProto*> attrs;
  for (const auto& a : np.attribute()) attrs[a.name()] = &a;
  ASSERT_EQ(attrs.size(), 8u);
  using AP = onnx::AttributeProto;
  EXPECT_EQ(attrs["f"]->type(), AP::FLOAT);
  EXPECT_EQ(attrs["f"]->f(), -2.5f);
  EXPECT_EQ(attrs["i"]->type(), AP::INT);
  EXPECT_EQ(attrs["i"]->i(), int64_t{1} << 40);
  EXPECT_EQ(attrs["s"]->type(), AP::STRING);
  EXPECT_EQ(attrs["s"]->s(), std::string("a\0b", 3));
  EXPECT_EQ(attrs["t"]->type(), AP::TENSOR);
  EXPECT_EQ(attrs["t"]->t().data_type(), onnx::TensorProto::INT32);
  EXPECT_EQ(std::vector<int64_t>(attrs["t"]->t().dims().begin(), attrs["t"]->t().dims().end()),
            (std::vector<int64_t>{2, 2}));
  std::vector<int32_t> tv(4);
  ASSERT_EQ(attrs["t"]->t().raw_data().size(), 16u);
  std::memcpy(tv.data(), attrs["t"]->t().raw_data().data(), 16);
  EXPECT_EQ(tv, (std::vector<int32_t>{-7, 3, 13, 23}));
  EXPECT_EQ(attrs["fs"]->type(), AP::FLOATS);
  EXPECT_EQ(std::vector<float>(attrs["fs"]->floats().begin(), attrs["fs"]->floats().end()),
            (std::vector<float>{1.5f, -0.25f}));
  EXPECT_EQ(attrs["is"]->type(), AP::INTS);
  EXPECT_EQ(std::vector<int64_t>(attrs["is"]->ints().begin(), attrs["is"]->ints().end()),
            (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_EQ(attrs["ss"]->type(), AP::STRINGS);
  EXPECT_EQ(std::vector<std::string>(attrs["ss"]->strings().begin(), attrs["ss"]->strings().end()),
            (std::vector<std::string>{"x", "", "yz"}));
  EXPECT_EQ(attrs["empty_ints"]->type(), AP::INTS);
  EXPECT_EQ(attrs["empty_ints"]->ints_size(), 0);
}

TEST(OnnxExport, SymbolicAndUnknownDimsAndMetadata) {
  onnx::ModelProto src;
  src.set_ir_version(8);
  src.set_producer_name("unit-test");
  src.set_producer_version("9.9");
  src.set_doc_string("model doc");
  src.set_model_version(42);
  auto* kv = src.add_metadata_props();
  kv->set_key("author");
  kv->set_value("me");
  src.add_opset_import()->set_version(17);
  onnx::GraphProto* gp = src.mutable_graph();
  gp->set_name("g");
  gp->set_doc_string("graph doc");
  auto* in = gp->add_input();
  in->set_name("X");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  tt->mutable_shape()->add_dim();  // unknown
  auto* relu = gp->add_node();
  relu->set_op_type("Relu");
  relu->add_input("X");
  relu->add_output("H");
  relu->set_doc_string("relu doc");
  auto* leaky = gp->add_node();
  leaky->set_op_type("LeakyRelu");  // alpha left to its default: PrepareGraph fills it in
  leaky->add_input("H");
  leaky->add_output("Y");
  auto* vi = gp->add_value_info();
  vi->set_name("H");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  gp->add_output()->set_name("Y");
  std::string bytes = src.SerializeAsString();
  Graph g = LoadOnnxBytes(bytes.data(), bytes.size());
  PrepareGraph(g);
  ASSERT_TRUE(g.nodes[1].attrs.has("alpha"));  // the IR has it, the export must not invent it

  onnx::ModelProto m = Parse(SerializeOnnxModel(g));
  const auto& shape = m.graph().input(0).type().tensor_type().shape();
  ASSERT_EQ(shape.dim_size(), 3);
  EXPECT_EQ(shape.dim(0).dim_param(), "batch");
  EXPECT_FALSE(shape.dim(0).has_dim_value());
  EXPECT_EQ(shape.dim(1).dim_value(), 3);
  EXPECT_FALSE(shape.dim(2).has_dim_value() || shape.dim(2).has_dim_param());
  // The output's type is the inferred one, symbolic dims included.
  const auto& out_shape = m.graph().output(0).type().tensor_type().shape();
  ASSERT_EQ(out_shape.dim_size(), 3);
  EXPECT_EQ(out_shape.dim(0).dim_param(), "batch");
  EXPECT_EQ(m.graph().node(1).attribute_size(), 0);
  EXPECT_EQ(m.graph().node(0).doc_string(), "relu doc");
  ASSERT_EQ(m.graph().value_info_size(), 1);
  EXPECT_EQ(m.graph().value_info(0).name(), "H");
  EXPECT_EQ(m.graph().value_info(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(m.producer_name(), "unit-test");
  EXPECT_EQ(m.producer_version(), "9.9");
  EXPECT_EQ(m.doc_string(), "model doc");
  EXPECT_EQ(m.model_version(), 42);
  EXPECT_EQ(m.graph().doc_string(), "graph doc");
  ASSERT_EQ(m.metadata_props_size(), 1);
  EXPECT_EQ(m.metadata_props(0).key(), "author");
  EXPECT_EQ(m.metadata_props(0).value(), "me");
  EXPECT_EQ(m.ir_version(), 8);  // the oldest IR version that carries opset 17
}

TEST(OnnxExport, TrainedParametersExportTheirCurrentValues) {
  Graph g = AddGraph(3);
  Tensor updated = FloatTensor({3}, -100.0f);  // as an optimizer step would leave it
  g.values[static_cast<size_t>(g.FindValue("W"))].constant = updated;
  std::string bytes = SerializeOnnxModel(g);
  Graph back = LoadOnnxBytes(bytes.data(), bytes.size());
  const Tensor& w = back.values[static_cast<size_t>(back.FindValue("W"))].constant;
  ASSERT_EQ(w.numel(), 3);
  EXPECT_EQ(w.data<float>()[0], -100.0f);
  EXPECT_EQ(w.data<float>()[2], -98.0f);
}

TEST(OnnxExport, ExternalDataWhenForcedOverTheThreshold) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  const std::string path = dir + "/model.onnx";
  Graph g = AddGraph(4096);  // W: 16 KiB
  int b = g.AddConstant("b_small", FloatTensor({4}, 1.0f));
  g.values[static_cast<size_t>(b)].is_parameter = true;
  OnnxExportOptions options;
  options.external_threshold_bytes = 1000;  // W + b exceed it: external data
  SaveOnnxModel(g, path, options);

  std::vector<std::string> files = ListDir(dir);
  ASSERT_EQ(files.size(), 2u);
  const std::string data_name = files[0] == "model.onnx" ? files[1] : files[0];
  EXPECT_EQ(data_name.rfind("model.onnx.", 0), 0u) << data_name;
  onnx::ModelProto m = Parse(test_util::ReadFileBytes(path));
  ASSERT_EQ(m.graph().initializer_size(), 2);
  for (const auto& tp : m.graph().initializer()) {
    if (tp.name() == "b_small") {  // under min_external_tensor_bytes: inline
      EXPECT_NE(tp.data_location(), onnx::TensorProto::EXTERNAL);
      EXPECT_EQ(tp.raw_data().size(), 16u);
      continue;
    }
    ASSERT_EQ(tp.data_location(), onnx::TensorProto::EXTERNAL);
    EXPECT_FALSE(tp.has_raw_data());
    std::map<std::string, std::string> ext;
    for (const auto& e : tp.external_data()) ext[e.key()] = e.value();
    EXPECT_EQ(ext["location"], data_name);
    EXPECT_EQ(ext["length"], "16384");
    size_t offset = std::stoul(ext["offset"]);
    EXPECT_EQ(offset % 64, 0u);
    std::string data = test_util::ReadFileBytes(dir + "/" + data_name);
    ASSERT_GE(data.size(), offset + 16384);
    std::vector<float> w(4096);
    std::memcpy(w.data(), data.data() + offset, 16384);
    EXPECT_EQ(w[0], 0.5f);
    EXPECT_EQ(w[4095], 4095.5f);
  }
  Graph back = LoadOnnxFile(path);
  EXPECT_EQ(back.values[static_cast<size_t>(back.FindValue("W"))].constant.data<float>()[100], 100.5f);

  // Saving again writes a new data file and removes the one the replaced model used.
  SaveOnnxModel(g, path, options);
  files = ListDir(dir);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(std::count(files.begin(), files.end(), data_name), 0);
  EXPECT_EQ(LoadOnnxFile(path).values.size(), back.values.size());

  // Under the default 1 GB threshold the same model is written inline.
  SaveOnnxModel(g, path);
  EXPECT_EQ(ListDir(dir), std::vector<std::string>{"model.onnx"});
  EXPECT_EQ(Parse(test_util::ReadFileBytes(path)).graph().initializer(0).raw_data().size(), 16384u);
}

TEST(OnnxExport, InternalOpsAreRefusedByName) {
  Graph g = AddGraph(2);
  g.nodes[0].op_type = "FusedConv";
  g.nodes[0].domain = kOneflowDomain;
  std::string msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { SerializeOnnxModel(g); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("FusedConv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ai.oneflow"), std::string::npos) << msg;
  TempDir tmp;
  const std::string& dir = tmp.path;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { SaveOnnxModel(g, dir + "/m.onnx"); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(ListDir(dir).empty());
}

// The realistic case: a session's optimized graph holds fusions; its model() is what gets exported.
TEST(OnnxExport, OptimizedSessionGraphIsRefusedItsModelExports) {
  onnx::ModelProto src;
  src.add_opset_import()->set_version(17);
  onnx::GraphProto* gp = src.mutable_graph();
  auto* x = gp->add_input();
  x->set_name("X");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int d : {1, 2, 5, 5}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  onnx::TensorProto* w = gp->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int d : {4, 2, 3, 3}) w->add_dims(d);
  for (int i = 0; i < 72; ++i) w->add_float_data(0.01f * static_cast<float>(i % 7) - 0.02f);
  auto* conv = gp->add_node();
  conv->set_op_type("Conv");
  conv->add_input("X");
  conv->add_input("W");
  conv->add_output("C");
  auto* relu = gp->add_node();
  relu->set_op_type("Relu");
  relu->add_input("C");
  relu->add_output("Y");
  gp->add_output()->set_name("Y");
  std::string bytes = src.SerializeAsString();
  Graph g = LoadOnnxBytes(bytes.data(), bytes.size());
  PrepareGraph(g);
  Session session(g, SessionOptions{});
  std::string fused;
  for (const Node& n : session.optimized().nodes)
    if (n.domain == kOneflowDomain) fused = n.op_type;
  ASSERT_FALSE(fused.empty()) << "the optimizer fused nothing; this test needs a fusion";
  std::string msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { SerializeOnnxModel(session.optimized()); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find(fused), std::string::npos) << msg;
  onnx::ModelProto m = Parse(SerializeOnnxModel(session.model()));
  ASSERT_EQ(m.graph().node_size(), 2);
  EXPECT_EQ(m.graph().node(0).op_type(), "Conv");
  EXPECT_EQ(m.graph().node(1).op_type(), "Relu");
}

TEST(OnnxExport, FailingSaveLeavesTheExistingModelAndItsDataIntact) {
  TempDir tmp;
  const std::string& dir = tmp.path;
  const std::string path = dir + "/model.onnx";
  Graph g = AddGraph(1024);
  OnnxExportOptions external;
  external.external_data = OnnxExportOptions::ExternalData::kAlways;
  SaveOnnxModel(g, path, external);
  const std::vector<std::string> before = ListDir(dir);
  const std::string model_before = test_util::ReadFileBytes(path);

  // Refused before anything is written.
  Graph bad = AddGraph(1024);
  bad.nodes[0].domain = kOneflowDomain;
  std::string msg;
  EXPECT_NE(test_util::ErrorCodeOf([&] { SaveOnnxModel(bad, path, external); }, &msg), ErrorCode::kOk);
  // Fails while writing: the data file's directory does not exist.
  Graph changed = AddGraph(1024);
  changed.values[static_cast<size_t>(changed.FindValue("W"))].constant = FloatTensor({1024}, 7.0f);
  OnnxExportOptions missing_dir = external;
  missing_dir.data_file = "no_such_dir/w.data";
  EXPECT_NE(test_util::ErrorCodeOf([&] { SaveOnnxModel(changed, path, missing_dir); }, &msg), ErrorCode::kOk);
  EXPECT_NE(msg.find("no_such_dir"), std::string::npos) << msg;

  EXPECT_EQ(ListDir(dir), before);  // no temporary or orphaned files either
  EXPECT_EQ(test_util::ReadFileBytes(path), model_before);
  Graph back = LoadOnnxFile(path);  // the old pair still loads, with the old values
  EXPECT_EQ(back.values[static_cast<size_t>(back.FindValue("W"))].constant.data<float>()[3], 3.5f);
}

TEST(OnnxExport, OverTwoGigabytesInMemoryIsRefusedPointingToThePathForm) {
  // 2.25 GB of untouched anonymous memory: never read, since the refusal comes first.
  const size_t bytes = (size_t{9} << 28);
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  Graph g = AddGraph(2);
  Tensor big(DType::kFloat32, {static_cast<int64_t>(bytes / 4)},
             Storage::Borrow(p, bytes, [p, bytes] { ::munmap(p, bytes); }));
  g.values[static_cast<size_t>(g.FindValue("W"))].constant = big;
  std::string msg;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { SerializeOnnxModel(g); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("2 GB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("SaveOnnxModel"), std::string::npos) << msg;
  OnnxExportOptions never;
  never.external_data = OnnxExportOptions::ExternalData::kNever;
  TempDir tmp;
  const std::string& dir = tmp.path;
  EXPECT_EQ(test_util::ErrorCodeOf([&] { SaveOnnxModel(g, dir + "/m.onnx", never); }, &msg), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(ListDir(dir).empty());
}

// A model with 3 GB of weights exports (external data) and loads back. Opt-in: it writes 3 GB.
TEST(OnnxExport, ThreeGigabyteModelRoundTrips) {
  if (std::getenv("ONEFLOW_BIG_EXPORT_TEST") == nullptr)
    GTEST_SKIP() << "writes and reads 3 GB; set ONEFLOW_BIG_EXPORT_TEST=1 to run";
  const int64_t n = int64_t{3} << 28;  // 3 GiB of float32
  Graph g = AddGraph(n);
  Tensor& w = g.values[static_cast<size_t>(g.FindValue("W"))].constant;
  for (int64_t i = 0; i < n; i += 4096) w.data<float>()[i] = static_cast<float>(i % 1000003);
  TempDir tmp;
  const std::string& dir = tmp.path;
  SaveOnnxModel(g, dir + "/big.onnx");
  Graph back = LoadOnnxFile(dir + "/big.onnx");
  const Tensor& r = back.values[static_cast<size_t>(back.FindValue("W"))].constant;
  ASSERT_EQ(r.numel(), n);
  EXPECT_EQ(std::memcmp(r.raw(), w.raw(), w.nbytes()), 0);
}

}  // namespace
}  // namespace oneflow
