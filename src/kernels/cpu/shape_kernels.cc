// CPU kernels: tensor generators and shape queries — Shape, Size, Range, ConstantOfShape,
// Constant, EyeLike, Trilu.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/tensor_copy.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

void ShapeKernel(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  Tensor& y = ctx.output(0);
  const int64_t r = static_cast<int64_t>(s.size());
  int64_t start = ctx.attrs().GetInt("start", 0);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  int64_t* p = y.data<int64_t>();
  for (int64_t i = 0; i < y.numel(); ++i) p[i] = s[static_cast<size_t>(start + i)];
}
ONEFLOW_KERNEL(Shape, ShapeKernel);

void SizeKernel(KernelContext& ctx) { *ctx.output(0).data<int64_t>() = ctx.input(0).numel(); }
ONEFLOW_KERNEL(Size, SizeKernel);

void RangeKernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  DispatchAll(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": Range does not support bool");
    } else if constexpr (std::is_integral_v<T>) {
      // Integer ranges accumulate exactly in the element type, as ONNX's loop definition does.
      const T start = ctx.input(0).data<T>()[0], delta = ctx.input(2).data<T>()[0];
      T* p = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) p[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    } else {
      const double start = ctx.input(0).GetAsDouble(0), delta = ctx.input(2).GetAsDouble(0);
      T* p = y.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) p[i] = CastFromDouble<T>(start + static_cast<double>(i) * delta);
    }
  });
}
ONEFLOW_KERNEL(Range, RangeKernel);

// Fills `y` with copies of one element's bytes.
void FillWith(Tensor& y, const void* elem) {
  const size_t esz = DTypeSize(y.dtype());
  char* d = static_cast<char*>(y.raw());
  bool zero = true;
  for (size_t b = 0; b < esz; ++b) zero &= static_cast<const char*>(elem)[b] == 0;
  if (zero) {
    std::memset(d, 0, y.nbytes());
    return;
  }
  for (int64_t i = 0; i < y.numel(); ++i) CopyElement(d + static_cast<size_t>(i) * esz, elem, esz);
}

void ConstantOfShapeKernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  std::vector<char> elem(DTypeSize(y.dtype()), 0);
  if (ctx.attrs().has("value")) std::memcpy(elem.data(), ctx.attrs().GetTensor("value").raw(), elem.size());
  FillWith(y, elem.data());
}
ONEFLOW_KERNEL(ConstantOfShape, ConstantOfShapeKernel);

void ConstantKernel(KernelContext& ctx) {
  const AttrMap& a = ctx.attrs();
  Tensor& y = ctx.output(0);
  if (a.has("value")) {
    const Tensor& t = a.GetTensor("value");
    if (t.dtype() == DType::kString) std::copy(t.strings(), t.strings() + t.numel(), y.strings());
    else if (t.nbytes()) std::memcpy(y.raw(), t.raw(), t.nbytes());
  } else if (a.has("value_string")) {
    *y.strings() = a.GetString("value_string");
  } else if (a.has("value_strings")) {
    const auto& v = a.GetStrings("value_strings");
    std::copy(v.begin(), v.end(), y.strings());
  } else if (a.has("value_float")) {
    *y.data<float>() = a.GetFloat("value_float");
  } else if (a.has("value_floats")) {
    const auto& v = a.GetFloats("value_floats");
    if (!v.empty()) std::memcpy(y.raw(), v.data(), v.size() * sizeof(float));
  } else if (a.has("value_int")) {
    *y.data<int64_t>() = a.GetInt("value_int");
  } else if (a.has("value_ints")) {
    const auto& v = a.GetInts("value_ints");
    if (!v.empty()) std::memcpy(y.raw(), v.data(), v.size() * sizeof(int64_t));
  } else {
    Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": unsupported Constant attribute");
  }
}
ONEFLOW_KERNEL(Constant, ConstantKernel);

std::vector<char> OneBytes(DType t) {
  std::vector<char> one(DTypeSize(t), 0);
  DispatchAll(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = CastFromDouble<T>(1.0);
    std::memcpy(one.data(), &v, sizeof(T));
  });
  return one;
}

void EyeLikeKernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const size_t esz = DTypeSize(y.dtype());
  std::memset(y.raw(), 0, y.nbytes());
  const int64_t rows = y.dim(0), cols = y.dim(1);
  // Any k outside [-rows, cols] gives all zeros; clamping keeps i + k from overflowing for a hostile k.
  const int64_t k = std::clamp<int64_t>(ctx.attrs().GetInt("k"), -rows, cols);
  std::vector<char> one = OneBytes(y.dtype());
  char* d = static_cast<char*>(y.raw());
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t j = i + k;
    if (j >= 0 && j < cols) std::memcpy(d + static_cast<size_t>(i * cols + j) * esz, one.data(), esz);
  }
}
ONEFLOW_KERNEL(EyeLike, EyeLikeKernel);

void TriluKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t k = ctx.has_input(1) ? ctx.input(1).GetAsInt64(0) : 0;
  const bool upper = ctx.attrs().GetInt("upper") != 0;
  const int64_t n = x.dim(x.rank() - 2), m = x.dim(x.rank() - 1);
  if (x.numel() == 0) return;
  const int64_t rows = x.numel() / m;
  const size_t esz = DTypeSize(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  ctx.pool().ParallelFor(rows, 10.0 + static_cast<double>(m * static_cast<int64_t>(esz)) / 8.0, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t i = row % n;
      // Kept columns: upper j >= i + k, lower j <= i + k.
      int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, m) : 0;
      int64_t hi = upper ? m : std::clamp<int64_t>(i + k + 1, 0, m);
      if (hi < lo) hi = lo;
      char* d = dst + static_cast<size_t>(row * m) * esz;
      const char* s = src + static_cast<size_t>(row * m) * esz;
      std::memset(d, 0, static_cast<size_t>(lo) * esz);
      std::memcpy(d + static_cast<size_t>(lo) * esz, s + static_cast<size_t>(lo) * esz, static_cast<size_t>(hi - lo) * esz);
      std::memset(d + static_cast<size_t>(hi) * esz, 0, static_cast<size_t>(m - hi) * esz);
    }
  });
}
ONEFLOW_KERNEL(Trilu, TriluKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
