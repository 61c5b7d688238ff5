// The CNN kernels on CUDA against the CPU kernels on the same random cases: Conv / FusedConv (NCHW
// and NHWC, groups, dilations, strides, pads, bias, residual, activations) on cuDNN, ConvTranspose,
// the Conv gradient ops, the pools (NCHW, NHWC, Indices) and their gradients, and BatchNormalization. The GPU tests skip
// with "no CUDA device" where there is none; the registry test runs everywhere.
#include <gtest/gtest.h>

#include "cuda_compare.h"
#include "graph/op_schema.h"

namespace oneflow {
namespace {

using cuda_test::DefaultTol;
using cuda_test::ExactTol;
using cuda_test::ExpectGpuMatchesCpu;
using cuda_test::ExpectGpuMatchesCpuEach;
using cuda_test::Int64s;
using cuda_test::OpCall;
using cuda_test::RandomTensor;
using cuda_test::Tol;

TEST(CudaRegistry, CnnKernels) {
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "BatchNormalization"})
    EXPECT_NE(KernelRegistry::Global().Find("", op, DeviceType::kCuda), nullptr) << op;
  for (const char* op : {"NhwcMaxPool", "NhwcAveragePool", "NhwcGlobalAveragePool", "ConvGradBias", "MaxPoolGrad",
                         "AveragePoolGrad", "GlobalAveragePoolGrad", "GlobalMaxPoolGrad"})
    EXPECT_NE(KernelRegistry::Global().Find(kOneflowDomain, op, DeviceType::kCuda), nullptr) << op;
#ifdef ONEFLOW_HAVE_CUDNN
  for (const char* op : {"Conv", "ConvTranspose"})
    EXPECT_NE(KernelRegistry::Global().Find("", op, DeviceType::kCuda), nullptr) << op;
  for (const char* op : {"FusedConv", "ConvGradData", "ConvGradFilter", "ConvTransposeGradData", "ConvTransposeGradFilter"})
    EXPECT_NE(KernelRegistry::Global().Find(kOneflowDomain, op, DeviceType::kCuda), nullptr) << op;
#endif
}

// Per-element tolerances of the convolutions (cuda_test_util.h's Tol): f32 convolutions may run FFT /
// Winograd algorithms, whose error is relative to the magnitude of the whole output rather than of
// each element (hence atol_rms); f16 / bf16 outputs are also rounded once more where a separate
// epilogue pass (bias, residual, activation) reads the rounded convolution result. The relative-L2
// bounds are the ones these tests always had.
Tol ConvTol(DType dt) {
  if (dt == DType::kFloat32) return Tol{1e-4, 1e-6, 2e-4, 1e-4};
  if (dt == DType::kFloat16) return Tol{4e-3, 1e-4, 4e-3, 2e-3};
  return Tol{1.6e-2, 1e-3, 2e-2, 1e-2};
}

// BatchNormalization in training mode: batch statistics are sums over N x spatial in f32 in another
// order than the CPU's, and Y depends on them.
Tol BnTrainTol(DType dt) { return dt == DType::kFloat32 ? Tol{2e-5, 1e-6, 2e-5, 1e-5} : DefaultTol(dt); }

struct ConvCase {
  Shape x, w;  // NCHW x, [M, C/group, k...] w
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

Shape ConvOut(const ConvCase& k) {
  Shape y = {k.x[0], k.w[0]};
  const size_t sp = k.x.size() - 2;
  for (size_t i = 0; i < sp; ++i) {
    const int64_t eff = (k.w[2 + i] - 1) * k.dilations[i] + 1;
    y.push_back((k.x[2 + i] + k.pads[i] + k.pads[i + sp] - eff) / k.strides[i] + 1);
  }
  return y;
}

void SetConvAttrs(OpCall& c, const ConvCase& k) {
  c.attrs.set("strides", Attribute::Ints(k.strides));
  c.attrs.set("pads", Attribute::Ints(k.pads));
  c.attrs.set("dilations", Attribute::Ints(k.dilations));
  c.attrs.set("group", Attribute::Int(k.group));
  c.attrs.set("auto_pad", Attribute::String("NOTSET"));
}

const ConvCase kConvCases[] = {
    {{2, 8, 17, 15}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},     // ResNet-style 3x3
    {{1, 6, 20, 21}, {12, 3, 3, 5}, {2, 1}, {1, 2, 1, 2}, {1, 2}, 2},     // groups, stride, dilation
    {{2, 8, 9, 9}, {8, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 8},        // depthwise
    {{3, 16, 7, 7}, {24, 16, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},     // pointwise
    {{2, 5, 31}, {7, 5, 4}, {2}, {1, 1}, {1}, 1},                         // 1-D
    {{1, 4, 6, 7, 5}, {6, 4, 3, 3, 3}, {1, 2, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, 1},  // 3-D
};

TEST(CudaNnKernels, ConvMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(31);
  for (const ConvCase& k : kConvCases) {
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (bool bias : {false, true}) {
        OpCall c;
        c.op = "Conv";
        c.opset = 11;
        SetConvAttrs(c, k);
        c.inputs = {RandomTensor(dt, k.x, rng, -1.0f, 1.0f), RandomTensor(dt, k.w, rng, -1.0f, 1.0f)};
        if (bias) c.inputs.push_back(RandomTensor(dt, {k.w[0]}, rng));
        c.outputs = {{dt, ConvOut(k)}};
        ExpectGpuMatchesCpu(c, ConvTol(dt), "Conv " + ShapeToString(k.x) + " * " + ShapeToString(k.w) + " " + DTypeName(dt) +
                                            (bias ? " +bias" : ""));
      }
    }
  }
}

TEST(CudaNnKernels, FusedConvEpiloguesMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(32);
  const ConvCase k = kConvCases[0];
  const Shape y = ConvOut(k);
  for (const char* act : {"None", "Relu", "LeakyRelu", "Sigmoid", "Clip"}) {
    for (bool residual : {false, true}) {
      for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
        OpCall c;
        c.op = "FusedConv";
        c.domain = kOneflowDomain;
        c.opset = 1;
        SetConvAttrs(c, k);
        c.attrs.set("layout", Attribute::String("NCHW"));
        c.attrs.set("activation", Attribute::String(act));
        c.attrs.set("activation_params", Attribute::Floats(std::string(act) == "Clip" ? std::vector<float>{-0.5f, 0.5f}
                                                           : std::string(act) == "LeakyRelu" ? std::vector<float>{0.1f}
                                                                                             : std::vector<float>{}));
        c.inputs = {RandomTensor(dt, k.x, rng, -1.0f, 1.0f), RandomTensor(dt, k.w, rng, -1.0f, 1.0f),
                    RandomTensor(dt, {k.w[0]}, rng)};
        if (residual) c.inputs.push_back(RandomTensor(dt, y, rng));
        c.outputs = {{dt, y}};
        ExpectGpuMatchesCpu(c, ConvTol(dt), std::string("FusedConv ") + act + (residual ? " +Z " : " ") + DTypeName(dt));
      }
    }
  }
}

TEST(CudaNnKernels, FusedConvNhwcMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(33);
  for (size_t i : {0, 1, 2}) {  // dense, grouped, depthwise
    const ConvCase k = kConvCases[i];
    const Shape yn = ConvOut(k);
    for (DType dt : {DType::kFloat32, DType::kFloat16}) {
      OpCall c;
      c.op = "FusedConv";
      c.domain = kOneflowDomain;
      c.opset = 1;
      SetConvAttrs(c, k);
      c.attrs.set("layout", Attribute::String("NHWC"));
      c.attrs.set("activation", Attribute::String("Relu"));
      c.attrs.set("activation_params", Attribute::Floats({}));
      const Shape xh = {k.x[0], k.x[2], k.x[3], k.x[1]}, yh = {yn[0], yn[2], yn[3], yn[1]};
      c.inputs = {RandomTensor(dt, xh, rng, -1.0f, 1.0f), RandomTensor(dt, k.w, rng, -1.0f, 1.0f),
                  RandomTensor(dt, {k.w[0]}, rng), RandomTensor(dt, yh, rng)};
      c.outputs = {{dt, yh}};
      ExpectGpuMatchesCpu(c, ConvTol(dt), "FusedConv NHWC case " + std::to_string(i) + " " + DTypeName(dt));
    }
  }
}

TEST(CudaNnKernels, ConvTransposeMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(34);
  struct Case { Shape x, w; std::vector<int64_t> strides, pads, out_pad; int64_t group; Shape y; };
  const Case cases[] = {
      {{2, 8, 7, 6}, {8, 4, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, {2, 4, 14, 12}},
      {{1, 6, 5, 5}, {6, 2, 4, 4}, {1, 1}, {0, 0, 0, 0}, {0, 0}, 3, {1, 6, 8, 8}},
      {{2, 3, 9}, {3, 5, 3}, {3}, {1, 1}, {2}, 1, {2, 5, 27}},
  };
  for (const Case& k : cases) {
    for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
      OpCall c;
      c.op = "ConvTranspose";
      c.opset = 11;
      c.attrs.set("strides", Attribute::Ints(k.strides));
      c.attrs.set("pads", Attribute::Ints(k.pads));
      c.attrs.set("output_padding", Attribute::Ints(k.out_pad));
      c.attrs.set("group", Attribute::Int(k.group));
      c.inputs = {RandomTensor(dt, k.x, rng, -1.0f, 1.0f), RandomTensor(dt, k.w, rng, -1.0f, 1.0f),
                  RandomTensor(dt, {k.y[1]}, rng)};
      c.outputs = {{dt, k.y}};
      ExpectGpuMatchesCpu(c, ConvTol(dt), "ConvTranspose " + ShapeToString(k.x) + " -> " + ShapeToString(k.y));
    }
  }
}

TEST(CudaNnKernels, ConvGradientsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(35);
  for (const ConvCase& k : kConvCases) {
    const Shape y = ConvOut(k);
    for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
      OpCall data;
      data.op = "ConvGradData";
      data.domain = kOneflowDomain;
      data.opset = 1;
      SetConvAttrs(data, k);
      data.inputs = {RandomTensor(dt, y, rng, -1.0f, 1.0f), RandomTensor(dt, k.w, rng, -1.0f, 1.0f),
                     Int64s(std::vector<int64_t>(k.x.begin(), k.x.end()))};
      data.outputs = {{dt, k.x}};
      ExpectGpuMatchesCpu(data, ConvTol(dt), "ConvGradData " + ShapeToString(k.x) + " " + DTypeName(dt));

      OpCall filt;
      filt.op = "ConvGradFilter";
      filt.domain = kOneflowDomain;
      filt.opset = 1;
      SetConvAttrs(filt, k);
      filt.inputs = {RandomTensor(dt, k.x, rng, -1.0f, 1.0f), RandomTensor(dt, y, rng, -1.0f, 1.0f),
                     Int64s(std::vector<int64_t>(k.w.begin(), k.w.end()))};
      filt.outputs = {{dt, k.w}};
      ExpectGpuMatchesCpu(filt, ConvTol(dt), "ConvGradFilter " + ShapeToString(k.w) + " " + DTypeName(dt));
    }
    OpCall bias;
    bias.op = "ConvGradBias";
    bias.domain = kOneflowDomain;
    bias.opset = 1;
    bias.inputs = {RandomTensor(DType::kFloat32, y, rng)};
    bias.outputs = {{DType::kFloat32, {y[1]}}};
    ExpectGpuMatchesCpu(bias, DefaultTol(DType::kFloat32), "ConvGradBias " + ShapeToString(y));
  }
  // ConvTranspose's gradients: dX is the Conv of dY by W, dW the filter gradient from dY to X.
  const Shape x{2, 8, 7, 6}, w{8, 4, 3, 3}, y{2, 4, 14, 12};
  for (const char* op : {"ConvTransposeGradData", "ConvTransposeGradFilter"}) {
    const bool is_data = std::string(op) == "ConvTransposeGradData";
    OpCall c;
    c.op = op;
    c.domain = kOneflowDomain;
    c.opset = 1;
    c.attrs.set("strides", Attribute::Ints({2, 2}));
    c.attrs.set("pads", Attribute::Ints({1, 1, 1, 1}));
    c.attrs.set("output_padding", Attribute::Ints({1, 1}));
    if (is_data) c.inputs = {RandomTensor(DType::kFloat32, y, rng), RandomTensor(DType::kFloat32, w, rng), Int64s({2, 8, 7, 6})};
    else c.inputs = {RandomTensor(DType::kFloat32, x, rng), RandomTensor(DType::kFloat32, y, rng), Int64s({8, 4, 3, 3})};
    c.outputs = {{DType::kFloat32, is_data ? x : w}};
    ExpectGpuMatchesCpu(c, ConvTol(DType::kFloat32), op);
  }
}

TEST(CudaNnKernels, PoolsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(36);
  struct Case { Shape x; std::vector<int64_t> kernel, strides, pads; int ceil; Shape y; };
  const Case cases[] = {
      {{2, 3, 16, 16}, {2, 2}, {2, 2}, {0, 0, 0, 0}, 0, {2, 3, 8, 8}},
      {{2, 4, 15, 13}, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, {2, 4, 8, 7}},      // ResNet stem pool
      {{1, 2, 10, 11}, {3, 2}, {2, 3}, {1, 0, 0, 1}, 1, {1, 2, 5, 4}},      // asymmetric pads, ceil_mode
      {{3, 5, 20}, {4}, {3}, {2, 1}, 0, {3, 5, 7}},                        // 1-D
      {{1, 2, 6, 7, 8}, {2, 3, 2}, {2, 2, 2}, {0, 1, 0, 0, 1, 0}, 0, {1, 2, 3, 4, 4}},  // 3-D
  };
  for (const Case& k : cases) {
    for (const char* op : {"MaxPool", "AveragePool"}) {
      for (int include_pad : {0, 1}) {
        if (std::string(op) == "MaxPool" && include_pad) continue;
        for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
          OpCall c;
          c.op = op;
          c.opset = 12;
          c.attrs.set("kernel_shape", Attribute::Ints(k.kernel));
          c.attrs.set("strides", Attribute::Ints(k.strides));
          c.attrs.set("pads", Attribute::Ints(k.pads));
          c.attrs.set("ceil_mode", Attribute::Int(k.ceil));
          c.attrs.set("auto_pad", Attribute::String("NOTSET"));
          if (std::string(op) == "AveragePool") c.attrs.set("count_include_pad", Attribute::Int(include_pad));
          else c.attrs.set("storage_order", Attribute::Int(0));
          c.inputs = {RandomTensor(dt, k.x, rng)};
          c.outputs = {{dt, k.y}};
          const std::string label = std::string(op) + " " + ShapeToString(k.x) + " pad=" + std::to_string(include_pad);
          ExpectGpuMatchesCpu(c, DefaultTol(dt), label);
          if (std::string(op) == "MaxPool" && dt == DType::kFloat32) {  // the Indices output is exact
            c.outputs.push_back({DType::kInt64, k.y});
            ExpectGpuMatchesCpu(c, ExactTol(), label + " with Indices");
          }
        }
      }
    }
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    for (Shape x : {Shape{2, 64, 7, 7}, Shape{3, 5, 1000}, Shape{1, 3, 2, 3, 4}}) {
      Shape y = x;
      for (size_t d = 2; d < y.size(); ++d) y[d] = 1;
      OpCall c;
      c.op = op;
      c.inputs = {RandomTensor(DType::kFloat32, x, rng)};
      c.outputs = {{DType::kFloat32, y}};
      ExpectGpuMatchesCpu(c, DefaultTol(DType::kFloat32), std::string(op) + " " + ShapeToString(x));
    }
  }
}

TEST(CudaNnKernels, PoolGradientsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(39);
  struct Case { Shape x; std::vector<int64_t> kernel, strides, pads, dilations; int ceil; Shape y; };
  const Case cases[] = {
      {{2, 4, 15, 13}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, {2, 4, 8, 7}},   // overlapping windows
      {{1, 2, 10, 11}, {3, 2}, {2, 3}, {1, 0, 0, 1}, {1, 1}, 1, {1, 2, 5, 4}},   // asymmetric pads, ceil_mode
      {{2, 3, 12, 12}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {2, 2}, 0, {2, 3, 10, 10}},  // dilations
      {{3, 5, 20}, {4}, {3}, {2, 1}, {1}, 0, {3, 5, 7}},                         // 1-D
  };
  for (const Case& k : cases) {
    for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
      for (int variant = 0; variant < 3; ++variant) {  // MaxPoolGrad, AveragePoolGrad without / with pads counted
        OpCall c;
        c.op = variant == 0 ? "MaxPoolGrad" : "AveragePoolGrad";
        c.domain = kOneflowDomain;
        c.opset = 1;
        c.attrs.set("kernel_shape", Attribute::Ints(k.kernel));
        c.attrs.set("strides", Attribute::Ints(k.strides));
        c.attrs.set("pads", Attribute::Ints(k.pads));
        c.attrs.set("dilations", Attribute::Ints(k.dilations));
        c.attrs.set("ceil_mode", Attribute::Int(k.ceil));
        c.attrs.set("auto_pad", Attribute::String("NOTSET"));
        if (variant == 0) c.attrs.set("storage_order", Attribute::Int(0));
        else c.attrs.set("count_include_pad", Attribute::Int(variant == 2 ? 1 : 0));
        c.inputs = {RandomTensor(dt, k.y, rng), variant == 0 ? RandomTensor(dt, k.x, rng)
                                                             : Int64s(std::vector<int64_t>(k.x.begin(), k.x.end()))};
        c.outputs = {{dt, k.x}};
        ExpectGpuMatchesCpu(c, DefaultTol(dt),
                            c.op + " " + ShapeToString(k.x) + " variant " + std::to_string(variant) + " " + DTypeName(dt));
      }
    }
  }
  for (Shape x : {Shape{2, 64, 7, 7}, Shape{3, 5, 1000}}) {
    const Shape y = x.size() == 4 ? Shape{x[0], x[1], 1, 1} : Shape{x[0], x[1], 1};
    OpCall avg;
    avg.op = "GlobalAveragePoolGrad";
    avg.domain = kOneflowDomain;
    avg.opset = 1;
    avg.inputs = {RandomTensor(DType::kFloat32, y, rng), Int64s(std::vector<int64_t>(x.begin(), x.end()))};
    avg.outputs = {{DType::kFloat32, x}};
    ExpectGpuMatchesCpu(avg, DefaultTol(DType::kFloat32), "GlobalAveragePoolGrad " + ShapeToString(x));
    OpCall mx = avg;
    mx.op = "GlobalMaxPoolGrad";
    mx.inputs = {RandomTensor(DType::kFloat32, y, rng), RandomTensor(DType::kFloat32, x, rng)};
    ExpectGpuMatchesCpu(mx, ExactTol(), "GlobalMaxPoolGrad " + ShapeToString(x));
  }
}

TEST(CudaNnKernels, NhwcPoolsMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(37);
  for (const char* op : {"NhwcMaxPool", "NhwcAveragePool"}) {
    OpCall c;
    c.op = op;
    c.domain = kOneflowDomain;
    c.opset = 1;
    c.attrs.set("kernel_shape", Attribute::Ints({3, 3}));
    c.attrs.set("strides", Attribute::Ints({2, 2}));
    c.attrs.set("pads", Attribute::Ints({1, 1, 1, 1}));
    c.attrs.set("auto_pad", Attribute::String("NOTSET"));
    c.attrs.set("ceil_mode", Attribute::Int(0));
    if (std::string(op) == "NhwcAveragePool") c.attrs.set("count_include_pad", Attribute::Int(0));
    else c.attrs.set("storage_order", Attribute::Int(0));
    c.inputs = {RandomTensor(DType::kFloat32, {2, 15, 13, 24}, rng)};
    c.outputs = {{DType::kFloat32, {2, 8, 7, 24}}};
    ExpectGpuMatchesCpu(c, DefaultTol(DType::kFloat32), op);
  }
  OpCall g;
  g.op = "NhwcGlobalAveragePool";
  g.domain = kOneflowDomain;
  g.opset = 1;
  g.inputs = {RandomTensor(DType::kFloat32, {3, 7, 7, 40}, rng)};
  g.outputs = {{DType::kFloat32, {3, 1, 1, 40}}};
  ExpectGpuMatchesCpu(g, DefaultTol(DType::kFloat32), "NhwcGlobalAveragePool");
}

TEST(CudaNnKernels, BatchNormInferenceMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(38);
  for (Shape x : {Shape{2, 16, 9, 9}, Shape{4, 7}, Shape{2, 5, 11}}) {
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      for (bool f32_params : {false, true}) {
        if (dt == DType::kFloat32 && f32_params) continue;
        const DType pdt = f32_params ? DType::kFloat32 : dt;
        const Shape c{x[1]};
        OpCall call;
        call.op = "BatchNormalization";
        call.opset = 15;
        call.attrs.set("epsilon", Attribute::Float(1e-5f));
        call.attrs.set("momentum", Attribute::Float(0.9f));
        call.attrs.set("training_mode", Attribute::Int(0));
        call.inputs = {RandomTensor(dt, x, rng), RandomTensor(pdt, c, rng), RandomTensor(pdt, c, rng),
                       RandomTensor(pdt, c, rng), RandomTensor(pdt, c, rng, 0.1f, 2.0f)};
        call.outputs = {{dt, x}};
        ExpectGpuMatchesCpu(call, DefaultTol(dt),
                            "BatchNorm " + ShapeToString(x) + " " + DTypeName(dt) + " params " + DTypeName(pdt));
      }
    }
  }
}

TEST(CudaNnKernels, BatchNormTrainingMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(40);
  for (Shape x : {Shape{4, 16, 9, 9}, Shape{32, 7}, Shape{2, 5, 301}}) {
    for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
      const DType pdt = DType::kFloat32;
      const Shape c{x[1]};
      OpCall call;
      call.op = "BatchNormalization";
      call.opset = 15;
      call.attrs.set("epsilon", Attribute::Float(1e-5f));
      call.attrs.set("momentum", Attribute::Float(0.8f));
      call.attrs.set("training_mode", Attribute::Int(1));
      // An offset mean makes a one-pass variance formula visibly wrong; the kernels use two passes.
      call.inputs = {RandomTensor(dt, x, rng, 3.0f, 5.0f), RandomTensor(pdt, c, rng), RandomTensor(pdt, c, rng),
                     RandomTensor(pdt, c, rng), RandomTensor(pdt, c, rng, 0.1f, 2.0f)};
      call.outputs = {{dt, x}, {pdt, c}, {pdt, c}};
      ExpectGpuMatchesCpuEach(call, {BnTrainTol(dt), BnTrainTol(DType::kFloat32)},
                              "BatchNorm training " + ShapeToString(x) + " " + DTypeName(dt));
    }
  }
}

}  // namespace
}  // namespace oneflow
