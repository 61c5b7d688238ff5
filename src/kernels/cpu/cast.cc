// CPU kernels: Cast, CastLike, Identity (a view) and inference-mode Dropout.
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "base/narrow_types.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

// One element from S to D. Floats to integers saturate (SaturatingCast: NaN -> 0, out of range ->
// the nearest end); ONNX leaves those cases undefined and numpy's answer depends on the CPU.
template <typename D, typename S>
D ConvertValue(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (std::is_same_v<D, bool>) {
    return static_cast<ComputeType<S>>(s) != ComputeType<S>(0);
  } else if constexpr (kIsHalfType<D>) {
    if constexpr (std::is_same_v<S, double>) return D(static_cast<float>(s));
    else return D(static_cast<float>(static_cast<ComputeType<S>>(s)));
  } else if constexpr (std::is_integral_v<D> && (std::is_floating_point_v<ComputeType<S>>)) {
    return SaturatingCast<D>(static_cast<ComputeType<S>>(s));
  } else {
    return static_cast<D>(static_cast<ComputeType<S>>(s));  // integer narrowing wraps, as numpy
  }
}

void CheckCastable(const KernelContext& ctx, DType t) {
  OF_CHECK(IsKnownDType(static_cast<int32_t>(t)) && t != DType::kString && t != DType::kUndefined, kUnsupported,
           ctx.node_desc(), ": cast to/from dtype code ", static_cast<int>(t),
           " is not supported (string and float6 types are not implemented)");
}

NarrowCastOptions CastOptions(const KernelContext& ctx) {
  NarrowCastOptions o;
  o.saturate = ctx.attrs().GetInt("saturate", 1) != 0;
  const std::string& mode = ctx.attrs().GetString("round_mode", "up");  // inference checked the spelling
  o.e8m0_rounding = mode == "down" ? E8M0Rounding::kDown : mode == "nearest" ? E8M0Rounding::kNearest : E8M0Rounding::kUp;
  return o;
}

void CastKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  CheckCastable(ctx, x.dtype());
  CheckCastable(ctx, y.dtype());
  CastInto(ctx.pool(), x, y, CastOptions(ctx));
}
ONEFLOW_KERNEL(Cast, CastKernel);
ONEFLOW_KERNEL(CastLike, CastKernel);  // output dtype comes from inference (target_type's dtype)

// BitCast: inference checked the widths; the bytes are copied as they are. A bool output byte
// other than 0 or 1 would not be a bool, so those are refused.
void BitCastKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(x.nbytes() == y.nbytes(), ctx.node_desc(), ": BitCast needs types of one width");
  if (y.dtype() == DType::kBool) {
    const uint8_t* b = static_cast<const uint8_t*>(x.raw());
    for (size_t i = 0; i < x.nbytes(); ++i)
      OF_REQUIRE(b[i] <= 1, ctx.node_desc(), ": byte ", static_cast<int>(b[i]), " at ", i, " is not a bool (0 or 1)");
  }
  if (x.nbytes() != 0) std::memcpy(y.raw(), x.raw(), x.nbytes());
}
ONEFLOW_KERNEL(BitCast, BitCastKernel);

void DropoutKernel(KernelContext& ctx) {
  // Training mode with ratio 0 keeps every element, so it is the identity too; any other training
  // run would need random masks, which an inference engine does not produce.
  const bool training = ctx.has_input(2) && ctx.input(2).numel() == 1 && ctx.input(2).GetAsDouble(0) != 0.0;
  const double ratio = ctx.has_input(1) && ctx.input(1).numel() == 1 ? ctx.input(1).GetAsDouble(0) : 0.5;
  OF_CHECK(!training || ratio == 0.0, kUnsupported, ctx.node_desc(),
           ": Dropout with training_mode=true and ratio ", ratio, " is not supported (inference only)");
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.raw() != x.raw() && x.nbytes() > 0) std::memcpy(y.raw(), x.raw(), x.nbytes());
  if (ctx.has_output(1)) {
    Tensor& mask = ctx.output(1);
    if (mask.numel() > 0) std::memset(mask.raw(), 1, mask.nbytes());  // bool true
  }
}
ONEFLOW_KERNEL(Dropout, DropoutKernel);

// A cast with a narrow type on either side (base/narrow_types.h): every element through its
// exact value. A double holds every narrow value exactly, so a narrow source converts as its value
// does; a floating source rounds once, into the narrow target; an integer or bool source keeps its
// low bits into a narrow integer (ONNX's fixed-point narrowing) and converts by value into a float.
void CastNarrow(ThreadPool& pool, const Tensor& src, Tensor& dst, const NarrowCastOptions& o) {
  const DType from = src.dtype(), to = dst.dtype();
  auto for_each = [&](auto&& convert) {
    pool.ParallelFor(src.numel(), 4.0, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) convert(i);
    });
  };
  if (IsNarrowDType(from) && IsNarrowDType(to)) {
    const uint8_t* in = static_cast<const uint8_t*>(src.raw());
    uint8_t* out = static_cast<uint8_t*>(dst.raw());
    for_each([&](int64_t i) { out[i] = NarrowFromDouble(to, NarrowToDouble(from, in[i]), o); });
  } else if (IsNarrowDType(from)) {
    const uint8_t* in = static_cast<const uint8_t*>(src.raw());
    DispatchAll(to, [&](auto tag) {
      using D = typename decltype(tag)::type;
      D* out = dst.data<D>();
      for_each([&](int64_t i) { out[i] = ConvertValue<D>(NarrowToDouble(from, in[i])); });
    });
  } else {
    uint8_t* out = static_cast<uint8_t*>(dst.raw());
    DispatchAll(from, [&](auto tag) {
      using S = typename decltype(tag)::type;
      const S* in = src.data<S>();
      if constexpr (std::is_integral_v<S>) {  // bool included: 0 or 1
        for_each([&](int64_t i) { out[i] = NarrowFromInt64(to, static_cast<int64_t>(in[i]), o); });
      } else {
        for_each([&](int64_t i) { out[i] = NarrowFromDouble(to, CastToDouble(in[i]), o); });
      }
    });
  }
}

}  // namespace

void CastInto(ThreadPool& pool, const Tensor& src, Tensor& dst, const NarrowCastOptions& options) {
  OF_ASSERT(src.numel() == dst.numel());
  if (src.dtype() == dst.dtype()) {
    if (src.raw() != dst.raw() && src.nbytes() > 0) std::memcpy(dst.raw(), src.raw(), src.nbytes());
    return;
  }
  if (IsNarrowDType(src.dtype()) || IsNarrowDType(dst.dtype())) return CastNarrow(pool, src, dst, options);
  DispatchAll(src.dtype(), [&](auto stag) {
    using S = typename decltype(stag)::type;
    DispatchAll(dst.dtype(), [&](auto dtag) {
      using D = typename decltype(dtag)::type;
      UnaryMap(pool, src.data<S>(), dst.data<D>(), src.numel(), [](S v) { return ConvertValue<D>(v); }, kCheapCost);
    });
  });
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
