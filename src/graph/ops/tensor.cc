// Op family: tensor (schemas, attribute defaults, opset ranges, shape inference) for the shape and
// layout ops: Reshape .. Slice, Pad, Tile, Expand, Shape, Range, Constant and friends.
#include <algorithm>
#include <cmath>
#include <set>

#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/grad_rules.h"
#include "graph/ops/tensor_util.h"

namespace oneflow {

// ---- shared arithmetic (also used by the kernels) ----

std::vector<SliceAxis> ComputeSlice(const Shape& dims, const std::vector<int64_t>& starts,
                                    const std::vector<int64_t>& ends, const std::vector<int64_t>& axes_in,
                                    const std::vector<int64_t>& steps_in, const std::string& who) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  OF_REQUIRE(starts.size() == ends.size(), who, ": starts and ends must have the same length");
  std::vector<int64_t> axes = axes_in;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  OF_REQUIRE(axes.size() == starts.size(), who, ": axes and starts must have the same length");
  OF_REQUIRE(steps_in.empty() || steps_in.size() == starts.size(), who, ": steps and starts must have the same length");
  std::vector<SliceAxis> out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out[i] = {0, 1, dims[i]};
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    OF_REQUIRE(axes[i] >= -rank && axes[i] < rank, who, ": axis ", axes[i], " is out of range for rank ", rank);
    const size_t a = static_cast<size_t>(axes[i] < 0 ? axes[i] + rank : axes[i]);
    OF_REQUIRE(!seen[a], who, ": axis ", axes[i], " repeated");
    seen[a] = true;
    const int64_t d = dims[a];
    const int64_t step = steps_in.empty() ? 1 : steps_in[i];
    OF_REQUIRE(step != 0, who, ": slice step cannot be 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += d;
    if (e < 0) e += d;
    // ceil(length / |step|) written as 1 + (length - 1) / |step|: steps come from the model and
    // may be INT64_MAX or INT64_MIN, where adding |step| - 1 or negating overflows.
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      count = e > s ? 1 + (e - s - 1) / step : 0;
    } else if (d == 0) {
      count = 0;  // clamping to [0, d - 1] below would be empty, and would let one element through
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      count = s > e ? 1 - (s - e - 1) / step : 0;  // step < 0: the quotient is -floor(./|step|)
    }
    out[a] = {count > 0 ? s : 0, step, count};
  }
  return out;
}

std::vector<int64_t> EvenSplitSizes(int64_t dim, int64_t n) {
  OF_REQUIRE(n > 0, "Split: the number of outputs must be positive");
  const int64_t chunk = dim / n + (dim % n != 0 ? 1 : 0);  // ceil; dim + n - 1 could overflow
  std::vector<int64_t> sizes;
  int64_t left = dim;
  for (int64_t i = 0; i < n; ++i) {
    int64_t s = std::min(chunk, left);
    sizes.push_back(s);
    left -= s;
  }
  return sizes;
}

std::vector<int64_t> ExpandPads(int64_t rank, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes,
                                const std::string& who) {
  std::vector<int64_t> out(static_cast<size_t>(2 * rank), 0);
  if (!axes) {
    OF_REQUIRE(static_cast<int64_t>(pads.size()) == 2 * rank, who, ": pads must have 2*rank = ", 2 * rank,
               " values, got ", pads.size());
    return pads;
  }
  const size_t k = axes->size();
  OF_REQUIRE(pads.size() == 2 * k, who, ": pads must have 2*len(axes) = ", 2 * k, " values, got ", pads.size());
  for (size_t i = 0; i < k; ++i) {
    int64_t a = (*axes)[i];
    OF_REQUIRE(a >= -rank && a < rank, who, ": axis ", a, " is out of range for rank ", rank);
    if (a < 0) a += rank;
    out[static_cast<size_t>(a)] = pads[i];
    out[static_cast<size_t>(a + rank)] = pads[i + k];
  }
  return out;
}

namespace {

// Values of an int input when known (constants statically; always at run time).
bool InputInts(const InferContext& ctx, size_t i, std::vector<int64_t>* out) {
  const Tensor* v = ctx.has_input(i) ? ctx.input_value(i) : nullptr;
  if (!v) return false;
  *out = v->ToInt64Vector();
  return true;
}

// Length of a 1-D input when statically known, else -1.
int64_t Input1DLength(const InferContext& ctx, size_t i) {
  const TensorType& t = ctx.input_type(i);
  if (!t.has_rank || t.rank() != 1 || !t.dims[0].known()) return -1;
  return t.dims[0].value;
}

std::vector<Dim> UnknownDims(int64_t n) { return std::vector<Dim>(static_cast<size_t>(n), Dim::Unknown()); }

Dim ProductDim(const InferContext& ctx, const std::vector<Dim>& dims, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i) {
    if (!dims[i].known()) return Dim::Unknown();
    p = CheckedMul(p, dims[i].value, ctx.node(), "the flattened size");  // declared dims are untrusted
  }
  return Dim::Known(p);
}

void InferReshape(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  std::vector<int64_t> shape;
  if (!InputInts(ctx, 1, &shape)) {
    int64_t n = Input1DLength(ctx, 1);
    ctx.set_output(0, n >= 0 ? TensorType::Of(x.dtype, UnknownDims(n)) : TensorType::UnknownShape(x.dtype));
    return;
  }
  const bool allowzero = ctx.attrs().GetInt("allowzero") != 0;
  std::vector<Dim> out;
  int neg = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[i];
    if (s == 0 && !allowzero) {
      if (!x.has_rank) out.push_back(Dim::Unknown());
      else if (static_cast<int64_t>(i) < x.rank()) out.push_back(x.dims[i]);
      else ctx.Error("shape[", i, "] = 0 copies a dimension the input (rank ", x.rank(), ") does not have");
    } else if (s == -1) {
      if (neg >= 0) ctx.Error("shape has more than one -1");
      neg = static_cast<int>(i);
      out.push_back(Dim::Unknown());
    } else if (s < 0) {
      ctx.Error("invalid shape value ", s);
    } else {
      out.push_back(Dim::Known(s));
    }
  }
  if (allowzero && neg >= 0 && std::count(shape.begin(), shape.end(), 0) > 0)
    ctx.Error("allowzero=1 forbids a 0 together with -1 in the shape");
  if (x.fully_known()) {
    const int64_t total = NumElements(x.ToShape());
    int64_t known = 1;
    bool all_known = true;
    for (size_t i = 0; i < out.size(); ++i)
      if (static_cast<int>(i) != neg) {
        if (!out[i].known()) all_known = false;
        else known = CheckedMul(known, out[i].value, ctx.node(), "the product of the target shape");
      }
    if (all_known) {
      if (neg >= 0) {
        if (known == 0 || total % known != 0)
          ctx.Error("cannot reshape ", x.ToString(), " to ", ShapeToString(shape));
        out[static_cast<size_t>(neg)] = Dim::Known(total / known);
      } else if (known != total) {
        ctx.Error("cannot reshape ", x.ToString(), " (", total, " elements) to ", ShapeToString(shape));
      }
    }
  }
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferFlatten(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::Of(x.dtype, UnknownDims(2)));
    return;
  }
  int64_t axis = ctx.attrs().GetInt("axis");
  const int64_t r = x.rank();
  if (axis < -r || axis > r) ctx.Error("axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  ctx.set_output(0, TensorType::Of(x.dtype, {ProductDim(ctx, x.dims, 0, static_cast<size_t>(axis)),
                                             ProductDim(ctx, x.dims, static_cast<size_t>(axis), x.dims.size())}));
}

void InferSqueeze(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  std::vector<int64_t> axes;
  const bool has_axes = ctx.has_input(1);
  if ((has_axes && !InputInts(ctx, 1, &axes)) || !x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const int64_t r = x.rank();
  std::vector<bool> drop(static_cast<size_t>(r), false);
  if (has_axes) {
    for (int64_t a : axes) {
      if (a < -r || a >= r) ctx.Error("axis ", a, " is out of range for rank ", r);
      size_t k = static_cast<size_t>(a < 0 ? a + r : a);
      if (x.dims[k].known() && x.dims[k].value != 1) ctx.Error("cannot squeeze axis ", a, " of size ", x.dims[k].value);
      drop[k] = true;
    }
  } else {
    for (size_t k = 0; k < drop.size(); ++k) {
      if (!x.dims[k].known()) {
        ctx.set_output(0, TensorType::UnknownShape(x.dtype));
        return;
      }
      drop[k] = x.dims[k].value == 1;
    }
  }
  std::vector<Dim> out;
  for (size_t k = 0; k < drop.size(); ++k)
    if (!drop[k]) out.push_back(x.dims[k]);
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferUnsqueeze(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  std::vector<int64_t> axes;
  if (!InputInts(ctx, 1, &axes) || !x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const int64_t r = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> ins(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    if (a < -r || a >= r) ctx.Error("axis ", a, " is out of range for output rank ", r);
    size_t k = static_cast<size_t>(a < 0 ? a + r : a);
    if (ins[k]) ctx.Error("axis ", a, " repeated");
    ins[k] = true;
  }
  std::vector<Dim> out;
  size_t j = 0;
  for (size_t k = 0; k < ins.size(); ++k) out.push_back(ins[k] ? Dim::Known(1) : x.dims[j++]);
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferTranspose(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const int64_t r = x.rank();
  std::vector<int64_t> perm;
  if (ctx.attrs().has("perm")) perm = ctx.attrs().GetInts("perm");
  else
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r) ctx.Error("perm has ", perm.size(), " entries for rank ", r);
  std::vector<bool> seen(static_cast<size_t>(r), false);
  std::vector<Dim> out;
  for (int64_t p : perm) {
    if (p < -r || p >= r) ctx.Error("perm value ", p, " is out of range for rank ", r);
    size_t k = static_cast<size_t>(p < 0 ? p + r : p);
    if (seen[k]) ctx.Error("perm is not a permutation");
    seen[k] = true;
    out.push_back(x.dims[k]);
  }
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferConcat(InferContext& ctx) {
  CheckSameDType(ctx);
  const DType dt = ctx.input_dtype(0);
  int64_t rank = -1;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType& t = ctx.input_type(i);
    if (!t.has_rank) continue;
    if (rank >= 0 && t.rank() != rank) ctx.Error("inputs have different ranks ", rank, " and ", t.rank());
    rank = t.rank();
  }
  if (rank < 0) {
    ctx.set_output(0, TensorType::UnknownShape(dt));
    return;
  }
  if (rank == 0) ctx.Error("cannot concatenate scalars");
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), rank);
  std::vector<Dim> out = UnknownDims(rank);
  int64_t sum = 0;
  bool sum_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType& t = ctx.input_type(i);
    if (!t.has_rank) {
      sum_known = false;
      continue;
    }
    for (size_t k = 0; k < static_cast<size_t>(rank); ++k) {
      if (static_cast<int64_t>(k) == axis) continue;
      const Dim& d = t.dims[k];
      if (d.known() && out[k].known() && d.value != out[k].value)
        ctx.Error("input ", i, " has dim ", k, " = ", d.value, ", expected ", out[k].value);
      if (!out[k].known() && (d.known() || out[k].symbol.empty())) out[k] = d;
    }
    if (t.dims[static_cast<size_t>(axis)].known())
      sum = CheckedAdd(sum, t.dims[static_cast<size_t>(axis)].value, ctx.node(), "the concatenated size");
    else sum_known = false;
  }
  out[static_cast<size_t>(axis)] = sum_known ? Dim::Known(sum) : Dim::Unknown();
  ctx.set_output(0, TensorType::Of(dt, out));
}

void InferSplit(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const size_t n = ctx.num_outputs();
  if (ctx.attrs().has("num_outputs") && ctx.attrs().GetInt("num_outputs") != static_cast<int64_t>(n))
    ctx.Error("num_outputs = ", ctx.attrs().GetInt("num_outputs"), " but the node has ", n, " outputs");
  if (ctx.has_input(1) && ctx.attrs().has("num_outputs")) ctx.Error("split input and num_outputs are exclusive");
  if (!x.has_rank) {
    for (size_t i = 0; i < n; ++i) ctx.set_output(i, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (x.rank() == 0) ctx.Error("cannot split a scalar");
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  const Dim& d = x.dims[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes;
  bool known = false;
  if (ctx.has_input(1)) {
    if (InputInts(ctx, 1, &sizes)) {
      known = true;
      if (sizes.size() != n) ctx.Error("split has ", sizes.size(), " entries for ", n, " outputs");
      int64_t sum = 0;
      for (int64_t s : sizes) {
        if (s < 0) ctx.Error("negative split size ", s);
        sum = CheckedAdd(sum, s, ctx.node(), "the sum of the split sizes");
      }
      if (d.known() && sum != d.value) ctx.Error("split sizes sum to ", sum, ", but the axis has size ", d.value);
    }
  } else if (d.known()) {
    if (!ctx.attrs().has("num_outputs") && d.value % static_cast<int64_t>(n) != 0 && ctx.opset() < 18)
      ctx.Error("axis of size ", d.value, " cannot be split evenly into ", n, " outputs");
    sizes = EvenSplitSizes(d.value, static_cast<int64_t>(n));
    known = true;
  }
  for (size_t i = 0; i < n; ++i) {
    TensorType t = x;
    t.dims[static_cast<size_t>(axis)] = known ? Dim::Known(sizes[i]) : Dim::Unknown();
    ctx.set_output(i, t);
  }
}

void InferSlice(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  std::vector<int64_t> starts, ends, axes, steps;
  bool have = InputInts(ctx, 1, &starts) && InputInts(ctx, 2, &ends);
  bool have_axes = !ctx.has_input(3) || InputInts(ctx, 3, &axes);
  bool have_steps = !ctx.has_input(4) || InputInts(ctx, 4, &steps);
  const int64_t r = x.rank();
  std::vector<Dim> out = x.dims;
  if (!have || !have_axes || !have_steps) {
    if (have_axes && ctx.has_input(3)) {
      for (int64_t a : axes) out[static_cast<size_t>(NormalizeAxis(a, r))] = Dim::Unknown();
    } else if (have_axes && have) {
      for (size_t i = 0; i < starts.size() && i < out.size(); ++i) out[i] = Dim::Unknown();
    } else {
      out = UnknownDims(r);
    }
    ctx.set_output(0, TensorType::Of(x.dtype, out));
    return;
  }
  // Only the sliced axes need known sizes; compute with placeholders for the others.
  std::vector<int64_t> full_axes = axes;
  if (full_axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) full_axes.push_back(static_cast<int64_t>(i));
  Shape dims(static_cast<size_t>(r), 0);
  std::vector<bool> sliced(static_cast<size_t>(r), false);
  for (int64_t a : full_axes) {
    if (a < -r || a >= r) ctx.Error("axis ", a, " is out of range for rank ", r);
    sliced[static_cast<size_t>(a < 0 ? a + r : a)] = true;
  }
  for (size_t k = 0; k < dims.size(); ++k)
    if (x.dims[k].known()) dims[k] = x.dims[k].value;
  std::vector<SliceAxis> sl;
  try {
    sl = ComputeSlice(dims, starts, ends, axes, steps, op::kSlice);
  } catch (const oneflow::Error& e) {
    ctx.Error(e.what());
  }
  for (size_t k = 0; k < out.size(); ++k)
    if (sliced[k]) out[k] = x.dims[k].known() ? Dim::Known(sl[k].count) : Dim::Unknown();
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferExpand(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  std::vector<int64_t> shape;
  if (!InputInts(ctx, 1, &shape)) {
    int64_t n = Input1DLength(ctx, 1);
    if (n >= 0 && x.has_rank) ctx.set_output(0, TensorType::Of(x.dtype, UnknownDims(std::max(n, x.rank()))));
    else ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  std::vector<Dim> sd;
  for (int64_t s : shape) {
    if (s < 0) ctx.Error("invalid shape value ", s);
    sd.push_back(Dim::Known(s));
  }
  ctx.set_output(0, TensorType::Of(x.dtype, BroadcastDims(x.dims, sd, ctx)));
}

void InferTile(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  std::vector<int64_t> reps;
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (!InputInts(ctx, 1, &reps)) {
    ctx.set_output(0, TensorType::Of(x.dtype, UnknownDims(x.rank())));
    return;
  }
  if (static_cast<int64_t>(reps.size()) != x.rank()) ctx.Error("repeats has ", reps.size(), " values for rank ", x.rank());
  std::vector<Dim> out;
  for (size_t k = 0; k < reps.size(); ++k) {
    if (reps[k] < 0) ctx.Error("negative repeat ", reps[k]);
    out.push_back(x.dims[k].known() ? Dim::Known(CheckedMul(x.dims[k].value, reps[k], ctx.node(), "a tiled dim"))
                                    : (reps[k] == 1 ? x.dims[k] : Dim::Unknown()));
  }
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferPad(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const std::string& mode = ctx.attrs().GetString("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    Fail(ErrorCode::kUnsupported, ctx.node(), ": unsupported pad mode '", mode, "'");
  if (mode == "wrap" && ctx.opset() < 19) ctx.Error("mode 'wrap' needs opset 19");
  if (ctx.has_input(2) && ctx.input_dtype(2) != x.dtype) ctx.Error("constant_value dtype differs from data");
  std::vector<int64_t> pads, axes;
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const bool has_axes = ctx.has_input(3);
  if (!InputInts(ctx, 1, &pads) || (has_axes && !InputInts(ctx, 3, &axes))) {
    ctx.set_output(0, TensorType::Of(x.dtype, UnknownDims(x.rank())));
    return;
  }
  std::vector<int64_t> p;
  try {
    p = ExpandPads(x.rank(), pads, has_axes ? &axes : nullptr, op::kPad);
  } catch (const oneflow::Error& e) {
    ctx.Error(e.what());
  }
  std::vector<Dim> out;
  const size_t r = x.dims.size();
  for (size_t k = 0; k < r; ++k) {
    if (!x.dims[k].known()) {
      out.push_back(p[k] == 0 && p[k + r] == 0 ? x.dims[k] : Dim::Unknown());
      continue;
    }
    const int64_t d = CheckedAdd(CheckedAdd(x.dims[k].value, p[k], ctx.node(), "a padded dim"), p[k + r], ctx.node(),
                                 "a padded dim");
    if (d < 0) ctx.Error("pads make dim ", k, " negative");
    if (mode != "constant" && x.dims[k].value == 0 && d > 0) ctx.Error("cannot ", mode, "-pad an empty axis");
    out.push_back(Dim::Known(d));
  }
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

void InferShape(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::Of(DType::kInt64, UnknownDims(1)));
    return;
  }
  const int64_t r = x.rank();
  int64_t start = ctx.attrs().GetInt("start", 0), end = ctx.attrs().GetInt("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  ctx.set_output(0, TensorType::Of(DType::kInt64, Shape{std::max<int64_t>(0, end - start)}));
}

void InferSize(InferContext& ctx) { ctx.set_output(0, TensorType::Of(DType::kInt64, Shape{})); }

void InferRange(InferContext& ctx) {
  CheckSameDType(ctx);
  const DType dt = ctx.input_dtype(0);
  const Tensor* s = ctx.input_value(0);
  const Tensor* l = ctx.input_value(1);
  const Tensor* d = ctx.input_value(2);
  if (!s || !l || !d) {
    ctx.set_output(0, TensorType::Of(dt, UnknownDims(1)));
    return;
  }
  if (s->numel() != 1 || l->numel() != 1 || d->numel() != 1) ctx.Error("start, limit and delta must be scalars");
  double start = s->GetAsDouble(0), limit = l->GetAsDouble(0), delta = d->GetAsDouble(0);
  if (delta == 0) ctx.Error("delta cannot be 0");
  double n = std::ceil((limit - start) / delta);
  if (!(n >= 0)) n = 0;
  if (n > 1e15) ctx.Error("range too large");
  ctx.set_output(0, TensorType::Of(dt, Shape{static_cast<int64_t>(n)}));
}

void InferConstantOfShape(InferContext& ctx) {
  DType dt = DType::kFloat32;
  if (ctx.attrs().has("value")) {
    const Tensor& v = ctx.attrs().GetTensor("value");
    if (v.numel() != 1) ctx.Error("value must hold exactly one element");
    dt = v.dtype();
  }
  std::vector<int64_t> shape;
  if (!InputInts(ctx, 0, &shape)) {
    int64_t n = Input1DLength(ctx, 0);
    ctx.set_output(0, n >= 0 ? TensorType::Of(dt, UnknownDims(n)) : TensorType::UnknownShape(dt));
    return;
  }
  for (int64_t s : shape)
    if (s < 0) ctx.Error("negative dimension ", s);
  ctx.set_output(0, TensorType::Of(dt, shape));
}

void InferConstant(InferContext& ctx) {
  const AttrMap& a = ctx.attrs();
  int count = 0;
  for (const char* n : {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                        "value_strings", "sparse_value"})
    count += a.has(n) ? 1 : 0;
  if (count != 1) ctx.Error("exactly one value attribute must be set, got ", count);
  if (a.has("sparse_value")) Fail(ErrorCode::kUnsupported, ctx.node(), ": sparse constants are not supported");
  if (a.has("value")) {
    const Tensor& t = a.GetTensor("value");
    ctx.set_output(0, TensorType::Of(t.dtype(), t.shape()));
  } else if (a.has("value_float")) {
    ctx.set_output(0, TensorType::Of(DType::kFloat32, Shape{}));
  } else if (a.has("value_floats")) {
    ctx.set_output(0, TensorType::Of(DType::kFloat32, Shape{static_cast<int64_t>(a.GetFloats("value_floats").size())}));
  } else if (a.has("value_int")) {
    ctx.set_output(0, TensorType::Of(DType::kInt64, Shape{}));
  } else if (a.has("value_string")) {
    ctx.set_output(0, TensorType::Of(DType::kString, Shape{}));
  } else if (a.has("value_strings")) {
    ctx.set_output(0, TensorType::Of(DType::kString, Shape{static_cast<int64_t>(a.GetStrings("value_strings").size())}));
  } else {
    ctx.set_output(0, TensorType::Of(DType::kInt64, Shape{static_cast<int64_t>(a.GetInts("value_ints").size())}));
  }
}

void InferEyeLike(InferContext& ctx) {
  TensorType t = ctx.input_type(0);
  if (t.has_rank && t.rank() != 2) ctx.Error("input must be 2-D, got ", t.ToString());
  if (ctx.attrs().has("dtype")) {
    int64_t code = ctx.attrs().GetInt("dtype");
    if (!IsKnownDType(static_cast<int32_t>(code)) || code == static_cast<int64_t>(DType::kString))
      Fail(ErrorCode::kUnsupported, ctx.node(), ": unsupported dtype ", code);
    t.dtype = static_cast<DType>(code);
  }
  if (!t.has_rank) t = TensorType::Of(t.dtype, UnknownDims(2));
  ctx.set_output(0, t);
}

void InferTrilu(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (x.has_rank && x.rank() < 2) ctx.Error("input must have rank >= 2, got ", x.ToString());
  ctx.set_output(0, x);
}

// DepthToSpace (to_space) and SpaceToDepth on [N, C, H, W]: C shrinks by blocksize^2 while H and W
// grow by blocksize, or the reverse.
void InferDepthSpace(InferContext& ctx, bool to_space) {
  const TensorType& x = ctx.input_type(0);
  const int64_t b = ctx.attrs().GetInt("blocksize");
  // Bounded so that blocksize^2 (here and in the kernels) cannot overflow.
  if (b <= 0 || b > kMaxWindowAttr) ctx.Error("blocksize must be in [1, 2^31], got ", b);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::Of(x.dtype, UnknownDims(4)));
    return;
  }
  if (x.rank() != 4) ctx.Error("input must be 4-D, got ", x.ToString());
  const std::string& mode = ctx.attrs().GetString("mode");
  if (mode != "DCR" && mode != "CRD") ctx.Error("unknown mode '", mode, "'");
  std::vector<Dim> o = x.dims;
  if (to_space) {
    auto scale = [&](const Dim& d, int64_t m) {
      return d.known() ? Dim::Known(CheckedMul(d.value, m, ctx.node(), "a spatial dim times blocksize")) : Dim::Unknown();
    };
    if (o[1].known() && o[1].value % (b * b) != 0) ctx.Error("channels ", o[1].value, " not divisible by blocksize^2");
    o[1] = o[1].known() ? Dim::Known(o[1].value / (b * b)) : Dim::Unknown();
    o[2] = scale(o[2], b);
    o[3] = scale(o[3], b);
  } else {
    for (size_t k = 2; k < 4; ++k) {
      if (o[k].known() && o[k].value % b != 0) ctx.Error("spatial dim ", o[k].value, " not divisible by blocksize");
      o[k] = o[k].known() ? Dim::Known(o[k].value / b) : Dim::Unknown();
    }
    o[1] = o[1].known() ? Dim::Known(CheckedMul(o[1].value, b * b, ctx.node(), "channels times blocksize^2"))
                        : Dim::Unknown();
  }
  ctx.set_output(0, TensorType::Of(x.dtype, o));
}
void InferDepthToSpace(InferContext& ctx) { InferDepthSpace(ctx, true); }
void InferSpaceToDepth(InferContext& ctx) { InferDepthSpace(ctx, false); }

void InferCenterCropPad(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  std::vector<int64_t> shape;
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const int64_t r = x.rank();
  std::vector<int64_t> axes = ctx.attrs().GetInts("axes", {});
  if (axes.empty())
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  std::vector<Dim> out = x.dims;
  const bool known = InputInts(ctx, 1, &shape);
  if (known && shape.size() != axes.size()) ctx.Error("shape has ", shape.size(), " values for ", axes.size(), " axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = static_cast<size_t>(NormalizeAxis(axes[i], r));
    if (known && shape[i] < 0) ctx.Error("negative target size ", shape[i]);
    out[a] = known ? Dim::Known(shape[i]) : Dim::Unknown();
  }
  ctx.set_output(0, TensorType::Of(x.dtype, out));
}

}  // namespace

void RegisterTensorOps(OpRegistry& r) {
  r.Register(OpSchema(op::kReshape).Since(13).Input("data").ShapeInput("shape").Output("reshaped")
                 .Attr("allowzero", Attribute::Int(0)).Precision(PrecisionClass::kFollow).View().TakesStrings().Infer(InferReshape).Grad(GradReshapeLike));
  r.Register(OpSchema(op::kFlatten).Since(13).Input("input").Output("output").Precision(PrecisionClass::kFollow).View().TakesStrings()
                 .Attr("axis", Attribute::Int(1)).Infer(InferFlatten).Grad(GradReshapeLike));
  r.Register(OpSchema(op::kSqueeze).Since(13).Input("data").OptionalShapeInput("axes").Output("squeezed").View().TakesStrings().Infer(InferSqueeze)
                 .Grad(GradReshapeLike));
  r.Register(OpSchema(op::kUnsqueeze).Since(13).Input("data").ShapeInput("axes").Output("expanded").View().TakesStrings().Infer(InferUnsqueeze)
                 .Grad(GradReshapeLike));
  r.Register(OpSchema(op::kTranspose).Since(13).Input("data").Output("transposed").Precision(PrecisionClass::kFollow)
                 .OptionalAttr("perm", AttrKind::kInts).Infer(InferTranspose).Grad(GradTranspose));
  r.Register(OpSchema(op::kConcat).Since(13).VariadicInput("inputs").Output("concat_result")
                 .RequiredAttr("axis", AttrKind::kInt).Infer(InferConcat).Grad(GradConcat));
  r.Register(OpSchema(op::kSplit).Since(13).Input("input").OptionalShapeInput("split").VariadicOutput("outputs")
                 .Attr("axis", Attribute::Int(0)).OptionalAttr("num_outputs", AttrKind::kInt).Infer(InferSplit).Grad(GradSplit));
  r.Register(OpSchema(op::kSlice).Since(13).Input("data").ShapeInput("starts").ShapeInput("ends").OptionalShapeInput("axes")
                 .OptionalShapeInput("steps").Output("output").Infer(InferSlice).Grad(GradSlice));
  r.Register(OpSchema(op::kExpand).Since(13).Input("input").ShapeInput("shape").Output("output").Infer(InferExpand).Grad(GradExpand));
  r.Register(OpSchema(op::kTile).Since(13).Input("input").ShapeInput("repeats").Output("output").Infer(InferTile).Grad(GradTile));
  r.Register(OpSchema(op::kPad).Since(13).Input("data").ShapeInput("pads").OptionalInput("constant_value")
                 .OptionalShapeInput("axes").Output("output").Attr("mode", Attribute::String("constant")).Infer(InferPad)
                 .Grad(GradPad));
  r.Register(OpSchema(op::kShape).Since(13).TypeOnlyInput("data").Output("shape").OptionalAttr("start", AttrKind::kInt)
                 .OptionalAttr("end", AttrKind::kInt).Infer(InferShape));
  r.Register(OpSchema(op::kSize).Since(13).TypeOnlyInput("data").Output("size").Infer(InferSize));
  r.Register(OpSchema(op::kRange).Since(13).ShapeInput("start").ShapeInput("limit").ShapeInput("delta").Output("output").Infer(InferRange));
  r.Register(OpSchema(op::kConstantOfShape).Since(13).ShapeInput("input").Output("output")
                 .OptionalAttr("value", AttrKind::kTensor).Infer(InferConstantOfShape));
  r.Register(OpSchema(op::kConstant).Since(13).Output("output").OptionalAttr("value", AttrKind::kTensor)
                 .OptionalAttr("value_float", AttrKind::kFloat).OptionalAttr("value_floats", AttrKind::kFloats)
                 .OptionalAttr("value_int", AttrKind::kInt).OptionalAttr("value_ints", AttrKind::kInts)
                 .OptionalAttr("value_string", AttrKind::kString).OptionalAttr("value_strings", AttrKind::kStrings)
                 .TakesStrings().Infer(InferConstant));
  r.Register(OpSchema(op::kEyeLike).Since(13).Input("input").Output("output").Attr("k", Attribute::Int(0))
                 .OptionalAttr("dtype", AttrKind::kInt).Infer(InferEyeLike));
  r.Register(OpSchema(op::kTrilu).Since(14).Input("input").OptionalInput("k").Output("output")
                 .Attr("upper", Attribute::Int(1)).Infer(InferTrilu).Grad(GradTrilu));
  r.Register(OpSchema(op::kDepthToSpace).Since(13).Input("input").Output("output")
                 .RequiredAttr("blocksize", AttrKind::kInt).Attr("mode", Attribute::String("DCR")).Infer(InferDepthToSpace));
  // SpaceToDepth gained `mode` in opset 28; earlier models never set it, so the DCR default holds.
  r.Register(OpSchema(op::kSpaceToDepth).Since(13).Input("input").Output("output")
                 .RequiredAttr("blocksize", AttrKind::kInt).Attr("mode", Attribute::String("DCR")).Infer(InferSpaceToDepth));
  r.Register(OpSchema(op::kCenterCropPad).Since(18).Input("input_data").ShapeInput("shape").Output("output")
                 .OptionalAttr("axes", AttrKind::kInts).Infer(InferCenterCropPad));
  RegisterIndexOps(r);
}

}  // namespace oneflow
