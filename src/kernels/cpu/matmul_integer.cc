// CPU kernels of the integer matmuls, all on the 8-bit GEMM of integer_gemm.h:
//   MatMulInteger          Y(int32) = (A - za) x (B - zb), numpy batching; za per tensor or per row
//                          of A, zb per tensor or per column of B (graph/ops/quantization.cc);
//   QLinearMatMul          Y = saturate(round_half_even((A - za)(B - zb) * a_scale * b_scale / y_scale)
//                          + zy), scales and zero points per tensor, or A's per row and B's per column;
//   MatMulIntegerToFloat   com.microsoft: Y(float) = (A - za)(B - zb) * a_scale * b_scale + bias;
//   DynamicQuantizeMatMul  com.microsoft: A (float) quantized as DynamicQuantizeLinear does, then
//                          the same (graph/ops/contrib.cc).
// A constant B (the weights of a quantized model) with a constant or absent zero point is packed
// once per node; otherwise per run, once per distinct batch of B.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/integer_gemm.h"
#include "kernels/cpu/matmul_shape.h"
#include "kernels/cpu/quantize_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

using integer_gemm::PackedB;
using integer_gemm::ZeroPointEntries;

// Where an integer matmul's operands sit among the node's inputs (-1: the op has no such input).
struct IntegerMatMulSlots {
  int a, b, a_zero_point, b_zero_point;
};

// (A - za) x (B - zb) into int32, for the node's A and B at `slots`; A may also come from the
// caller (DynamicQuantizeMatMul's quantized copy), with its type and a per-tensor zero point.
class IntegerMatMul {
 public:
  IntegerMatMul(const KernelInitContext& init, IntegerMatMulSlots slots, DType a_type) : slots_(slots) {
    const Tensor* b = init.constant_input(static_cast<size_t>(slots.b));
    const bool zb_known = slots.b_zero_point < 0 || !init.has_input(static_cast<size_t>(slots.b_zero_point)) ||
                          init.constant_input(static_cast<size_t>(slots.b_zero_point)) != nullptr;
    if (!b || b->rank() != 2 || !zb_known || a_type == DType::kUndefined) return;
    const int64_t K = b->dim(0), N = b->dim(1);
    const Tensor* zb = slots.b_zero_point < 0 ? nullptr : init.constant_input(static_cast<size_t>(slots.b_zero_point));
    const std::vector<int16_t> zbs = ZeroPointEntries(zb, init.node().Describe(), "b_zero_point", N);
    constant_b_.Pack(b->raw(), b->dtype(), N, zbs.data(), K, N, a_type);
    has_constant_b_ = true;
    constant_a_type_ = a_type;
  }

  // Runs the product of `a` (the node's A, or a stand-in of the same shape) with the node's B into
  // y (M x N per batch). `a_zero_points`: M entries, one per row of A.
  void Run(KernelContext& ctx, const Tensor& a, const std::vector<int16_t>& a_zero_points, int32_t* y) const {
    const Tensor& b = ctx.input(static_cast<size_t>(slots_.b));
    const MatMulShape s = AnalyzeMatMul(a.shape(), b.shape());
    OF_CHECK(s.K < integer_gemm::kMaxK, kUnsupported, ctx.node_desc(), ": K = ", s.K,
             " could overflow the int32 accumulator (at most ", integer_gemm::kMaxK - 1, ")");
    const bool use_constant = has_constant_b_ && a.dtype() == constant_a_type_;
    PackedB per_run;
    int64_t packed_offset = -1;
    std::vector<int16_t> zb;
    if (!use_constant) {
      const bool has_zb = slots_.b_zero_point >= 0 && ctx.has_input(static_cast<size_t>(slots_.b_zero_point));
      zb = ZeroPointEntries(has_zb ? &ctx.input(static_cast<size_t>(slots_.b_zero_point)) : nullptr, ctx.node_desc(),
                            "b_zero_point", s.N);
    }
    const size_t b_elem = DTypeSize(b.dtype()), a_elem = DTypeSize(a.dtype());
    OF_REQUIRE(a_elem == 1 && b_elem == 1, ctx.node_desc(), ": integer matmul of ", DTypeName(a.dtype()), " x ",
               DTypeName(b.dtype()), " (int8 or uint8 only)");
    for (int64_t batch = 0; batch < s.BatchCount(); ++batch) {
      int64_t a_off = 0, b_off = 0;
      BatchOffsets(s, batch, a_off, b_off);
      const PackedB* packed = &constant_b_;
      if (!use_constant) {
        if (b_off != packed_offset) {  // a broadcast B is packed once
          per_run.Pack(static_cast<const uint8_t*>(b.raw()) + b_off, b.dtype(), s.N, zb.data(), s.K, s.N, a.dtype());
          packed_offset = b_off;
        }
        packed = &per_run;
      }
      packed->Multiply(ctx.pool(), static_cast<const uint8_t*>(a.raw()) + a_off, s.M, s.K, a_zero_points.data(),
                       y + batch * s.M * s.N, s.N);
    }
  }

  // The node's a_zero_point as one entry per row of A (M rows).
  std::vector<int16_t> NodeAZeroPoints(KernelContext& ctx, int64_t M) const {
    const bool has = slots_.a_zero_point >= 0 && ctx.has_input(static_cast<size_t>(slots_.a_zero_point));
    return ZeroPointEntries(has ? &ctx.input(static_cast<size_t>(slots_.a_zero_point)) : nullptr, ctx.node_desc(),
                            "a_zero_point", M);
  }

 private:
  IntegerMatMulSlots slots_;
  bool has_constant_b_ = false;
  DType constant_a_type_ = DType::kUndefined;
  PackedB constant_b_;
};

// The rows of A (its second-to-last dim; 1 for a vector).
int64_t RowsOf(const Tensor& a) { return a.rank() >= 2 ? a.dim(a.rank() - 2) : 1; }

DType ConstantType(const KernelInitContext& init, size_t i) {
  return init.has_input(i) ? init.input_type(i).dtype : DType::kUndefined;
}

class MatMulIntegerKernel final : public OpKernel {
 public:
  explicit MatMulIntegerKernel(const KernelInitContext& init) : mm_(init, {0, 1, 2, 3}, ConstantType(init, 0)) {}
  void Compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    mm_.Run(ctx, a, mm_.NodeAZeroPoints(ctx, RowsOf(a)), ctx.output(0).data<int32_t>());
  }

 private:
  IntegerMatMul mm_;
};
ONEFLOW_KERNEL_CLASS(MatMulInteger, MatMulIntegerKernel);

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point).
class QLinearMatMulKernel final : public OpKernel {
 public:
  explicit QLinearMatMulKernel(const KernelInitContext& init) : mm_(init, {0, 3, 2, 5}, ConstantType(init, 0)) {}
  void Compute(KernelContext& ctx) override {
    const std::string& node = ctx.node_desc();
    const Tensor& a = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t rows = RowsOf(a), cols = y.rank() ? y.dim(y.rank() - 1) : 1;
    auto per = [&](size_t i, int64_t n, const char* what) {
      const Tensor& t = ctx.input(i);
      OF_REQUIRE(t.numel() == 1 || (t.rank() == 1 && t.numel() == n), node, ": ", what, " ", ShapeToString(t.shape()),
                 " must be a scalar or have ", n, " entries");
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) v[static_cast<size_t>(j)] = t.GetAsDouble(t.numel() == 1 ? 0 : j);
      return v;
    };
    const std::vector<double> sa = per(1, rows, "a_scale"), sb = per(4, cols, "b_scale"), sy = per(6, 1, "y_scale");
    const std::vector<double> zy = per(7, 1, "y_zero_point");
    for (const std::vector<double>* s : {&sa, &sb, &sy})
      for (double v : *s) OF_REQUIRE(v > 0.0 && std::isfinite(v), node, ": scales must be positive and finite, got ", v);
    // a_scale * b_scale / y_scale, each step rounded to the scales' type as the reference computes it.
    const DType scale_type = ctx.input(1).dtype();
    auto in_scale_type = [scale_type](double v) {
      switch (scale_type) {
        case DType::kFloat16: return CastToDouble(CastFromDouble<Float16>(v));
        case DType::kBFloat16: return CastToDouble(CastFromDouble<BFloat16>(v));
        default: return static_cast<double>(static_cast<float>(v));
      }
    };
    std::vector<double> multiplier(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        multiplier[static_cast<size_t>(i * cols + j)] =
            in_scale_type(in_scale_type(sa[static_cast<size_t>(i)] * sb[static_cast<size_t>(j)]) / sy[0]);
    std::vector<int32_t> acc(static_cast<size_t>(y.numel()));
    mm_.Run(ctx, a, mm_.NodeAZeroPoints(ctx, rows), acc.data());
    const bool is_signed = y.dtype() == DType::kInt8;
    const int32_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255, z = static_cast<int32_t>(zy[0]);
    uint8_t* out = static_cast<uint8_t*>(y.raw());
    const int64_t per_matrix = rows * cols;
    ctx.pool().ParallelFor(y.numel(), 4.0, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e)  // int8's two's complement byte for a negative result
        out[e] = static_cast<uint8_t>(QuantizeToRange(static_cast<double>(acc[static_cast<size_t>(e)]) *
                                                          multiplier[static_cast<size_t>(e % per_matrix)], z, lo, hi));
    });
  }

 private:
  IntegerMatMul mm_;
};
ONEFLOW_KERNEL_CLASS(QLinearMatMul, QLinearMatMulKernel);

// A per-tensor or per-column (N entries) float scale.
std::vector<float> ColumnScales(const Tensor& t, int64_t n, const std::string& node, const char* name) {
  OF_REQUIRE(t.dtype() == DType::kFloat32, node, ": ", name, " must be float32, got ", DTypeName(t.dtype()));
  OF_REQUIRE(t.numel() == 1 || (t.rank() == 1 && t.numel() == n), node, ": ", name, " ", ShapeToString(t.shape()),
             " must be a scalar or have ", n, " entries (one per column of B)");
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) v[static_cast<size_t>(j)] = t.data<float>()[t.numel() == 1 ? 0 : j];
  return v;
}

// y = acc * (a_scale * b_scale[column]) + bias[column], over rows of N columns, as onnxruntime
// computes it (the two scales multiplied first, in float).
void ScaleToFloat(KernelContext& ctx, const int32_t* acc, float a_scale, const std::vector<float>& b_scales,
                  const Tensor* bias, float* y, int64_t rows, int64_t n) {
  std::vector<float> multiplier(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) multiplier[static_cast<size_t>(j)] = a_scale * b_scales[static_cast<size_t>(j)];
  if (bias) {
    OF_REQUIRE(bias->dtype() == DType::kFloat32 && bias->rank() == 1 && bias->numel() == n, ctx.node_desc(),
               ": bias must be a float32 vector of ", n, " entries, got ", DTypeName(bias->dtype()),
               ShapeToString(bias->shape()));
  }
  const float* b = bias ? bias->data<float>() : nullptr;
  ctx.pool().ParallelFor(rows, static_cast<double>(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int32_t* in = acc + r * n;
      float* out = y + r * n;
      for (int64_t j = 0; j < n; ++j) out[j] = static_cast<float>(in[j]) * multiplier[static_cast<size_t>(j)] + (b ? b[j] : 0.0f);
    }
  });
}

float ScalarScale(const Tensor& t, const std::string& node, const char* name) {
  OF_REQUIRE(t.dtype() == DType::kFloat32 && t.numel() == 1, node, ": ", name, " must be a float32 scalar, got ",
             DTypeName(t.dtype()), ShapeToString(t.shape()), " (per-tensor quantization of A only)");
  return t.data<float>()[0];
}

// MatMulIntegerToFloat: A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?.
class MatMulIntegerToFloatKernel final : public OpKernel {
 public:
  explicit MatMulIntegerToFloatKernel(const KernelInitContext& init)
      : mm_(init, {0, 1, 4, 5}, ConstantType(init, 0)) {}
  void Compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    Tensor& y = ctx.output(0);
    const int64_t n = y.rank() ? y.dim(y.rank() - 1) : 1;
    const float a_scale = ScalarScale(ctx.input(2), ctx.node_desc(), "a_scale");
    if (ctx.has_input(4))
      OF_REQUIRE(ctx.input(4).numel() == 1, ctx.node_desc(), ": a_zero_point must be a scalar (per-tensor A)");
    const std::vector<float> b_scales = ColumnScales(ctx.input(3), n, ctx.node_desc(), "b_scale");
    std::vector<int32_t> acc(static_cast<size_t>(y.numel()));
    mm_.Run(ctx, a, mm_.NodeAZeroPoints(ctx, RowsOf(a)), acc.data());
    ScaleToFloat(ctx, acc.data(), a_scale, b_scales, ctx.has_input(6) ? &ctx.input(6) : nullptr, y.data<float>(),
                 y.numel() / std::max<int64_t>(n, 1), n);
  }

 private:
  IntegerMatMul mm_;
};
ONEFLOW_KERNEL_CLASS(MsMatMulIntegerToFloat, MatMulIntegerToFloatKernel);

// DynamicQuantizeMatMul: A (float), B, b_scale, b_zero_point?, bias?. A becomes uint8 with the
// per-tensor scale and zero point DynamicQuantizeLinear would give it.
class DynamicQuantizeMatMulKernel final : public OpKernel {
 public:
  explicit DynamicQuantizeMatMulKernel(const KernelInitContext& init) : mm_(init, {0, 1, -1, 3}, DType::kUInt8) {}
  void Compute(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    Tensor& y = ctx.output(0);
    OF_REQUIRE(a.dtype() == DType::kFloat32, ctx.node_desc(), ": A must be float32, got ", DTypeName(a.dtype()));
    const int64_t n = y.rank() ? y.dim(y.rank() - 1) : 1;
    const std::vector<float> b_scales = ColumnScales(ctx.input(2), n, ctx.node_desc(), "b_scale");
    const float* xs = a.data<float>();
    const DynamicQuantization q = DynamicQuantizationOf(xs, a.numel());
    Tensor quantized = Tensor::Uninitialized(DType::kUInt8, a.shape());
    uint8_t* qs = quantized.data<uint8_t>();
    ctx.pool().ParallelFor(a.numel(), 4.0, [xs, qs, q](int64_t begin, int64_t end) {
      QuantizeUInt8(xs, qs, begin, end, q.scale, q.zero_point);
    });
    std::vector<int32_t> acc(static_cast<size_t>(y.numel()));
    mm_.Run(ctx, quantized, std::vector<int16_t>(static_cast<size_t>(RowsOf(a)), q.zero_point), acc.data());
    ScaleToFloat(ctx, acc.data(), q.scale, b_scales, ctx.has_input(4) ? &ctx.input(4) : nullptr, y.data<float>(),
                 y.numel() / std::max<int64_t>(n, 1), n);
  }

 private:
  IntegerMatMul mm_;
};
ONEFLOW_KERNEL_CLASS(MsDynamicQuantizeMatMul, DynamicQuantizeMatMulKernel);

}  // namespace
ONEFLOW_CPU_ISA_END
}  // namespace oneflow
