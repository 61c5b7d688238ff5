// CPU kernels: tensor layout ops (Transpose, Concat, Split, Slice, Expand, Tile, Pad,
// DepthToSpace, SpaceToDepth, CenterCropPad) and the view registrations of the reshaping ops.
// Everything here moves element bytes without looking at them, so it works for every dtype.
#include <algorithm>
#include <cstring>

#include "graph/infer_util.h"
#include "graph/ops/tensor_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/tensor_copy.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

std::vector<int64_t> TransposePerm(const KernelContext& ctx, int64_t rank) {
  std::vector<int64_t> perm;
  if (ctx.attrs().has("perm")) {
    perm = ctx.attrs().GetInts("perm");
    for (int64_t& p : perm)
      if (p < 0) p += rank;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  return perm;
}

void TransposeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  TransposeCopy(x.raw(), y.raw(), x.shape(), TransposePerm(ctx, x.rank()), DTypeSize(x.dtype()), &ctx.pool());
}
ONEFLOW_KERNEL(Transpose, TransposeKernel);

// Concat/Split: the tensor is [outer, axis*inner] per part; each part is a contiguous run per
// outer index, so both are memcpy loops over (outer, part).
struct Run {
  char* dst;
  const char* src;
  size_t bytes;        // bytes per outer index
  size_t dst_stride;   // bytes between outer indices in dst
  size_t src_stride;   // bytes between outer indices in src
};

void CopyRuns(ThreadPool& pool, const std::vector<Run>& runs, int64_t outer) {
  if (runs.empty() || outer == 0) return;
  size_t total = 0;
  for (const Run& r : runs) total += r.bytes;
  const int64_t parts = static_cast<int64_t>(runs.size());
  const double cost = 10.0 + static_cast<double>(total) / static_cast<double>(parts) / 8.0;
  pool.ParallelFor(outer * parts, cost, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      const Run& r = runs[static_cast<size_t>(w % parts)];
      const size_t o = static_cast<size_t>(w / parts);
      std::memcpy(r.dst + o * r.dst_stride, r.src + o * r.src_stride, r.bytes);
    }
  });
}

void ConcatKernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), y.rank());
  const size_t esz = DTypeSize(y.dtype());
  const int64_t outer = ShapeProduct(y.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = ShapeProduct(y.shape(), static_cast<size_t>(axis) + 1, y.shape().size());
  const size_t out_row = static_cast<size_t>(y.dim(axis) * inner) * esz;
  std::vector<Run> runs;
  size_t offset = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& x = ctx.input(i);
    const size_t bytes = static_cast<size_t>(x.dim(axis) * inner) * esz;
    if (bytes) runs.push_back({static_cast<char*>(y.raw()) + offset, static_cast<const char*>(x.raw()), bytes, out_row, bytes});
    offset += bytes;
  }
  CopyRuns(ctx.pool(), runs, outer);
}
ONEFLOW_KERNEL(Concat, ConcatKernel);

void SplitKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  const size_t esz = DTypeSize(x.dtype());
  const int64_t outer = ShapeProduct(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = ShapeProduct(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  const size_t in_row = static_cast<size_t>(x.dim(axis) * inner) * esz;
  std::vector<Run> runs;
  size_t offset = 0;
  int64_t covered = 0;
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (!ctx.has_output(i)) Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": omitted Split outputs are not supported");
    Tensor& y = ctx.output(i);
    const size_t bytes = static_cast<size_t>(y.dim(axis) * inner) * esz;
    covered += y.dim(axis);
    if (bytes) runs.push_back({static_cast<char*>(y.raw()), static_cast<const char*>(x.raw()) + offset, bytes, bytes, in_row});
    offset += bytes;
  }
  OF_CHECK(covered == x.dim(axis), kInvalidArgument, ctx.node_desc(), ": split sizes sum to ", covered,
           ", axis has ", x.dim(axis));
  CopyRuns(ctx.pool(), runs, outer);
}
ONEFLOW_KERNEL(Split, SplitKernel);

void SliceKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(3)) axes = ctx.input(3).ToInt64Vector();
  if (ctx.has_input(4)) steps = ctx.input(4).ToInt64Vector();
  std::vector<SliceAxis> sl = ComputeSlice(x.shape(), ctx.input(1).ToInt64Vector(), ctx.input(2).ToInt64Vector(),
                                           axes, steps, ctx.node_desc());
  std::vector<int64_t> in_strides = ContiguousStrides(x.shape());
  std::vector<int64_t> strides(sl.size());
  Shape shape(sl.size());
  int64_t offset = 0;
  for (size_t k = 0; k < sl.size(); ++k) {
    offset += sl[k].start * in_strides[k];
    strides[k] = sl[k].step * in_strides[k];
    shape[k] = sl[k].count;
  }
  OF_ASSERT(shape == y.shape());
  const size_t esz = DTypeSize(x.dtype());
  StridedCopy(static_cast<const char*>(x.raw()) + offset * static_cast<int64_t>(esz), y.raw(), shape, strides, esz,
              &ctx.pool());
}
ONEFLOW_KERNEL(Slice, SliceKernel);

void ExpandKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const size_t r = y.shape().size(), off = r - x.shape().size();
  std::vector<int64_t> xs = ContiguousStrides(x.shape());
  std::vector<int64_t> strides(r, 0);
  for (size_t k = off; k < r; ++k) strides[k] = x.dim(static_cast<int64_t>(k - off)) == 1 ? 0 : xs[k - off];
  StridedCopy(x.raw(), y.raw(), y.shape(), strides, DTypeSize(x.dtype()), &ctx.pool());
}
ONEFLOW_KERNEL(Expand, ExpandKernel);

void TileKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  // The output is row-major over (repeat_0, dim_0, repeat_1, dim_1, ...): a strided copy with
  // zero strides on the repeat axes.
  std::vector<int64_t> xs = ContiguousStrides(x.shape());
  Shape shape;
  std::vector<int64_t> strides;
  for (size_t k = 0; k < x.shape().size(); ++k) {
    shape.push_back(y.dim(static_cast<int64_t>(k)) / x.dim(static_cast<int64_t>(k)));
    strides.push_back(0);
    shape.push_back(x.dim(static_cast<int64_t>(k)));
    strides.push_back(xs[k]);
  }
  StridedCopy(x.raw(), y.raw(), shape, strides, DTypeSize(x.dtype()), &ctx.pool());
}
ONEFLOW_KERNEL(Tile, TileKernel);

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// y[j...] = x[map_0[j_0], ...] or `fill` where any map entry is -1. `begin[k]` is the (possibly
// negative) number of elements added before dim k.
void PadGeneric(ThreadPool& pool, const Tensor& x, Tensor& y, const std::vector<int64_t>& begin, PadMode mode,
                const void* fill) {
  const size_t r = static_cast<size_t>(y.rank());
  const size_t esz = DTypeSize(y.dtype());
  if (y.numel() == 0) return;
  if (r == 0) {
    std::memcpy(y.raw(), x.raw(), esz);
    return;
  }
  std::vector<std::vector<int64_t>> maps(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t d = x.dim(static_cast<int64_t>(k)), o = y.dim(static_cast<int64_t>(k));
    maps[k].resize(static_cast<size_t>(o));
    for (int64_t j = 0; j < o; ++j) {
      int64_t i = j - begin[k];
      if (i < 0 || i >= d) {
        switch (mode) {
          case PadMode::kConstant: i = -1; break;
          case PadMode::kEdge: i = std::clamp<int64_t>(i, 0, d - 1); break;
          case PadMode::kWrap: i = ((i % d) + d) % d; break;
          case PadMode::kReflect:
            if (d == 1) { i = 0; break; }
            while (i < 0 || i >= d) i = i < 0 ? -i : 2 * (d - 1) - i;
            break;
        }
      }
      maps[k][static_cast<size_t>(j)] = i;
    }
  }
  std::vector<int64_t> xs = ContiguousStrides(x.shape());
  const int64_t len = y.dim(static_cast<int64_t>(r - 1));
  const int64_t rows = y.numel() / len;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  const std::vector<int64_t>& last = maps[r - 1];
  pool.ParallelFor(rows, 10.0 + 2.0 * static_cast<double>(len), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      int64_t rem = row, base = 0;
      bool filled = false;
      for (size_t k = r - 1; k-- > 0;) {
        const int64_t m = maps[k][static_cast<size_t>(rem % y.dim(static_cast<int64_t>(k)))];
        rem /= y.dim(static_cast<int64_t>(k));
        if (m < 0) filled = true;
        base += m * xs[k];
      }
      char* d = dst + static_cast<size_t>(row * len) * esz;
      for (int64_t j = 0; j < len; ++j) {
        const int64_t m = last[static_cast<size_t>(j)];
        CopyElement(d + static_cast<size_t>(j) * esz,
                    (filled || m < 0) ? fill : src + static_cast<size_t>(base + m) * esz, esz);
      }
    }
  });
}

void PadKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::string& m = ctx.attrs().GetString("mode");
  PadMode mode = m == "reflect" ? PadMode::kReflect : m == "edge" ? PadMode::kEdge : m == "wrap" ? PadMode::kWrap
                                                                                   : PadMode::kConstant;
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) axes = ctx.input(3).ToInt64Vector();
  std::vector<int64_t> pads = ExpandPads(x.rank(), ctx.input(1).ToInt64Vector(), ctx.has_input(3) ? &axes : nullptr,
                                         ctx.node_desc());
  std::vector<char> fill(DTypeSize(x.dtype()), 0);
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) std::memcpy(fill.data(), ctx.input(2).raw(), fill.size());
  OF_CHECK(mode == PadMode::kConstant || x.numel() > 0 || y.numel() == 0, kInvalidArgument,
           ctx.node_desc(), ": cannot pad an empty tensor in mode ", m);
  PadGeneric(ctx.pool(), x, y, std::vector<int64_t>(pads.begin(), pads.begin() + x.rank()), mode, fill.data());
}
ONEFLOW_KERNEL(Pad, PadKernel);

void CenterCropPadKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  std::vector<int64_t> begin(static_cast<size_t>(x.rank()), 0);
  for (int64_t k = 0; k < x.rank(); ++k) {
    const int64_t d = x.dim(k), t = y.dim(k);
    begin[static_cast<size_t>(k)] = t >= d ? (t - d) / 2 : -((d - t) / 2);
  }
  std::vector<char> zero(DTypeSize(x.dtype()), 0);
  PadGeneric(ctx.pool(), x, y, begin, PadMode::kConstant, zero.data());
}
ONEFLOW_KERNEL(CenterCropPad, CenterCropPadKernel);

void DepthToSpaceKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.attrs().GetInt("blocksize");
  const int64_t n = x.dim(0), c = x.dim(1) / (b * b), h = x.dim(2), w = x.dim(3);
  const bool crd = ctx.attrs().GetString("mode") == "CRD";
  Shape in = crd ? Shape{n, c, b, b, h, w} : Shape{n, b, b, c, h, w};
  std::vector<int64_t> perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  TransposeCopy(x.raw(), ctx.output(0).raw(), in, perm, DTypeSize(x.dtype()), &ctx.pool());
}
ONEFLOW_KERNEL(DepthToSpace, DepthToSpaceKernel);

void SpaceToDepthKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.attrs().GetInt("blocksize");
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2) / b, w = x.dim(3) / b;
  const bool crd = ctx.attrs().GetString("mode") == "CRD";
  std::vector<int64_t> perm = crd ? std::vector<int64_t>{0, 1, 3, 5, 2, 4} : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
  TransposeCopy(x.raw(), ctx.output(0).raw(), Shape{n, c, h, b, w, b}, perm, DTypeSize(x.dtype()), &ctx.pool());
}
ONEFLOW_KERNEL(SpaceToDepth, SpaceToDepthKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
