// Op family: tensor (continued) — schemas and shape inference for the index-driven ops: Gather*,
// Scatter*, OneHot, NonZero, Compress, ReverseSequence and Unique.
#include <algorithm>
#include <numeric>

#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/grad_rules.h"
#include "graph/ops/tensor_util.h"

namespace oneflow {

int64_t CountNonZero(const Tensor& x) {
  return DispatchAll(x.dtype(), [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    int64_t n = 0;
    for (int64_t i = 0; i < x.numel(); ++i) n += CastToDouble<T>(p[i]) != 0.0 ? 1 : 0;
    return n;
  });
}

UniqueResult ComputeUnique(const Tensor& x, int64_t axis, bool sorted) {
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (axis >= 0) {
    n = x.dim(axis);
    // An empty tensor has empty slices; the products around the axis could overflow for dims
    // beside a 0 (a constant may declare [2^40, 0, 2^40]), and are only bounded by numel otherwise.
    outer = x.numel() == 0 ? 0 : ShapeProduct(x.shape(), 0, static_cast<size_t>(axis));
    inner = x.numel() == 0 ? 0 : ShapeProduct(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  }
  // Slice i as doubles (element order: outer-major, then inner).
  std::vector<double> vals(static_cast<size_t>(x.numel()));
  DispatchAll(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data<T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j)
          vals[static_cast<size_t>((i * outer + o) * inner + j)] = CastToDouble<T>(p[(o * n + i) * inner + j]);
  });
  const size_t len = static_cast<size_t>(outer * inner);
  auto slice = [&](int64_t i) { return vals.begin() + static_cast<long>(static_cast<size_t>(i) * len); };
  auto less = [&](int64_t a, int64_t b) {
    return std::lexicographical_compare(slice(a), slice(a) + static_cast<long>(len), slice(b), slice(b) + static_cast<long>(len));
  };
  auto equal = [&](int64_t a, int64_t b) { return std::equal(slice(a), slice(a) + static_cast<long>(len), slice(b)); };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  // Groups of equal slices in sorted order; the first of each group is the first occurrence.
  std::vector<int64_t> group_of(static_cast<size_t>(n));
  std::vector<int64_t> group_first, group_count;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || !equal(order[k - 1], order[k])) {
      group_first.push_back(order[k]);
      group_count.push_back(0);
    }
    group_of[static_cast<size_t>(order[k])] = static_cast<int64_t>(group_first.size()) - 1;
    ++group_count.back();
  }
  const size_t u = group_first.size();
  std::vector<int64_t> pos(u);  // output position of each group
  if (sorted) {
    std::iota(pos.begin(), pos.end(), 0);
  } else {
    std::vector<int64_t> by_first(u);
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return group_first[static_cast<size_t>(a)] < group_first[static_cast<size_t>(b)]; });
    for (size_t k = 0; k < u; ++k) pos[static_cast<size_t>(by_first[k])] = static_cast<int64_t>(k);
  }
  UniqueResult r;
  r.first.resize(u);
  r.counts.resize(u);
  for (size_t g = 0; g < u; ++g) {
    r.first[static_cast<size_t>(pos[g])] = group_first[g];
    r.counts[static_cast<size_t>(pos[g])] = group_count[g];
  }
  r.inverse.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r.inverse[static_cast<size_t>(i)] = pos[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
  return r;
}

namespace {

void CheckIndexDType(const InferContext& ctx, size_t i) {
  DType t = ctx.input_dtype(i);
  if (t != DType::kInt64 && t != DType::kInt32) ctx.Error("input ", i, " must be int32 or int64, got ", DTypeName(t));
}

void InferGather(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& idx = ctx.input_type(1);
  CheckIndexDType(ctx, 1);
  if (!x.has_rank || !idx.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (x.rank() == 0) ctx.Error("data must have rank >= 1");
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  std::vector<Dim> out(x.dims.begin(), x.dims.begin() + axis);
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), x.dims.begin() + axis + 1, x.dims.end());
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferGatherElements(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& idx = ctx.input_type(1);
  CheckIndexDType(ctx, 1);
  if (x.has_rank) {
    if (x.rank() == 0) ctx.Error("data must have rank >= 1");
    NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
    if (idx.has_rank && idx.rank() != x.rank()) ctx.Error("indices rank ", idx.rank(), " != data rank ", x.rank());
  }
  ctx.set_output(0, idx.has_rank ? TensorType::Of(x.dtype, idx.dims) : TensorType::UnknownShape(x.dtype));
}

void InferGatherND(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const TensorType& idx = ctx.input_type(1);
  if (ctx.input_dtype(1) != DType::kInt64) ctx.Error("indices must be int64");
  const int64_t b = ctx.attrs().GetInt("batch_dims");
  if (!x.has_rank || !idx.has_rank || idx.rank() < 1 || !idx.dims.back().known()) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const int64_t q = idx.rank(), last = idx.dims.back().value;
  if (b < 0 || b >= std::min(q, x.rank())) ctx.Error("batch_dims ", b, " out of range");
  // last is a declared dim (any int64): compared without forming b + last.
  if (last < 1 || last > x.rank() - b) ctx.Error("indices last dim ", last, " too large for data rank ", x.rank());
  std::vector<Dim> out(idx.dims.begin(), idx.dims.end() - 1);
  out.insert(out.end(), x.dims.begin() + b + last, x.dims.end());
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void CheckReduction(const InferContext& ctx) {
  const std::string& red = ctx.attrs().GetString("reduction");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    Fail(ErrorCode::kUnsupported, ctx.node(), ": unsupported reduction '", red, "'");
}

void InferScatterElements(InferContext& ctx) {
  CheckIndexDType(ctx, 1);
  CheckReduction(ctx);
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.Error("updates dtype differs from data");
  const TensorType& x = ctx.input_type(0);
  if (x.has_rank && x.rank() == 0) ctx.Error("data must have rank >= 1");
  if (x.has_rank) NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  ctx.set_output(0, x);
}

void InferScatterND(InferContext& ctx) {
  if (ctx.input_dtype(1) != DType::kInt64) ctx.Error("indices must be int64");
  CheckReduction(ctx);
  if (ctx.input_dtype(2) != ctx.input_dtype(0)) ctx.Error("updates dtype differs from data");
  ctx.set_output(0, ctx.input_type(0));
}

void InferOneHot(InferContext& ctx) {
  const TensorType& idx = ctx.input_type(0);
  const TensorType& values = ctx.input_type(2);
  if (values.has_rank && !(values.rank() == 1 && (!values.dims[0].known() || values.dims[0].value == 2)))
    ctx.Error("values must be a 2-element 1-D tensor");
  if (!idx.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(values.dtype));
    return;
  }
  const int64_t r = idx.rank() + 1;
  int64_t axis = ctx.attrs().GetInt("axis");
  if (axis < -r || axis >= r) ctx.Error("axis ", axis, " is out of range for output rank ", r);
  if (axis < 0) axis += r;
  Dim depth = Dim::Unknown();
  if (const Tensor* d = ctx.input_value(1)) {
    if (d->numel() != 1) ctx.Error("depth must be a scalar");
    int64_t v = d->GetAsInt64(0);
    if (v < 1) ctx.Error("depth must be positive, got ", v);
    depth = Dim::Known(v);
  }
  std::vector<Dim> out = idx.dims;
  out.insert(out.begin() + axis, depth);
  ctx.set_output(0, TensorType::Of(values.dtype, out));
}

void InferNonZero(InferContext& ctx) {
  // A scalar behaves as a 1-element vector (numpy's nonzero on 0-d input), so rows = max(rank, 1).
  const TensorType& x = ctx.input_type(0);
  Dim rank = x.has_rank ? Dim::Known(std::max<int64_t>(x.rank(), 1)) : Dim::Unknown();
  Dim count = Dim::Unknown();
  if (const Tensor* v = ctx.input_value(0)) count = Dim::Known(CountNonZero(*v));
  ctx.set_output(0, TensorType::Of(DType::kInt64, {rank, count}));
}

void InferCompress(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (ctx.input_dtype(1) != DType::kBool) ctx.Error("condition must be bool");
  const Tensor* cond = ctx.input_value(1);
  const bool has_axis = ctx.attrs().has("axis");
  if (has_axis && x.has_rank && x.rank() == 0) ctx.Error("input must have rank >= 1 when axis is set");
  Dim count = Dim::Unknown();
  if (cond) {
    if (cond->rank() != 1) ctx.Error("condition must be 1-D");
    int64_t limit = cond->numel();
    if (x.fully_known()) {
      int64_t dim = has_axis ? x.dims[static_cast<size_t>(NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank()))].value
                             : NumElements(x.ToShape());
      limit = std::min(limit, dim);
    }
    const bool* c = cond->data<bool>();
    int64_t n = 0;
    for (int64_t i = 0; i < limit; ++i) n += c[i] ? 1 : 0;
    count = Dim::Known(n);
  }
  if (!has_axis) {
    ctx.set_output(0, TensorType::Of(x.dtype, {count}));
    return;
  }
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  std::vector<Dim> out = x.dims;
  out[static_cast<size_t>(NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank()))] = count;
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferReverseSequence(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (x.has_rank) {
    if (x.rank() < 2) ctx.Error("input must have rank >= 2");
    int64_t b = NormalizeAxis(ctx.attrs().GetInt("batch_axis"), x.rank());
    int64_t t = NormalizeAxis(ctx.attrs().GetInt("time_axis"), x.rank());
    if (b == t || b > 1 || t > 1) ctx.Error("batch_axis and time_axis must be 0 and 1 in some order");
  }
  ctx.set_output(0, x);
}

void InferUnique(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const bool has_axis = ctx.attrs().has("axis");
  int64_t axis = -1;
  if (has_axis && x.has_rank && x.rank() == 0) ctx.Error("input must have rank >= 1 when axis is set");
  if (has_axis && x.has_rank) axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  Dim u = Dim::Unknown(), n = Dim::Unknown();
  if (const Tensor* v = ctx.input_value(0)) {
    UniqueResult r = ComputeUnique(*v, axis, ctx.attrs().GetInt("sorted") != 0);
    u = Dim::Known(static_cast<int64_t>(r.first.size()));
    n = Dim::Known(static_cast<int64_t>(r.inverse.size()));
  } else if (x.fully_known()) {
    n = Dim::Known(has_axis ? x.dims[static_cast<size_t>(axis)].value : NumElements(x.ToShape()));
  }
  if (!has_axis) {
    ctx.set_output(0, TensorType::Of(x.dtype, {u}));
  } else if (x.has_rank) {
    std::vector<Dim> out = x.dims;
    out[static_cast<size_t>(axis)] = u;
    ctx.set_output(0, TensorType::Of(x.dtype, out));
  } else {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
  }
  ctx.set_output(1, TensorType::Of(DType::kInt64, {u}));
  ctx.set_output(2, TensorType::Of(DType::kInt64, {n}));
  ctx.set_output(3, TensorType::Of(DType::kInt64, {u}));
}

}  // namespace

void RegisterIndexOps(OpRegistry& r) {
  r.Register(OpSchema(op::kGather).Since(13).Input("data").Input("indices").Output("output").TakesStrings()
                 .Attr("axis", Attribute::Int(0)).Infer(InferGather).Grad(GradGather));
  r.Register(OpSchema(op::kGatherElements).Since(13).Input("data").Input("indices").Output("output")
                 .Attr("axis", Attribute::Int(0)).Infer(InferGatherElements).Grad(GradGatherElements));
  r.Register(OpSchema(op::kGatherND).Since(13).Input("data").Input("indices").Output("output")
                 .Attr("batch_dims", Attribute::Int(0)).Infer(InferGatherND)
                 .Grad(GradGatherND));
  r.Register(OpSchema(op::kScatterElements).Since(13).Input("data").Input("indices").Input("updates").Output("output")
                 .Attr("axis", Attribute::Int(0)).Attr("reduction", Attribute::String("none")).Infer(InferScatterElements));
  r.Register(OpSchema(op::kScatterND).Since(13).Input("data").Input("indices").Input("updates").Output("output")
                 .Attr("reduction", Attribute::String("none")).Infer(InferScatterND));
  r.Register(OpSchema(op::kOneHot).Since(13).Input("indices").ShapeInput("depth").Input("values").Output("output")
                 .Attr("axis", Attribute::Int(-1)).Infer(InferOneHot));
  r.Register(OpSchema(op::kNonZero).Since(13).Input("X").Output("Y").Infer(InferNonZero));
  r.Register(OpSchema(op::kCompress).Since(13).Input("input").Input("condition").Output("output")
                 .OptionalAttr("axis", AttrKind::kInt).Infer(InferCompress));
  r.Register(OpSchema(op::kReverseSequence).Since(13).Input("input").Input("sequence_lens").Output("Y")
                 .Attr("batch_axis", Attribute::Int(1)).Attr("time_axis", Attribute::Int(0)).Infer(InferReverseSequence));
  r.Register(OpSchema(op::kUnique).Since(13).Input("X").Output("Y").OptionalOutput("indices")
                 .OptionalOutput("inverse_indices").OptionalOutput("counts").OptionalAttr("axis", AttrKind::kInt)
                 .Attr("sorted", Attribute::Int(1)).Infer(InferUnique));
}

}  // namespace oneflow
