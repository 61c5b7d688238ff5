// Spatial kernels (pooling, Einsum, Resize) on larger random inputs, multi-threaded, vs naive loops.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "../graph_builder.h"
#include "../run_node.h"
#include "kernels/node_runner.h"
#include "engine/session.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

// One node through the executor's path (tests/run_node.h).
using test_util::PreparedNode;

std::vector<Tensor> RunNode(const std::string& op, int opset, const std::vector<Tensor>& inputs, AttrMap attrs,
                            size_t num_outputs = 1) {
  ThreadPool pool(2);
  return test_util::RunNode({op, "", opset, std::move(attrs), inputs, num_outputs}, pool);
}

Tensor RandomTensor(const Shape& shape, uint32_t seed, DType dt = DType::kFloat32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  Tensor t(dt, shape);
  DispatchNumeric(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(rng) * (std::is_integral_v<T> ? 20 : 1));
  });
  return t;
}

struct PoolCase {
  std::string op;  // MaxPool, AveragePool, LpPool
  Shape x;
  std::vector<int64_t> kernel, strides, dilations, pads;
  int64_t ceil_mode = 0, count_include_pad = 0, p = 2;
};

// Naive pooling written straight from the ONNX definition, independent of the kernel's geometry.
std::vector<double> NaivePool(const PoolCase& c, const Tensor& x, Shape* out_shape, std::vector<int64_t>* argmax) {
  const size_t r = c.kernel.size();
  Shape out = {c.x[0], c.x[1]};
  for (size_t d = 0; d < r; ++d) {
    int64_t ek = (c.kernel[d] - 1) * c.dilations[d] + 1;
    double len = static_cast<double>(c.x[d + 2] + c.pads[d] + c.pads[d + r] - ek) / c.strides[d] + 1;
    int64_t o = c.ceil_mode ? static_cast<int64_t>(std::ceil(len)) : static_cast<int64_t>(std::floor(len));
    if (c.ceil_mode && (o - 1) * c.strides[d] >= c.x[d + 2] + c.pads[d]) --o;
    out.push_back(o);
  }
  *out_shape = out;
  const float* px = x.data<float>();
  std::vector<double> y;
  int64_t planes = c.x[0] * c.x[1], in_plane = 1, out_plane = 1, win = 1;
  for (size_t d = 0; d < r; ++d) { in_plane *= c.x[d + 2]; out_plane *= out[d + 2]; win *= c.kernel[d]; }
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o = 0; o < out_plane; ++o) {
      std::vector<int64_t> oi(r);
      for (int64_t rem = o, d = static_cast<int64_t>(r) - 1; d >= 0; --d) { oi[d] = rem % out[d + 2]; rem /= out[d + 2]; }
      double mx = -std::numeric_limits<double>::infinity(), sum = 0, lp = 0;
      int64_t valid = 0, padded = 0, best = -1;
      for (int64_t w = 0; w < win; ++w) {
        std::vector<int64_t> ki(r);
        for (int64_t rem = w, d = static_cast<int64_t>(r) - 1; d >= 0; --d) { ki[d] = rem % c.kernel[d]; rem /= c.kernel[d]; }
        bool in = true, pad = true;
        int64_t flat = 0;
        for (size_t d = 0; d < r; ++d) {
          int64_t pos = oi[d] * c.strides[d] - c.pads[d] + ki[d] * c.dilations[d];
          if (pos < 0 || pos >= c.x[d + 2]) in = false;
          if (pos >= c.x[d + 2] + c.pads[d + r]) pad = false;
          flat = flat * c.x[d + 2] + pos;
        }
        padded += pad;
        if (!in) continue;
        ++valid;
        double v = px[p * in_plane + flat];
        if (v > mx) { mx = v; best = p * in_plane + flat; }
        sum += v;
        lp += std::pow(std::fabs(v), static_cast<double>(c.p));
      }
      if (c.op == "MaxPool") y.push_back(mx);
      else if (c.op == "AveragePool") y.push_back(sum / static_cast<double>(c.count_include_pad ? padded : valid));
      else y.push_back(std::pow(lp, 1.0 / static_cast<double>(c.p)));
      if (argmax) argmax->push_back(best);
    }
  }
  return y;
}

void CheckPool(const PoolCase& c, bool with_indices = false) {
  SCOPED_TRACE(c.op + " x=" + ShapeToString(c.x) + " k=" + ShapeToString(c.kernel) + " s=" + ShapeToString(c.strides) +
               " d=" + ShapeToString(c.dilations) + " p=" + ShapeToString(c.pads) + " ceil=" + std::to_string(c.ceil_mode) +
               " cip=" + std::to_string(c.count_include_pad));
  Tensor x = RandomTensor(c.x, 1234);
  AttrMap a;
  a.set("kernel_shape", Attribute::Ints(c.kernel));
  a.set("strides", Attribute::Ints(c.strides));
  a.set("dilations", Attribute::Ints(c.dilations));
  a.set("pads", Attribute::Ints(c.pads));
  a.set("ceil_mode", Attribute::Int(c.ceil_mode));
  if (c.op == "AveragePool") a.set("count_include_pad", Attribute::Int(c.count_include_pad));
  if (c.op == "LpPool") a.set("p", Attribute::Int(c.p));
  std::vector<Tensor> outs = RunNode(c.op, 22, {x}, a, with_indices ? 2 : 1);
  Shape shape;
  std::vector<int64_t> argmax;
  std::vector<double> ref = NaivePool(c, x, &shape, with_indices ? &argmax : nullptr);
  ASSERT_EQ(outs[0].shape(), shape);
  const float* py = outs[0].data<float>();
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(py[i], ref[i], 1e-4 * (1 + std::fabs(ref[i]))) << "at " << i;
  if (with_indices) {
    const int64_t* pi = outs[1].data<int64_t>();
    for (size_t i = 0; i < argmax.size(); ++i) ASSERT_EQ(pi[i], argmax[i]) << "at " << i;
  }
}

TEST(SpatialPool, ResNetMaxPoolMatchesNaive) {
  CheckPool({"MaxPool", {1, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}});
}

TEST(SpatialPool, MaxPoolVariants) {
  CheckPool({"MaxPool", {2, 5, 37, 29}, {3, 2}, {1, 1}, {1, 1}, {1, 0, 1, 1}});
  CheckPool({"MaxPool", {2, 5, 37, 29}, {3, 3}, {3, 2}, {2, 1}, {0, 2, 1, 2}, 1});
  CheckPool({"MaxPool", {1, 3, 50}, {4}, {3}, {1}, {2, 1}, 1});
  CheckPool({"MaxPool", {1, 2, 9, 10, 11}, {2, 3, 2}, {2, 1, 2}, {1, 2, 1}, {1, 0, 1, 0, 1, 1}});
  CheckPool({"MaxPool", {2, 3, 20, 21}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}}, /*with_indices=*/true);
  CheckPool({"MaxPool", {1, 4, 17, 18, 19}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, 1});
  CheckPool({"MaxPool", {1, 2, 4, 5, 6, 7}, {2, 2, 3, 2}, {1, 2, 1, 2}, {1, 1, 1, 2}, {0, 1, 0, 1, 1, 0, 1, 0}});
}

TEST(SpatialPool, AveragePoolVariants) {
  for (int64_t cip : {0, 1}) {
    for (int64_t ceil : {0, 1}) {
      CheckPool({"AveragePool", {1, 64, 112, 112}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, ceil, cip});
      CheckPool({"AveragePool", {2, 5, 31, 26}, {5, 3}, {3, 1}, {1, 2}, {2, 0, 1, 2}, ceil, cip});
      CheckPool({"AveragePool", {1, 4, 40}, {3}, {2}, {1}, {1, 1}, ceil, cip});
      CheckPool({"AveragePool", {1, 2, 8, 9, 10}, {3, 2, 3}, {2, 2, 1}, {1, 1, 2}, {1, 0, 1, 1, 1, 0}, ceil, cip});
    }
  }
}

TEST(SpatialPool, LpPoolVariants) {
  CheckPool({"LpPool", {1, 6, 30, 31}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 0, 0, 2});
  CheckPool({"LpPool", {1, 6, 30, 31}, {2, 3}, {1, 2}, {2, 1}, {0, 1, 1, 0}, 1, 0, 3});
}

TEST(SpatialPool, GlobalPoolsMatchNaive) {
  for (const Shape& s : {Shape{1, 512, 7, 7}, Shape{2, 64, 56, 56}, Shape{3, 5, 17}}) {
    Tensor x = RandomTensor(s, 7);
    Tensor avg = RunNode("GlobalAveragePool", 22, {x}, {})[0];
    Tensor mx = RunNode("GlobalMaxPool", 22, {x}, {})[0];
    const int64_t planes = s[0] * s[1], n = x.numel() / planes;
    for (int64_t p = 0; p < planes; ++p) {
      double sum = 0, m = -1e30;
      for (int64_t i = 0; i < n; ++i) {
        double v = x.data<float>()[p * n + i];
        sum += v;
        m = std::max(m, v);
      }
      ASSERT_NEAR(avg.data<float>()[p], sum / n, 1e-4);
      ASSERT_EQ(mx.data<float>()[p], static_cast<float>(m));
    }
  }
}

TEST(SpatialPool, MaxPoolIntegerTypes) {
  PoolCase c{"MaxPool", {1, 3, 15, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}};
  Tensor xf = RandomTensor(c.x, 99);
  Tensor xi(DType::kInt8, c.x);
  for (int64_t i = 0; i < xf.numel(); ++i) xi.data<int8_t>()[i] = static_cast<int8_t>(xf.data<float>()[i] * 40);
  for (int64_t i = 0; i < xf.numel(); ++i) xf.data<float>()[i] = xi.data<int8_t>()[i];
  AttrMap a;
  a.set("kernel_shape", Attribute::Ints(c.kernel));
  a.set("strides", Attribute::Ints(c.strides));
  a.set("pads", Attribute::Ints(c.pads));
  Tensor yi = RunNode("MaxPool", 22, {xi}, a)[0];
  Shape shape;
  std::vector<double> ref = NaivePool(c, xf, &shape, nullptr);
  ASSERT_EQ(yi.shape(), shape);
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(yi.data<int8_t>()[i], static_cast<int8_t>(ref[i]));
}

TEST(SpatialPool, HalfPrecisionMatchesFloat) {
  Tensor xf = RandomTensor({1, 4, 19, 18}, 5);
  Tensor xh(DType::kFloat16, xf.shape());
  for (int64_t i = 0; i < xf.numel(); ++i) {
    xh.data<Float16>()[i] = Float16(xf.data<float>()[i]);
    xf.data<float>()[i] = static_cast<float>(xh.data<Float16>()[i]);  // same values in both
  }
  AttrMap a;
  a.set("kernel_shape", Attribute::Ints({3, 3}));
  a.set("strides", Attribute::Ints({2, 2}));
  a.set("pads", Attribute::Ints({1, 1, 1, 1}));
  for (const char* op : {"MaxPool", "AveragePool"}) {
    Tensor yf = RunNode(op, 22, {xf}, a)[0];
    Tensor yh = RunNode(op, 22, {xh}, a)[0];
    ASSERT_EQ(yh.dtype(), DType::kFloat16);
    ASSERT_EQ(yh.shape(), yf.shape());
    for (int64_t i = 0; i < yf.numel(); ++i)
      ASSERT_NEAR(static_cast<float>(yh.data<Float16>()[i]), yf.data<float>()[i], 2e-3 * (1 + std::fabs(yf.data<float>()[i])));
  }
}

// Not a pass/fail benchmark: prints the ResNet-18 stem pooling time so regressions are visible.
TEST(SpatialPool, ResNetShapesTiming) {
  ThreadPool pool(getenv("OF_BENCH_THREADS") ? atoi(getenv("OF_BENCH_THREADS")) : 2);
  Tensor x = RandomTensor({1, 64, 112, 112}, 3);
  AttrMap a;
  a.set("kernel_shape", Attribute::Ints({3, 3}));
  a.set("strides", Attribute::Ints({2, 2}));
  a.set("pads", Attribute::Ints({1, 1, 1, 1}));
  PreparedNode maxpool({"MaxPool", "", 22, a, {x}, 1});
  a.set("count_include_pad", Attribute::Int(0));
  PreparedNode avgpool({"AveragePool", "", 22, a, {x}, 1});
  Tensor g = RandomTensor({1, 512, 7, 7}, 4);
  PreparedNode gap({"GlobalAveragePool", "", 22, {}, {g}, 1});
  auto time = [&](const PreparedNode& h, const Tensor& in) {
    h.Run({in}, pool);
    double best = 1e30;  // the minimum is the least noisy statistic on a shared machine
    for (int i = 0; i < 50; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      h.Run({in}, pool);
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  std::printf("best of 50: MaxPool 64x112x112 k3s2p1: %.1f us; AveragePool same: %.1f us; GlobalAveragePool 512x7x7: %.1f us\n",
              time(maxpool, x), time(avgpool, x), time(gap, g));
}

// ---- Einsum ----

// Naive einsum for two operands given explicit index lists over a shared label-size map.
TEST(SpatialEinsum, CommonFormsMatchNaive) {
  Tensor a = RandomTensor({4, 5, 6}, 11, DType::kFloat32);
  Tensor b = RandomTensor({4, 6, 3}, 12, DType::kFloat32);
  AttrMap attrs;
  attrs.set("equation", Attribute::String("bij,bjk->bik"));
  Tensor y = RunNode("Einsum", 13, {a, b}, attrs)[0];
  ASSERT_EQ(y.shape(), (Shape{4, 5, 3}));
  for (int bb = 0; bb < 4; ++bb)
    for (int i = 0; i < 5; ++i)
      for (int k = 0; k < 3; ++k) {
        double s = 0;
        for (int j = 0; j < 6; ++j) s += double(a.data<float>()[(bb * 5 + i) * 6 + j]) * b.data<float>()[(bb * 6 + j) * 3 + k];
        ASSERT_NEAR(y.data<float>()[(bb * 5 + i) * 3 + k], s, 1e-4);
      }

  // Ellipsis with broadcasting: "...ij,...jk->...ik" where the batch dims broadcast.
  Tensor c = RandomTensor({2, 1, 3, 4}, 13);
  Tensor d = RandomTensor({5, 4, 2}, 14);
  attrs.set("equation", Attribute::String("...ij,...jk->...ik"));
  Tensor e = RunNode("Einsum", 13, {c, d}, attrs)[0];
  ASSERT_EQ(e.shape(), (Shape{2, 5, 3, 2}));
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 5; ++q)
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 2; ++k) {
          double s = 0;
          for (int j = 0; j < 4; ++j) s += double(c.data<float>()[(p * 3 + i) * 4 + j]) * d.data<float>()[(q * 4 + j) * 2 + k];
          ASSERT_NEAR(e.data<float>()[((p * 5 + q) * 3 + i) * 2 + k], s, 1e-4);
        }

  // Trace, diagonal, outer product, implicit output.
  Tensor m = RandomTensor({6, 6}, 15);
  attrs.set("equation", Attribute::String("ii"));
  Tensor tr = RunNode("Einsum", 13, {m}, attrs)[0];
  double t = 0;
  for (int i = 0; i < 6; ++i) t += m.data<float>()[i * 7];
  ASSERT_EQ(tr.rank(), 0);
  ASSERT_NEAR(tr.data<float>()[0], t, 1e-4);
  attrs.set("equation", Attribute::String("ii->i"));
  Tensor dg = RunNode("Einsum", 13, {m}, attrs)[0];
  for (int i = 0; i < 6; ++i) ASSERT_EQ(dg.data<float>()[i], m.data<float>()[i * 7]);
  Tensor u = RandomTensor({3}, 16), v = RandomTensor({4}, 17);
  attrs.set("equation", Attribute::String("i,j"));
  Tensor outer = RunNode("Einsum", 13, {u, v}, attrs)[0];
  ASSERT_EQ(outer.shape(), (Shape{3, 4}));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) ASSERT_NEAR(outer.data<float>()[i * 4 + j], u.data<float>()[i] * v.data<float>()[j], 1e-5);
  attrs.set("equation", Attribute::String("ba"));  // implicit output sorts labels: a transpose
  Tensor tp = RunNode("Einsum", 13, {RandomTensor({2, 3}, 18)}, attrs)[0];
  ASSERT_EQ(tp.shape(), (Shape{3, 2}));
}

TEST(SpatialEinsum, BadEquationsFailCleanly) {
  AttrMap attrs;
  attrs.set("equation", Attribute::String("ij,jk->ik"));
  EXPECT_THROW(RunNode("Einsum", 13, {RandomTensor({2, 3}, 1), RandomTensor({4, 5}, 2)}, attrs), Error);
  attrs.set("equation", Attribute::String("ij->k"));
  EXPECT_THROW(RunNode("Einsum", 13, {RandomTensor({2, 3}, 1)}, attrs), Error);
  attrs.set("equation", Attribute::String("i$->i"));
  EXPECT_THROW(RunNode("Einsum", 13, {RandomTensor({2, 3}, 1)}, attrs), Error);
}

// ---- Resize ----

TEST(SpatialResize, NearestAndLinearUpsampleMatchNaive) {
  Tensor x = RandomTensor({1, 3, 17, 23}, 21);
  Tensor scales(DType::kFloat32, {4});
  float sc[4] = {1, 1, 2, 2};
  for (int i = 0; i < 4; ++i) scales.data<float>()[i] = sc[i];
  Tensor roi(DType::kFloat32, {0});
  AttrMap a;
  a.set("mode", Attribute::String("nearest"));
  a.set("coordinate_transformation_mode", Attribute::String("asymmetric"));
  a.set("nearest_mode", Attribute::String("floor"));
  Tensor y = RunNode("Resize", 13, {x, roi, scales}, a)[0];
  ASSERT_EQ(y.shape(), (Shape{1, 3, 34, 46}));
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 34; ++h)
      for (int w = 0; w < 46; ++w)
        ASSERT_EQ(y.data<float>()[(c * 34 + h) * 46 + w], x.data<float>()[(c * 17 + h / 2) * 23 + w / 2]);

  // Bilinear, half_pixel: interior pixels are the average of a 2x2 neighbourhood with fixed weights.
  a.set("mode", Attribute::String("linear"));
  a.set("coordinate_transformation_mode", Attribute::String("half_pixel"));
  Tensor z = RunNode("Resize", 13, {x, roi, scales}, a)[0];
  auto at = [&](int c, int h, int w) {
    h = std::min(std::max(h, 0), 16);
    w = std::min(std::max(w, 0), 22);
    return double(x.data<float>()[(c * 17 + h) * 23 + w]);
  };
  for (int c = 0; c < 3; ++c)
    for (int h = 0; h < 34; ++h)
      for (int w = 0; w < 46; ++w) {
        double sh = (h + 0.5) / 2 - 0.5, sw = (w + 0.5) / 2 - 0.5;
        int h0 = static_cast<int>(std::floor(sh)), w0 = static_cast<int>(std::floor(sw));
        double fh = sh - h0, fw = sw - w0;
        double ref = (1 - fh) * ((1 - fw) * at(c, h0, w0) + fw * at(c, h0, w0 + 1)) +
                     fh * ((1 - fw) * at(c, h0 + 1, w0) + fw * at(c, h0 + 1, w0 + 1));
        ASSERT_NEAR(z.data<float>()[(c * 34 + h) * 46 + w], ref, 1e-4);
      }
}

TEST(SpatialErrors, BadInputsFailCleanly) {
  AttrMap a;
  a.set("kernel_shape", Attribute::Ints({5, 5}));
  EXPECT_THROW(RunNode("MaxPool", 22, {RandomTensor({1, 1, 3, 3}, 1)}, a), Error);  // window > input
  EXPECT_THROW(RunNode("MaxPool", 22, {RandomTensor({3, 3}, 1)}, a), Error);        // no spatial dims
  a.set("kernel_shape", Attribute::Ints({2}));
  EXPECT_THROW(RunNode("AveragePool", 22, {RandomTensor({1, 1, 3, 3}, 1)}, a), Error);  // rank mismatch
  a.set("kernel_shape", Attribute::Ints({2, 2}));
  EXPECT_THROW(RunNode("AveragePool", 22, {RandomTensor({1, 1, 3, 3}, 1, DType::kInt32)}, a), Error);  // dtype

  Tensor scales(DType::kFloat32, {3});
  for (int i = 0; i < 3; ++i) scales.data<float>()[i] = 2;
  AttrMap r;
  EXPECT_THROW(RunNode("Resize", 13, {RandomTensor({1, 1, 3, 3}, 1), Tensor(DType::kFloat32, {0}), scales}, r), Error);

  Tensor ind(DType::kInt64, {1, 1, 2, 2});
  ind.data<int64_t>()[0] = 100;  // out of range for a 4x4 output
  AttrMap u;
  u.set("kernel_shape", Attribute::Ints({2, 2}));
  u.set("strides", Attribute::Ints({2, 2}));
  try {
    RunNode("MaxUnpool", 22, {RandomTensor({1, 1, 2, 2}, 1), ind}, u);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
  }
  EXPECT_THROW(RunNode("GridSample", 22, {RandomTensor({1, 1, 3, 3}, 1), RandomTensor({1, 2, 2, 3}, 2)}, {}), Error);
}

// Static inference keeps a symbolic batch dim through Resize with constant scales, and pooling
// computes spatial dims statically.
TEST(SpatialInfer, StaticShapesWithSymbolicBatch) {
  test_util::GraphBuilder b(13);
  std::vector<Dim> dims = {Dim::Symbol("N"), Dim::Known(3), Dim::Known(10), Dim::Unknown()};
  int x = b.Input("x", TensorType::Of(DType::kFloat32, dims));
  Tensor scales(DType::kFloat32, {4});
  float sc[4] = {1, 1, 2, 1};
  for (int i = 0; i < 4; ++i) scales.data<float>()[i] = sc[i];
  int roi = b.Const("roi", Tensor(DType::kFloat32, {0}));
  int s = b.Const("scales", scales);
  int y = b.Op("Resize", {x, roi, s}, "y");
  AttrMap pool;
  pool.set("kernel_shape", Attribute::Ints({3, 3}));
  pool.set("strides", Attribute::Ints({2, 2}));
  Graph& g = b.Done(b.Op("MaxPool", {y}, "z", pool));
  const TensorType& ty = g.values[g.FindValue("y")].type;
  ASSERT_TRUE(ty.has_rank);
  EXPECT_EQ(ty.dims[0].symbol, "N");
  EXPECT_EQ(ty.dims[1].value, 3);
  EXPECT_EQ(ty.dims[2].value, 20);
  EXPECT_FALSE(ty.dims[3].known());
  const TensorType& tz = g.values[g.FindValue("z")].type;
  EXPECT_EQ(tz.dims[0].symbol, "N");
  EXPECT_EQ(tz.dims[2].value, 9);
  EXPECT_FALSE(tz.dims[3].known());
}

}  // namespace
}  // namespace oneflow
