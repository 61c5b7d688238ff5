// CPU kernels: index-driven tensor ops — Gather, GatherElements, GatherND, ScatterElements,
// ScatterND, OneHot, NonZero, Compress, ReverseSequence, Unique. Indices are validated before any
// data is touched, so a bad index fails the run instead of reading out of bounds.
#include <algorithm>
#include <cstring>

#include "graph/infer_util.h"
#include "graph/ops/tensor_util.h"
#include "kernels/cpu/tensor_copy.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

void GatherKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  const std::vector<int64_t> idx = ReadIndices(ctx.input(1), x.dim(axis), ctx.node_desc());
  if (x.dtype() == DType::kString) {  // objects: copied one by one (skl2onnx gathers string columns)
    const int64_t outer = ShapeProduct(x.shape(), 0, static_cast<size_t>(axis)), d = x.dim(axis);
    const int64_t inner = ShapeProduct(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
    const int64_t n = static_cast<int64_t>(idx.size());
    for (int64_t w = 0; w < outer * n; ++w) {
      const std::string* s = x.strings() + ((w / n) * d + idx[static_cast<size_t>(w % n)]) * inner;
      std::copy(s, s + inner, y.strings() + w * inner);
    }
    return;
  }
  const size_t esz = DTypeSize(x.dtype());
  const int64_t outer = ShapeProduct(x.shape(), 0, static_cast<size_t>(axis));
  const size_t inner_bytes = static_cast<size_t>(ShapeProduct(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size())) * esz;
  const int64_t n = static_cast<int64_t>(idx.size()), d = x.dim(axis);
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  if (inner_bytes == 0) return;
  ctx.pool().ParallelFor(outer * n, 10.0 + static_cast<double>(inner_bytes) / 8.0, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / n, i = w % n;
      const char* s = src + static_cast<size_t>(o * d + idx[static_cast<size_t>(i)]) * inner_bytes;
      char* t = dst + static_cast<size_t>(w) * inner_bytes;
      if (inner_bytes <= 8) CopyElement(t, s, inner_bytes);
      else std::memcpy(t, s, inner_bytes);
    }
  });
}
ONEFLOW_KERNEL(Gather, GatherKernel);

// Calls fn(out_linear, data_offset_without_axis, axis_coordinate) for every element of an
// index-shaped tensor laid over `data_shape` (GatherElements / ScatterElements addressing).
template <typename Fn>
void ForEachIndexed(const Shape& idx_shape, const Shape& data_shape, int64_t axis, Fn&& fn) {
  const size_t r = idx_shape.size();
  std::vector<int64_t> ds = ContiguousStrides(data_shape);
  std::vector<int64_t> pos(r, 0);
  const int64_t total = NumElements(idx_shape);
  int64_t off = 0;
  for (int64_t i = 0; i < total; ++i) {
    fn(i, off, ds[static_cast<size_t>(axis)]);
    for (size_t k = r; k-- > 0;) {
      if (++pos[k] < idx_shape[k]) {
        if (static_cast<int64_t>(k) != axis) off += ds[k];
        break;
      }
      if (static_cast<int64_t>(k) != axis) off -= (idx_shape[k] - 1) * ds[k];
      pos[k] = 0;
    }
  }
}

void CheckIndexShape(const KernelContext& ctx, const Shape& idx, const Shape& data, int64_t axis) {
  OF_CHECK(idx.size() == data.size(), kInvalidArgument, ctx.node_desc(), ": indices rank ", idx.size(),
           " != data rank ", data.size());
  for (size_t k = 0; k < idx.size(); ++k)
    OF_CHECK(static_cast<int64_t>(k) == axis || idx[k] <= data[k], kInvalidArgument, ctx.node_desc(),
             ": indices shape ", ShapeToString(idx), " exceeds data shape ", ShapeToString(data));
}

void GatherElementsKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  CheckIndexShape(ctx, ctx.input(1).shape(), x.shape(), axis);
  const std::vector<int64_t> idx = ReadIndices(ctx.input(1), x.dim(axis), ctx.node_desc());
  const size_t esz = DTypeSize(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  ForEachIndexed(y.shape(), x.shape(), axis, [&](int64_t i, int64_t off, int64_t astride) {
    CopyElement(dst + static_cast<size_t>(i) * esz, src + static_cast<size_t>(off + idx[static_cast<size_t>(i)] * astride) * esz, esz);
  });
}
ONEFLOW_KERNEL(GatherElements, GatherElementsKernel);

// Offsets (in elements of data) of each index tuple of GatherND/ScatterND, batch-relative.
std::vector<int64_t> TupleOffsets(const KernelContext& ctx, const Tensor& data, const Tensor& indices, int64_t b) {
  const int64_t q = indices.rank();
  OF_CHECK(q >= 1, kInvalidArgument, ctx.node_desc(), ": indices must have rank >= 1");
  const int64_t last = indices.dim(q - 1);
  OF_CHECK(b + last <= data.rank(), kInvalidArgument, ctx.node_desc(), ": index tuples of length ", last,
           " exceed data rank ", data.rank());
  std::vector<int64_t> raw = ReadRawIndices(indices, ctx.node_desc());
  std::vector<int64_t> ds = ContiguousStrides(data.shape());
  const int64_t tuples = last ? static_cast<int64_t>(raw.size()) / last : indices.numel() == 0 ? 0 : NumElements(Shape(indices.shape().begin(), indices.shape().end() - 1));
  std::vector<int64_t> off(static_cast<size_t>(tuples), 0);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t o = 0;
    for (int64_t j = 0; j < last; ++j) {
      const int64_t dim = data.dim(b + j);
      int64_t v = raw[static_cast<size_t>(t * last + j)];
      if (v < -dim || v >= dim)
        Fail(ErrorCode::kRuntime, ctx.node_desc(), ": index ", v, " is out of range for a dimension of size ", dim);
      if (v < 0) v += dim;
      o += v * ds[static_cast<size_t>(b + j)];
    }
    off[static_cast<size_t>(t)] = o;
  }
  return off;
}

void GatherNDKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  Tensor& y = ctx.output(0);
  const int64_t b = ctx.attrs().GetInt("batch_dims");
  for (int64_t k = 0; k < b; ++k)
    OF_CHECK(k < ind.rank() - 1 && ind.dim(k) == x.dim(k), kInvalidArgument, ctx.node_desc(),
             ": batch dim ", k, " of indices and data differ");
  std::vector<int64_t> off = TupleOffsets(ctx, x, ind, b);
  const int64_t last = ind.dim(ind.rank() - 1);
  const size_t esz = DTypeSize(x.dtype());
  const int64_t batches = ShapeProduct(x.shape(), 0, static_cast<size_t>(b));
  const int64_t batch_stride = ShapeProduct(x.shape(), static_cast<size_t>(b), x.shape().size());
  const size_t slice_bytes = static_cast<size_t>(ShapeProduct(x.shape(), static_cast<size_t>(b + last), x.shape().size())) * esz;
  const int64_t per_batch = batches ? static_cast<int64_t>(off.size()) / batches : 0;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  for (size_t t = 0; t < off.size(); ++t) {
    const int64_t batch = per_batch ? static_cast<int64_t>(t) / per_batch : 0;
    std::memcpy(dst + t * slice_bytes, src + static_cast<size_t>(batch * batch_stride + off[t]) * esz, slice_bytes);
  }
}
ONEFLOW_KERNEL(GatherND, GatherNDKernel);

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction ParseReduction(const KernelContext& ctx) {
  const std::string& r = ctx.attrs().GetString("reduction");
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return Reduction::kNone;
}

template <typename T>
inline void Combine(T& d, T u, Reduction red) {
  if constexpr (kIsHalfType<T>) {
    float a = static_cast<float>(d), b = static_cast<float>(u);
    float r = red == Reduction::kAdd ? a + b : red == Reduction::kMul ? a * b : red == Reduction::kMax ? std::max(a, b)
                                                                              : red == Reduction::kMin ? std::min(a, b) : b;
    d = T(r);
  } else if constexpr (std::is_same_v<T, bool>) {
    d = red == Reduction::kAdd || red == Reduction::kMax ? (d || u) : red == Reduction::kNone ? u : (d && u);
  } else {
    switch (red) {
      case Reduction::kNone: d = u; break;
      case Reduction::kAdd: d = static_cast<T>(d + u); break;
      case Reduction::kMul: d = static_cast<T>(d * u); break;
      case Reduction::kMax: d = std::max(d, u); break;
      case Reduction::kMin: d = std::min(d, u); break;
    }
  }
}

void ScatterElementsKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  Tensor& y = ctx.output(0);
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  OF_CHECK(ind.shape() == upd.shape(), kInvalidArgument, ctx.node_desc(), ": indices shape ",
           ShapeToString(ind.shape()), " != updates shape ", ShapeToString(upd.shape()));
  CheckIndexShape(ctx, ind.shape(), x.shape(), axis);
  const std::vector<int64_t> idx = ReadIndices(ind, x.dim(axis), ctx.node_desc());
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
  const Reduction red = ParseReduction(ctx);
  DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = y.data<T>();
    const T* u = upd.data<T>();
    ForEachIndexed(ind.shape(), x.shape(), axis, [&](int64_t i, int64_t off, int64_t astride) {
      Combine<T>(d[off + idx[static_cast<size_t>(i)] * astride], u[i], red);
    });
  });
}
ONEFLOW_KERNEL(ScatterElements, ScatterElementsKernel);

void ScatterNDKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  Tensor& y = ctx.output(0);
  std::vector<int64_t> off = TupleOffsets(ctx, x, ind, 0);
  const int64_t last = ind.dim(ind.rank() - 1);
  const int64_t slice = ShapeProduct(x.shape(), static_cast<size_t>(last), x.shape().size());
  Shape want(ind.shape().begin(), ind.shape().end() - 1);
  want.insert(want.end(), x.shape().begin() + last, x.shape().end());
  OF_CHECK(upd.shape() == want, kInvalidArgument, ctx.node_desc(), ": updates shape ",
           ShapeToString(upd.shape()), ", expected ", ShapeToString(want));
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
  const Reduction red = ParseReduction(ctx);
  DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = y.data<T>();
    const T* u = upd.data<T>();
    for (size_t t = 0; t < off.size(); ++t)
      for (int64_t j = 0; j < slice; ++j) Combine<T>(d[off[t] + j], u[static_cast<int64_t>(t) * slice + j], red);
  });
}
ONEFLOW_KERNEL(ScatterND, ScatterNDKernel);

void OneHotKernel(KernelContext& ctx) {
  const Tensor& ind = ctx.input(0);
  const Tensor& values = ctx.input(2);
  Tensor& y = ctx.output(0);
  OF_CHECK(values.numel() == 2, kInvalidArgument, ctx.node_desc(), ": values must have 2 elements");
  const int64_t depth = ctx.input(1).GetAsInt64(0);
  const int64_t r = y.rank();
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), r);
  const int64_t outer = ShapeProduct(ind.shape(), 0, static_cast<size_t>(axis));
  const int64_t inner = ShapeProduct(ind.shape(), static_cast<size_t>(axis), ind.shape().size());
  const std::vector<int64_t> idx = ind.ToInt64Vector();
  const size_t esz = DTypeSize(y.dtype());
  const char* off = static_cast<const char*>(values.raw());
  const char* on = off + esz;
  char* dst = static_cast<char*>(y.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t d = 0; d < depth; ++d)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = idx[static_cast<size_t>(o * inner + i)];
        if (v < 0) v += depth;
        CopyElement(dst + static_cast<size_t>((o * depth + d) * inner + i) * esz, v == d ? on : off, esz);
      }
}
ONEFLOW_KERNEL(OneHot, OneHotKernel);

void NonZeroKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t nnz = y.dim(1);
  int64_t* p = y.data<int64_t>();
  if (x.rank() == 0) {  // [1, nnz]: the single element's index 0, when it is non-zero
    if (nnz) p[0] = 0;
    return;
  }
  const int64_t r = x.rank();
  std::vector<int64_t> pos(static_cast<size_t>(r), 0);
  DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = x.data<T>();
    int64_t k = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (CastToDouble<T>(v[i]) != 0.0) {
        OF_ASSERT(k < nnz);
        for (int64_t a = 0; a < r; ++a) p[a * nnz + k] = pos[static_cast<size_t>(a)];
        ++k;
      }
      for (int64_t a = r - 1; a >= 0; --a) {
        if (++pos[static_cast<size_t>(a)] < x.dim(a)) break;
        pos[static_cast<size_t>(a)] = 0;
      }
    }
    OF_ASSERT(k == nnz);
  });
}
ONEFLOW_KERNEL(NonZero, NonZeroKernel);

void CompressKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  Tensor& y = ctx.output(0);
  const bool* c = cond.data<bool>();
  const size_t esz = DTypeSize(x.dtype());
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (ctx.attrs().has("axis")) {
    const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
    outer = ShapeProduct(x.shape(), 0, static_cast<size_t>(axis));
    n = x.dim(axis);
    inner = ShapeProduct(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  }
  const int64_t limit = std::min(n, cond.numel());
  int64_t kept = 0;
  for (int64_t i = 0; i < limit; ++i) kept += c[i] ? 1 : 0;
  const size_t run = static_cast<size_t>(inner) * esz;
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  OF_ASSERT(y.numel() == outer * kept * inner);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t j = 0;
    for (int64_t i = 0; i < limit; ++i)
      if (c[i]) std::memcpy(dst + static_cast<size_t>(o * kept + j++) * run, src + static_cast<size_t>(o * n + i) * run, run);
  }
}
ONEFLOW_KERNEL(Compress, CompressKernel);

void ReverseSequenceKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t ba = NormalizeAxis(ctx.attrs().GetInt("batch_axis"), x.rank());
  const int64_t ta = NormalizeAxis(ctx.attrs().GetInt("time_axis"), x.rank());
  const int64_t B = x.dim(ba), T = x.dim(ta);
  std::vector<int64_t> lens = ReadRawIndices(ctx.input(1), ctx.node_desc());
  OF_CHECK(static_cast<int64_t>(lens.size()) == B, kInvalidArgument, ctx.node_desc(),
           ": sequence_lens has ", lens.size(), " entries for batch size ", B);
  const size_t run = static_cast<size_t>(ShapeProduct(x.shape(), 2, x.shape().size())) * DTypeSize(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = lens[static_cast<size_t>(b)];
    OF_CHECK(len >= 0 && len <= T, kRuntime, ctx.node_desc(), ": sequence length ", len,
             " is out of range [0, ", T, "]");
    for (int64_t t = 0; t < T; ++t) {
      const int64_t from = t < len ? len - 1 - t : t;
      auto at = [&](int64_t time) { return static_cast<size_t>(ta == 0 ? time * B + b : b * T + time) * run; };
      std::memcpy(dst + at(t), src + at(from), run);
    }
  }
}
ONEFLOW_KERNEL(ReverseSequence, ReverseSequenceKernel);

void UniqueKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool has_axis = ctx.attrs().has("axis");
  const int64_t axis = has_axis ? NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank()) : -1;
  UniqueResult r = ComputeUnique(x, axis, ctx.attrs().GetInt("sorted") != 0);
  Tensor& y = ctx.output(0);
  const size_t esz = DTypeSize(x.dtype());
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (has_axis) {
    outer = ShapeProduct(x.shape(), 0, static_cast<size_t>(axis));
    n = x.dim(axis);
    inner = ShapeProduct(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  }
  const size_t run = static_cast<size_t>(inner) * esz;
  const int64_t u = static_cast<int64_t>(r.first.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < u; ++k)
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(o * u + k) * run,
                  static_cast<const char*>(x.raw()) + static_cast<size_t>(o * n + r.first[static_cast<size_t>(k)]) * run, run);
  const std::vector<int64_t>* outs[3] = {&r.first, &r.inverse, &r.counts};
  for (size_t i = 1; i < 4; ++i)
    if (ctx.has_output(i) && !outs[i - 1]->empty())
      std::memcpy(ctx.output(i).raw(), outs[i - 1]->data(), outs[i - 1]->size() * sizeof(int64_t));
}
ONEFLOW_KERNEL(Unique, UniqueKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
