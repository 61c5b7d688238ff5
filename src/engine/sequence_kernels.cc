// CPU kernels of the sequence and optional ops (graph/ops/sequence.cc). A sequence's element list is
// shared and never edited (base/tensor.h), so Erase and Insert build a new list around the old
// elements; a tensor entering a sequence is copied, since its bytes may be an arena slot the
// executor hands to another value once the tensor is dead, and an element leaving one (SequenceAt)
// is copied too, so no two values a caller receives share bytes.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/axis_copy.h"
#include "engine/subgraph_runner.h"
#include "graph/control_flow.h"
#include "graph/op_schema.h"
#include "kernels/kernel.h"

namespace oneflow {
namespace {

const Tensor& SequenceInput(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  OF_CHECK(t.is_sequence(), kInvalidArgument, ctx.node_desc(), ": input ", i, " is ", DescribeValue(t),
           ", not a sequence");
  return t;
}

const Tensor& TensorInput(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  OF_CHECK(t.is_tensor(), kInvalidArgument, ctx.node_desc(), ": input ", i, " is ", DescribeValue(t),
           ", not a tensor");
  return t;
}

// A position input, checked against [-n, n - 1] (or [-n, n] where inserting at the end is allowed)
// and made non-negative.
size_t ReadPosition(const KernelContext& ctx, size_t i, size_t n, bool end_allowed) {
  const Tensor& p = TensorInput(ctx, i);
  OF_CHECK((p.dtype() == DType::kInt32 || p.dtype() == DType::kInt64) && p.numel() == 1, kInvalidArgument,
           ctx.node_desc(), ": position must be one int32 or int64, got ", DescribeValue(p));
  const int64_t pos = p.GetAsInt64(0);
  const int64_t len = static_cast<int64_t>(n);
  const int64_t hi = end_allowed ? len : len - 1;
  OF_CHECK(pos >= -len && pos <= hi, kInvalidArgument, ctx.node_desc(), ": position ", pos,
           " is out of range for a sequence of ", n, " (allowed: [", -len, ", ", hi, "])");
  return static_cast<size_t>(pos < 0 ? pos + len : pos);
}

void SequenceEmpty(KernelContext& ctx) {
  ctx.output(0) = Tensor::Sequence(static_cast<DType>(ctx.attrs().GetInt("dtype")), {});
}
ONEFLOW_KERNEL(SequenceEmpty, SequenceEmpty);

void SequenceConstruct(KernelContext& ctx) {
  std::vector<Tensor> elements;
  const DType dtype = TensorInput(ctx, 0).dtype();
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = TensorInput(ctx, i);
    OF_CHECK(t.dtype() == dtype, kInvalidArgument, ctx.node_desc(), ": input ", i, " is ", DescribeValue(t),
             " but input 0 is ", DTypeName(dtype), "; a sequence holds one dtype");
    elements.push_back(t.Clone());
  }
  ctx.output(0) = Tensor::Sequence(dtype, std::move(elements));
}
ONEFLOW_KERNEL(SequenceConstruct, SequenceConstruct);

void SequenceInsert(KernelContext& ctx) {
  const Tensor& seq = SequenceInput(ctx, 0);
  const Tensor& t = TensorInput(ctx, 1);
  OF_CHECK(t.dtype() == seq.dtype(), kInvalidArgument, ctx.node_desc(), ": cannot insert ", DescribeValue(t),
           " into a sequence of ", DTypeName(seq.dtype()));
  std::vector<Tensor> elements = seq.elements();
  const size_t at = ctx.has_input(2) ? ReadPosition(ctx, 2, elements.size(), true) : elements.size();
  elements.insert(elements.begin() + static_cast<long>(at), t.Clone());
  ctx.output(0) = Tensor::Sequence(seq.dtype(), std::move(elements));
}
ONEFLOW_KERNEL(SequenceInsert, SequenceInsert);

void SequenceAt(KernelContext& ctx) {
  const Tensor& seq = SequenceInput(ctx, 0);
  ctx.output(0) = seq.elements()[ReadPosition(ctx, 1, seq.elements().size(), false)].Clone();
}
ONEFLOW_KERNEL(SequenceAt, SequenceAt);

void SequenceErase(KernelContext& ctx) {
  const Tensor& seq = SequenceInput(ctx, 0);
  std::vector<Tensor> elements = seq.elements();
  OF_CHECK(!elements.empty(), kInvalidArgument, ctx.node_desc(), ": cannot erase from an empty sequence");
  const size_t at = ctx.has_input(1) ? ReadPosition(ctx, 1, elements.size(), false) : elements.size() - 1;
  elements.erase(elements.begin() + static_cast<long>(at));
  ctx.output(0) = Tensor::Sequence(seq.dtype(), std::move(elements));
}
ONEFLOW_KERNEL(SequenceErase, SequenceErase);

void SequenceLength(KernelContext& ctx) {
  const Tensor& seq = SequenceInput(ctx, 0);
  Tensor out(DType::kInt64, Shape{});
  *out.data<int64_t>() = static_cast<int64_t>(seq.elements().size());
  ctx.output(0) = out;
}
ONEFLOW_KERNEL(SequenceLength, SequenceLength);

void SplitToSequence(KernelContext& ctx) {
  const Tensor& x = TensorInput(ctx, 0);
  OF_CHECK(DTypeSize(x.dtype()) > 0, kUnsupported, ctx.node_desc(), ": cannot split tensors of ",
           DTypeName(x.dtype()));
  const int64_t r = x.rank();
  int64_t axis = ctx.attrs().GetInt("axis");
  OF_CHECK(r >= 1 && axis >= -r && axis < r, kInvalidArgument, ctx.node_desc(), ": axis ", axis,
           " is out of range for ", DescribeValue(x));
  if (axis < 0) axis += r;
  const int64_t length = x.dim(axis);
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.has_input(1)) {
    sizes.assign(static_cast<size_t>(length), 1);
    squeeze = ctx.attrs().GetInt("keepdims") == 0;
  } else {
    const Tensor& split = TensorInput(ctx, 1);
    OF_CHECK(split.dtype() == DType::kInt32 || split.dtype() == DType::kInt64, kInvalidArgument, ctx.node_desc(),
             ": split must be int32 or int64, got ", DescribeValue(split));
    if (split.rank() == 0) {
      const int64_t chunk = split.GetAsInt64(0);
      OF_CHECK(chunk > 0, kInvalidArgument, ctx.node_desc(), ": split must be positive, got ", chunk);
      for (int64_t at = 0; at < length; at += chunk) sizes.push_back(std::min(chunk, length - at));
    } else {
      OF_CHECK(split.rank() == 1, kInvalidArgument, ctx.node_desc(), ": split must be a scalar or 1-D, got ",
               DescribeValue(split));
      int64_t total = 0;
      for (int64_t s : split.ToInt64Vector()) {
        OF_CHECK(s >= 0 && s <= length, kInvalidArgument, ctx.node_desc(), ": split sizes must be in [0, ", length,
                 "], got ", s);
        sizes.push_back(s);
        total += s;
      }
      OF_CHECK(total == length, kInvalidArgument, ctx.node_desc(), ": split sizes sum to ", total, "; axis ", axis,
               " of ", DescribeValue(x), " has ", length);
    }
  }
  std::vector<Tensor> pieces;
  int64_t at = 0;
  for (int64_t s : sizes) {
    Tensor piece = SliceAlong(x, axis, at, at + s);
    if (squeeze) {
      Shape shape = piece.shape();
      shape.erase(shape.begin() + axis);
      piece = piece.Reshaped(shape);
    }
    pieces.push_back(std::move(piece));
    at += s;
  }
  ctx.output(0) = Tensor::Sequence(x.dtype(), std::move(pieces));
}
ONEFLOW_KERNEL(SplitToSequence, SplitToSequence);

void ConcatFromSequence(KernelContext& ctx) {
  const Tensor& seq = SequenceInput(ctx, 0);
  const std::vector<Tensor>& items = seq.elements();
  OF_CHECK(!items.empty(), kInvalidArgument, ctx.node_desc(), ": cannot concatenate an empty sequence");
  OF_CHECK(DTypeSize(seq.dtype()) > 0, kUnsupported, ctx.node_desc(), ": cannot concatenate tensors of ",
           DTypeName(seq.dtype()));
  const bool new_axis = ctx.attrs().GetInt("new_axis") != 0;
  const Shape& first = items[0].shape();
  const int64_t r = static_cast<int64_t>(first.size()) + (new_axis ? 1 : 0);
  int64_t axis = ctx.attrs().GetInt("axis");
  OF_CHECK(r >= 1 && axis >= -r && axis < r, kInvalidArgument, ctx.node_desc(), ": axis ", axis,
           " is out of range for rank ", r);
  if (axis < 0) axis += r;
  Shape out_shape = first;
  if (new_axis) out_shape.insert(out_shape.begin() + axis, 0);
  else out_shape[static_cast<size_t>(axis)] = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const Shape& s = items[k].shape();
    bool same = s.size() == first.size();
    for (size_t d = 0; same && d < s.size(); ++d)
      same = s[d] == first[d] || (!new_axis && static_cast<int64_t>(d) == axis);
    OF_CHECK(same, kInvalidArgument, ctx.node_desc(), ": element ", k, " is ", DescribeValue(items[k]),
             " but element 0 is ", DescribeValue(items[0]), new_axis ? "; stacked elements must have one shape"
             : "; elements may differ only along the axis");
    out_shape[static_cast<size_t>(axis)] += new_axis ? 1 : s[static_cast<size_t>(axis)];
  }
  std::vector<Tensor> parts;  // stacked elements as slabs of extent 1 along the new axis
  for (const Tensor& t : items) {
    Shape slab = t.shape();
    if (new_axis) slab.insert(slab.begin() + axis, 1);
    parts.push_back(t.Reshaped(slab));
  }
  Tensor out = Tensor::Uninitialized(seq.dtype(), out_shape);
  ConcatAlong(parts, axis, out);
  ctx.output(0) = out;
}
ONEFLOW_KERNEL(ConcatFromSequence, ConcatFromSequence);

class SequenceMapKernel final : public OpKernel {
 public:
  explicit SequenceMapKernel(const KernelInitContext& c) : node_(c.node().Describe()) {
    const size_t num_inputs = c.node().inputs.size();
    declared_ = DeclaredInputCount(num_inputs, c.attrs());
    const SubgraphTypes types = SequenceMapBodyTypes(c.attrs().GetGraph("body"), InitTypes(c, 0, declared_),
                                                     InitTypes(c, declared_, num_inputs), node_ + ", body");
    body_ = std::make_unique<SubgraphRunner>(c.attrs().GetGraph("body"), types.inputs, c.pool(), node_ + ", body");
  }

  void Compute(KernelContext& ctx) override {
    const size_t length = SequenceInput(ctx, 0).elements().size();
    for (size_t i = 1; i < declared_; ++i) {
      const Tensor& in = ctx.input(i);
      OF_CHECK(!in.is_sequence() || in.elements().size() == length, kInvalidArgument, node_, ": additional input ",
               i, " is a sequence of ", in.elements().size(), " where input_sequence has ", length);
    }
    std::vector<std::vector<Tensor>> outs(ctx.num_outputs());
    std::vector<Tensor> feeds(ctx.num_inputs());
    for (size_t i = declared_; i < ctx.num_inputs(); ++i) feeds[i] = ctx.input(i);
    for (size_t k = 0; k < length; ++k) {
      for (size_t i = 0; i < declared_; ++i) {
        const Tensor& in = ctx.input(i);
        feeds[i] = in.is_sequence() ? in.elements()[k] : in;
      }
      std::vector<Tensor> results = body_->Run(feeds);
      for (size_t j = 0; j < outs.size(); ++j) outs[j].push_back(std::move(results[j]));
    }
    for (size_t j = 0; j < outs.size(); ++j) {
      if (!ctx.has_output(j)) continue;
      DType dtype = body_->output_types()[j].dtype;
      if (!outs[j].empty()) dtype = outs[j][0].dtype();
      OF_CHECK(dtype != DType::kUndefined, kUnsupported, node_, ": output ", j,
               " is empty and the body does not say its element type");
      for (const Tensor& t : outs[j])
        OF_CHECK(t.is_tensor() && t.dtype() == dtype, kInvalidArgument, node_, ": body output ", j, " is ",
                 DescribeValue(t), " in one iteration and ", DTypeName(dtype), " in another");
      ctx.output(j) = Tensor::Sequence(dtype, std::move(outs[j]));
    }
  }

 private:
  std::string node_;
  size_t declared_ = 0;
  std::unique_ptr<SubgraphRunner> body_;
};
ONEFLOW_KERNEL_CLASS(SequenceMap, SequenceMapKernel);

// Optional(x) is x itself at run time (an optional holding a value is that value); without an
// input it is a none of the element type the `type` attribute names.
class OptionalKernel final : public OpKernel {
 public:
  explicit OptionalKernel(const KernelInitContext& c) {
    if (c.attrs().has("type")) dtype_ = c.attrs().GetType("type").dtype;
  }
  void Compute(KernelContext& ctx) override {
    if (ctx.has_input(0)) {
      const Tensor& x = ctx.input(0);
      OF_CHECK(!x.is_none(), kInvalidArgument, ctx.node_desc(), ": an optional cannot hold an empty optional");
      ctx.output(0) = x.is_tensor() ? x.Clone() : x;
    } else {
      ctx.output(0) = Tensor::None(dtype_);
    }
  }

 private:
  DType dtype_ = DType::kUndefined;
};
ONEFLOW_KERNEL_CLASS(Optional, OptionalKernel);

void OptionalHasElement(KernelContext& ctx) {
  ctx.output(0) = Tensor::Scalar(DType::kBool, ctx.has_input(0) && !ctx.input(0).is_none() ? 1.0 : 0.0);
}
ONEFLOW_KERNEL(OptionalHasElement, OptionalHasElement);

void OptionalGetElement(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  OF_CHECK(!x.is_none(), kInvalidArgument, ctx.node_desc(), ": the optional is empty (it holds no value)");
  ctx.output(0) = x.is_tensor() ? x.Clone() : x;
}
ONEFLOW_KERNEL(OptionalGetElement, OptionalGetElement);

}  // namespace
}  // namespace oneflow
