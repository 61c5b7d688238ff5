// Runs every row of the op-case table (tests/ops/make_op_cases.py: one-node models with outputs
// from onnx.reference) on every backend this machine has, as gtest cases named <Backend>.<case>:
//   OpCasesCpu      a CPU session
//   OpCasesCuda     a CUDA session (skipped with "no CUDA device" where there is none)
//   OpCasesSharded  a 2-device sharded run: a DistributedSession on cpu:0-1 whose plan splits the
//                   row's `split` input (the planner picks the rest and inserts the boxing)
//   OpCasesGrad     finite differences against the op's gradient rule (tests/unit/gradcheck.h), for
//                   rows whose op has one and whose inputs are floats
// Every backend is compared with the reference at the row's tolerance (numpy.allclose; NaN == NaN).
//
//   oneflow_op_case_tests CASES_DIR [gtest flags]
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../unit/gradcheck.h"
#include "engine/distributed_session.h"
#include "engine/session.h"
#include "graph/op_schema.h"
#include "serialize/model_io.h"
#include "serialize/onnx_import.h"
#ifdef ONEFLOW_HAVE_CUDA
#include "device/cuda/cuda_device.h"
#endif

namespace fs = std::filesystem;

namespace oneflow {
namespace {

struct OpCase {
  std::string name;
  fs::path dir;
  std::string split_input;  // empty: the sharded run splits nothing (the planner alone decides)
  int split_axis = 0;
  bool grad = true;
  double rtol = 1e-5, atol = 1e-6;
};

OpCase ReadCase(const fs::path& dir) {
  OpCase c;
  c.name = dir.filename().string();
  c.dir = dir;
  std::ifstream in(dir / "case.txt");
  std::string key;
  while (in >> key) {
    if (key == "split") in >> c.split_input >> c.split_axis;
    else if (key == "grad") in >> c.grad;
    else if (key == "rtol") in >> c.rtol;
    else if (key == "atol") in >> c.atol;
    else throw std::runtime_error(c.name + "/case.txt: unknown key '" + key + "'");
  }
  return c;
}

Tensor ReadTensor(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return LoadOnnxTensorBytes(bytes.data(), bytes.size());
}

struct Loaded {
  Graph g;
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::vector<Tensor> want;
};

Loaded Load(const OpCase& c) {
  Loaded l;
  l.g = LoadModelFile((c.dir / "model.onnx").string());  // validated by the loader
  const fs::path data = c.dir / "test_data_set_0";
  for (size_t k = 0; k < l.g.inputs.size(); ++k)
    l.feeds.emplace_back(l.g.values[static_cast<size_t>(l.g.inputs[k])].name,
                         ReadTensor(data / ("input_" + std::to_string(k) + ".pb")));
  for (size_t k = 0; k < l.g.outputs.size(); ++k) l.want.push_back(ReadTensor(data / ("output_" + std::to_string(k) + ".pb")));
  return l;
}

void ExpectClose(const OpCase& c, const std::vector<std::pair<std::string, Tensor>>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor& g = got[k].second;
    const Tensor& w = want[k];
    ASSERT_EQ(DTypeName(g.dtype()), DTypeName(w.dtype())) << "output " << k;
    ASSERT_EQ(ShapeToString(g.shape()), ShapeToString(w.shape())) << "output " << k;
    int bad = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double x = g.GetAsDouble(i), y = w.GetAsDouble(i);
      if ((std::isnan(x) && std::isnan(y)) || x == y) continue;
      if (std::fabs(x - y) <= c.atol + c.rtol * std::fabs(y)) continue;
      if (++bad <= 3) ADD_FAILURE() << "output " << k << " element " << i << ": got " << x << ", onnx.reference " << y;
    }
    EXPECT_EQ(bad, 0) << "output " << k << ": " << bad << " of " << w.numel() << " elements differ";
  }
}

Tensor ToFloat64(const Tensor& t) {
  if (!IsFloatDType(t.dtype())) return t;
  Tensor d(DType::kFloat64, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) d.data<double>()[i] = t.GetAsDouble(i);
  return d;
}

enum class Backend { kCpu, kCuda, kSharded, kGrad };

class OpCaseTest : public ::testing::Test {
 public:
  OpCaseTest(OpCase c, Backend b) : c_(std::move(c)), backend_(b) {}

  void TestBody() override {
    Loaded l = Load(c_);
    SessionOptions so;
    so.intra_op_threads = 1;
    switch (backend_) {
      case Backend::kCpu:
        return ExpectClose(c_, Session(l.g, so).Run(l.feeds, {}), l.want);
      case Backend::kCuda: {
#ifdef ONEFLOW_HAVE_CUDA
        std::string why;
        if (cuda::DeviceCount(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
        so.device = DeviceType::kCuda;
        return ExpectClose(c_, Session(l.g, so).Run(l.feeds, {}), l.want);
#else
        GTEST_SKIP() << "no CUDA device: built without CUDA";
#endif
      }
      case Backend::kSharded: {
        DistributedOptions d;
        d.plan.placement = Placement::Parse("cpu:0-1");
        d.plan.mode = PlanMode::kAuto;
        if (!c_.split_input.empty()) d.plan.sbp[c_.split_input] = NdSbp{Sbp::S(c_.split_axis)};
        DistributedSession ds(l.g, so, d);
        ExpectClose(c_, ds.Run(l.feeds, {}), l.want);
        if (c_.split_input.empty()) return;
        // The run really was sharded: the plan feeds the split input as S(axis).
        std::map<std::string, Shape> shapes;
        for (const auto& [name, t] : l.feeds) shapes[name] = t.shape();
        const auto plan = ds.PlanFor(shapes);
        const int id = plan->logical.FindValue(c_.split_input);
        ASSERT_GE(id, 0) << c_.split_input;
        const NdSbp& sbp = plan->value_sbp.at(static_cast<size_t>(id));
        ASSERT_EQ(sbp.size(), 1u);
        EXPECT_TRUE(sbp[0].is_split() && sbp[0].axis == c_.split_axis) << c_.split_input << " planned as " << sbp[0].ToString();
        return;
      }
      case Backend::kGrad:
        return RunGrad(l);
    }
  }

 private:
  // The row's node, differentiated at the row's inputs (in f64) by finite differences.
  void RunGrad(const Loaded& l) {
    const Node& n = l.g.nodes.at(0);
    testing::GradCheckCase gc(n.op_type, n.domain);
    gc.opset = n.opset;
    for (const auto& [name, attr] : n.attrs.all())
    if (!n.defaulted_attrs.count(name)) gc.Attr(name, attr);  // the model's own; the check's graph fills defaults
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.has_input(i)) {
        gc.Omitted();
        continue;
      }
      const Value& v = l.g.values[static_cast<size_t>(n.inputs[i])];
      if (v.constant.defined()) {
        gc.Const(v.name, ToFloat64(v.constant));
        continue;
      }
      for (const auto& [name, t] : l.feeds)
        if (name == v.name) gc.Input(name, ToFloat64(t));
    }
    gc.num_outputs = static_cast<int>(n.outputs.size());
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!IsFloatDType(l.g.values[static_cast<size_t>(n.outputs[k])].type.dtype)) gc.skip_outputs.push_back(static_cast<int>(k));
    testing::RunGradCheck(gc);
  }

  OpCase c_;
  Backend backend_;
};

// Whether the finite-difference check applies: the op has a gradient rule, the row allows it, and
// every fed input is a float tensor.
bool WantsGrad(const OpCase& c) {
  if (!c.grad) return false;
  const Loaded l = Load(c);
  const Node& n = l.g.nodes.at(0);
  if (n.schema == nullptr || !n.schema->grad) return false;
  for (const auto& feed : l.feeds)
    if (!IsFloatDType(feed.second.dtype())) return false;
  return true;
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::cerr << "usage: oneflow_op_case_tests CASES_DIR [gtest flags] (make it with tests/ops/make_op_cases.py)\n";
    return 2;
  }
  using oneflow::Backend;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(argv[1]))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) {
    std::cerr << argv[1] << ": no op cases\n";
    return 2;
  }
  const std::pair<const char*, Backend> backends[] = {
      {"OpCasesCpu", Backend::kCpu}, {"OpCasesCuda", Backend::kCuda}, {"OpCasesSharded", Backend::kSharded},
      {"OpCasesGrad", Backend::kGrad}};
  for (const fs::path& dir : dirs) {
    const oneflow::OpCase c = oneflow::ReadCase(dir);
    for (const auto& [suite, backend] : backends) {
      if (backend == Backend::kGrad && !oneflow::WantsGrad(c)) continue;
      ::testing::RegisterTest(suite, c.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [c, backend = backend]() -> ::testing::Test* { return new oneflow::OpCaseTest(c, backend); });
    }
  }
  return RUN_ALL_TESTS();
}
