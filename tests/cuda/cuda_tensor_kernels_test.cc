// The tensor kernels on CUDA against the CPU kernels on the same random cases: data movement
// (Slice, Split, Concat, Expand, Tile, Pad, Gather, GatherElements, Where, Trilu) is compared
// exactly, as are compares/logic, Range, ArgMax/ArgMin; CumSum within rounding. Shape-like inputs
// are uploaded to the device like every other input, so the kernels' device-side reads of them are
// exercised. GPU tests skip with "no CUDA device" where there is none; the registry test runs everywhere.
#include <gtest/gtest.h>

#include "cuda_compare.h"

namespace oneflow {
namespace {

using cuda_test::DefaultTol;
using cuda_test::ExactTol;
using cuda_test::ExpectGpuMatchesCpu;
using cuda_test::Int64s;
using cuda_test::Int64Scalar;
using cuda_test::OpCall;
using cuda_test::RandomTensor;

TEST(CudaRegistry, TensorKernels) {
  for (const char* op : {"Slice", "Split", "Concat", "Expand", "Tile", "Pad", "Gather", "GatherElements", "Where",
                         "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not", "Range",
                         "Trilu", "CumSum", "ArgMax", "ArgMin"}) {
    EXPECT_NE(KernelRegistry::Global().Find("", op, DeviceType::kCuda), nullptr) << op;
  }
  // Views run no kernel on any device (OpSchema::View; tests/unit/op_facts_test.cc).
}

OpCall Call(const std::string& op, std::vector<Tensor> inputs, std::vector<std::pair<DType, Shape>> outputs) {
  OpCall c;
  c.op = op;
  c.opset = 18;
  c.inputs = std::move(inputs);
  c.outputs = std::move(outputs);
  return c;
}

TEST(CudaTensorKernels, SliceSplitConcatMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(41);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64}) {
    const Tensor x = RandomTensor(dt, {4, 10, 7}, rng, -50.0f, 50.0f);
    // Starts/ends out of range are clamped; a negative step walks backwards.
    ExpectGpuMatchesCpu(Call("Slice", {x, Int64s({1, -1}), Int64s({100, 2}), Int64s({0, 1}), Int64s({2, -3})},
                             {{dt, {2, 3, 7}}}),
                        ExactTol(), "Slice");
    ExpectGpuMatchesCpu(Call("Slice", {x, Int64s({2}), Int64s({6}), Tensor(), Tensor()}, {{dt, {2, 10, 7}}}), ExactTol(),
                        "Slice default axes");
    OpCall split = Call("Split", {x, Int64s({3, 5, 2})}, {{dt, {4, 3, 7}}, {dt, {4, 5, 7}}, {dt, {4, 2, 7}}});
    split.attrs.set("axis", Attribute::Int(1));
    ExpectGpuMatchesCpu(split, ExactTol(), "Split");
    OpCall concat = Call("Concat", {x, RandomTensor(dt, {4, 10, 3}, rng, -50.0f, 50.0f), RandomTensor(dt, {4, 10, 1}, rng)},
                         {{dt, {4, 10, 11}}});
    concat.attrs.set("axis", Attribute::Int(-1));
    ExpectGpuMatchesCpu(concat, ExactTol(), "Concat last axis");
    OpCall concat0 = Call("Concat", {x, RandomTensor(dt, {2, 10, 7}, rng, -50.0f, 50.0f)}, {{dt, {6, 10, 7}}});
    concat0.attrs.set("axis", Attribute::Int(0));
    ExpectGpuMatchesCpu(concat0, ExactTol(), "Concat axis 0");
  }
}

TEST(CudaTensorKernels, ExpandTilePadMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(42);
  for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
    ExpectGpuMatchesCpu(Call("Expand", {RandomTensor(dt, {3, 1, 5}, rng), Int64s({2, 3, 4, 5})}, {{dt, {2, 3, 4, 5}}}),
                        ExactTol(), "Expand");
    ExpectGpuMatchesCpu(Call("Tile", {RandomTensor(dt, {2, 3, 4}, rng), Int64s({2, 1, 3})}, {{dt, {4, 3, 12}}}), ExactTol(),
                        "Tile");
    Tensor value = cuda_test::CastHost(RandomTensor(DType::kFloat32, {}, rng), dt);
    OpCall pad = Call("Pad", {RandomTensor(dt, {2, 3, 5, 6}, rng), Int64s({0, 1, 2, -1, 0, 2, 1, 3}), value},
                      {{dt, {2, 6, 8, 8}}});
    pad.attrs.set("mode", Attribute::String("constant"));
    ExpectGpuMatchesCpu(pad, ExactTol(), "Pad constant with a crop");
    OpCall pad_axes = Call("Pad", {RandomTensor(dt, {2, 3, 5}, rng), Int64s({1, 2}), Tensor(), Int64s({-1})},
                           {{dt, {2, 3, 8}}});
    pad_axes.attrs.set("mode", Attribute::String("constant"));
    ExpectGpuMatchesCpu(pad_axes, ExactTol(), "Pad with axes");
  }
}

TEST(CudaTensorKernels, GatherMatchesCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(43);
  for (DType idt : {DType::kInt64, DType::kInt32}) {
    Tensor idx(idt, {2, 3});
    const int64_t vals[] = {0, 4, -1, 2, -5, 3};
    for (int i = 0; i < 6; ++i) {
      if (idt == DType::kInt64) idx.data<int64_t>()[i] = vals[i];
      else idx.data<int32_t>()[i] = static_cast<int32_t>(vals[i]);
    }
    for (int64_t axis : {0, 1, -1}) {
      const Shape xs{5, 5, 6};
      Shape ys;
      const int64_t a = axis < 0 ? axis + 3 : axis;
      for (int64_t d = 0; d < 3; ++d) {
        if (d == a) ys.insert(ys.end(), {2, 3});
        else ys.push_back(xs[static_cast<size_t>(d)]);
      }
      OpCall c = Call("Gather", {RandomTensor(DType::kFloat32, xs, rng), idx}, {{DType::kFloat32, ys}});
      c.attrs.set("axis", Attribute::Int(axis));
      ExpectGpuMatchesCpu(c, ExactTol(), "Gather axis " + std::to_string(axis) + " " + DTypeName(idt));
    }
  }
  // GatherElements: indices of the output's shape, random in [-dim, dim).
  Tensor ind(DType::kInt64, {3, 4, 2});
  std::uniform_int_distribution<int64_t> pick(-5, 4);
  for (int64_t i = 0; i < ind.numel(); ++i) ind.data<int64_t>()[i] = pick(rng);
  OpCall ge = Call("GatherElements", {RandomTensor(DType::kFloat16, {3, 5, 2}, rng), ind}, {{DType::kFloat16, {3, 4, 2}}});
  ge.attrs.set("axis", Attribute::Int(1));
  ExpectGpuMatchesCpu(ge, ExactTol(), "GatherElements");
  ge.inputs[1] = cuda_test::CastHost(ind, DType::kInt32);
  ExpectGpuMatchesCpu(ge, ExactTol(), "GatherElements int32 indices");
}

TEST(CudaTensorKernels, WhereComparesLogicMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(44);
  auto bools = [&](const Shape& s) {
    Tensor t(DType::kBool, s);
    std::bernoulli_distribution b(0.5);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = b(rng);
    return t;
  };
  ExpectGpuMatchesCpu(Call("Where", {bools({3, 1, 5}), RandomTensor(DType::kFloat32, {4, 5}, rng),
                                     RandomTensor(DType::kFloat32, {3, 4, 1}, rng)},
                           {{DType::kFloat32, {3, 4, 5}}}),
                      ExactTol(), "Where f32");
  ExpectGpuMatchesCpu(Call("Where", {bools({6}), RandomTensor(DType::kInt64, {6}, rng, -9.0f, 9.0f),
                                     RandomTensor(DType::kInt64, {}, rng, -9.0f, 9.0f)},
                           {{DType::kInt64, {6}}}),
                      ExactTol(), "Where i64");
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    for (DType dt : {DType::kFloat32, DType::kBFloat16, DType::kInt64, DType::kInt32}) {
      // Small integers make ties (and so Equal / the OrEqual forms) common.
      Tensor a = cuda_test::CastHost(RandomTensor(DType::kFloat32, {4, 1, 6}, rng, -3.0f, 3.0f), DType::kInt32);
      Tensor b = cuda_test::CastHost(RandomTensor(DType::kFloat32, {5, 1}, rng, -3.0f, 3.0f), DType::kInt32);
      ExpectGpuMatchesCpu(Call(op, {cuda_test::CastHost(a, dt), cuda_test::CastHost(b, dt)}, {{DType::kBool, {4, 5, 6}}}),
                          ExactTol(), std::string(op) + " " + DTypeName(dt));
    }
  }
  for (const char* op : {"And", "Or", "Xor"})
    ExpectGpuMatchesCpu(Call(op, {bools({2, 7}), bools({7})}, {{DType::kBool, {2, 7}}}), ExactTol(), op);
  ExpectGpuMatchesCpu(Call("Not", {bools({33})}, {{DType::kBool, {33}}}), ExactTol(), "Not");
}

TEST(CudaTensorKernels, RangeTriluCumSumArgMatchCpu) {
  OF_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(45);
  Tensor fs(DType::kFloat32, {}), fl(DType::kFloat32, {}), fd(DType::kFloat32, {});
  fs.data<float>()[0] = -1.5f;
  fl.data<float>()[0] = 7.0f;
  fd.data<float>()[0] = 0.25f;
  ExpectGpuMatchesCpu(Call("Range", {fs, fl, fd}, {{DType::kFloat32, {34}}}), ExactTol(), "Range f32");
  ExpectGpuMatchesCpu(Call("Range", {Int64Scalar(10), Int64Scalar(-7), Int64Scalar(-3)}, {{DType::kInt64, {6}}}), ExactTol(),
                      "Range i64");
  for (int upper : {0, 1}) {
    for (int64_t k : {-2, 0, 3}) {
      OpCall c = Call("Trilu", {RandomTensor(DType::kFloat32, {2, 5, 7}, rng), Int64Scalar(k)}, {{DType::kFloat32, {2, 5, 7}}});
      c.attrs.set("upper", Attribute::Int(upper));
      ExpectGpuMatchesCpu(c, ExactTol(), "Trilu upper=" + std::to_string(upper) + " k=" + std::to_string(k));
    }
  }
  for (int exclusive : {0, 1}) {
    for (int reverse : {0, 1}) {
      for (int64_t axis : {0, 1, -1}) {
        OpCall c = Call("CumSum", {RandomTensor(DType::kFloat32, {6, 9, 5}, rng), Int64Scalar(axis)},
                        {{DType::kFloat32, {6, 9, 5}}});
        c.attrs.set("exclusive", Attribute::Int(exclusive));
        c.attrs.set("reverse", Attribute::Int(reverse));
        ExpectGpuMatchesCpu(c, DefaultTol(DType::kFloat32), "CumSum axis " + std::to_string(axis));
      }
    }
  }
  OpCall ci = Call("CumSum", {RandomTensor(DType::kInt64, {100}, rng, -1e6f, 1e6f), Int64Scalar(0)},
                   {{DType::kInt64, {100}}});
  ci.attrs.set("exclusive", Attribute::Int(0));
  ci.attrs.set("reverse", Attribute::Int(0));
  ExpectGpuMatchesCpu(ci, ExactTol(), "CumSum i64");
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (int last : {0, 1}) {
      for (int64_t axis : {0, 2}) {
        // Few distinct values so ties (and select_last_index) matter.
        Tensor x = cuda_test::CastHost(
            cuda_test::CastHost(RandomTensor(DType::kFloat32, {4, 6, 8}, rng, -3.0f, 3.0f), DType::kInt32),
            DType::kFloat32);
        Shape y{4, 6, 8};
        y[static_cast<size_t>(axis)] = 1;
        OpCall c = Call(op, {x}, {{DType::kInt64, y}});
        c.attrs.set("axis", Attribute::Int(axis));
        c.attrs.set("keepdims", Attribute::Int(1));
        c.attrs.set("select_last_index", Attribute::Int(last));
        ExpectGpuMatchesCpu(c, ExactTol(), std::string(op) + " axis " + std::to_string(axis) + " last=" + std::to_string(last));
      }
    }
  }
}

}  // namespace
}  // namespace oneflow
