// CPU kernels of If, Loop and Scan (graph/ops/control_flow.cc). Each prepares its subgraphs once, at
// kernel creation: typed from the node's static input types (graph/control_flow.h), optimized like a
// session's graph, and given an executor of their own on the outer executor's pool. A run feeds the
// subgraph tensors; the outputs an executor returns are fresh memory, so they become the node's
// outputs without a copy.
#include <limits>
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

// One element of a control input (cond, M), as the op reads it.
bool ReadBool(const Tensor& t, const std::string& node, const char* name) {
  OF_CHECK(t.dtype() == DType::kBool && t.numel() == 1, kInvalidArgument, node, ": ", name,
           " must be one bool, got ", DTypeName(t.dtype()), ShapeToString(t.shape()));
  return *static_cast<const bool*>(t.raw());
}

// A tensor the node may return: a kernel's output must not share bytes with its inputs (the
// executor reuses an input's arena slot once the input is dead).
Tensor Owned(const Tensor& t, const KernelContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && SameStorage(t, ctx.input(i))) return t.Clone();
  return t;
}

void CheckCopyable(const Tensor& t, const std::string& node) {
  OF_CHECK(t.is_tensor(), kInvalidArgument, node, ": a scan input or output is ", DescribeValue(t), ", not a tensor");
  OF_CHECK(DTypeSize(t.dtype()) > 0, kUnsupported, node, ": cannot slice or stack tensors of type ",
           DTypeName(t.dtype()));
}

// `shape` with a dim of 1 inserted at `axis`: a step as a slab of the stacked result.
Shape WithUnitAxis(Shape shape, int64_t axis) {
  shape.insert(shape.begin() + axis, 1);
  return shape;
}

// Step `i` of `x` along `axis` (a view when the axis is the outermost).
Tensor SliceAt(const Tensor& x, int64_t axis, int64_t i) {
  Shape shape = x.shape();
  shape.erase(shape.begin() + axis);
  if (ShapeProduct(x.shape(), 0, static_cast<size_t>(axis)) == 1)
    return Tensor(x.dtype(), shape, x.storage(), x.byte_offset() + static_cast<size_t>(i * NumElements(shape)) *
                                                                  DTypeSize(x.dtype()));
  return SliceAlong(x, axis, i, i + 1).Reshaped(shape);
}

// The steps stacked along a new `axis` (normalized against rank + 1); `empty_element` is the step
// shape when there are none.
Tensor Stack(const std::vector<Tensor>& steps, int64_t axis, DType dtype, const Shape& empty_element,
             const std::string& node, size_t index) {
  const Shape element = steps.empty() ? empty_element : steps[0].shape();
  const int64_t r = static_cast<int64_t>(element.size()) + 1;
  OF_CHECK(axis >= -r && axis < r, kInvalidArgument, node, ": scan output axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  std::vector<Tensor> slabs;
  for (size_t t = 0; t < steps.size(); ++t) {
    const Tensor& s = steps[t];
    OF_CHECK(s.dtype() == dtype && s.shape() == element, kInvalidArgument, node, ": scan output ", index,
             " is ", DTypeName(s.dtype()), ShapeToString(s.shape()), " at step ", t, " but ", DTypeName(dtype),
             ShapeToString(element), " at step 0; every step must have one shape");
    slabs.push_back(s.Reshaped(WithUnitAxis(element, axis)));
  }
  Shape shape = element;
  shape.insert(shape.begin() + axis, static_cast<int64_t>(steps.size()));
  Tensor out = Tensor::Uninitialized(dtype, shape);
  ConcatAlong(slabs, axis, out);
  return out;
}

// The shape of a scan output with no steps: the body's static type when it is known.
Shape EmptyElement(const TensorType& t) { return t.fully_known() ? t.ToShape() : Shape{}; }

class IfKernel final : public OpKernel {
 public:
  explicit IfKernel(const KernelInitContext& c) : node_(c.node().Describe()) {
    const AttrMap& attrs = c.attrs();
    const size_t declared = DeclaredInputCount(c.node().inputs.size(), attrs);
    const std::vector<TensorType> captured = InitTypes(c, declared, c.node().inputs.size());
    then_ = std::make_unique<SubgraphRunner>(attrs.GetGraph("then_branch"), captured, c.pool(), node_ + ", then_branch");
    else_ = std::make_unique<SubgraphRunner>(attrs.GetGraph("else_branch"), captured, c.pool(), node_ + ", else_branch");
  }

  void Compute(KernelContext& ctx) override {
    const bool cond = ReadBool(ctx.input(0), node_, "cond");
    std::vector<Tensor> feeds;
    for (size_t i = 1; i < ctx.num_inputs(); ++i) feeds.push_back(ctx.input(i));
    std::vector<Tensor> outs = (cond ? then_ : else_)->Run(feeds);
    OF_CHECK(outs.size() == ctx.num_outputs(), kInvalidArgument, node_, ": the branch returned ", outs.size(),
             " outputs for ", ctx.num_outputs());
    for (size_t i = 0; i < outs.size(); ++i)
      if (ctx.has_output(i)) ctx.output(i) = std::move(outs[i]);
  }

 private:
  std::string node_;
  std::unique_ptr<SubgraphRunner> then_, else_;
};
ONEFLOW_KERNEL_CLASS(If, IfKernel);

class LoopKernel final : public OpKernel {
 public:
  explicit LoopKernel(const KernelInitContext& c) : node_(c.node().Describe()) {
    const size_t declared = DeclaredInputCount(c.node().inputs.size(), c.attrs());
    OF_CHECK(declared >= 2, kInvalidModel, node_, ": Loop takes M and cond before its loop-carried values");
    num_carried_ = declared - 2;
    const std::vector<TensorType> carried = InitTypes(c, 2, declared);
    const std::vector<TensorType> captured = InitTypes(c, declared, c.node().inputs.size());
    const SubgraphTypes types = LoopBodyTypes(c.attrs().GetGraph("body"), carried, captured, node_ + ", body");
    body_ = std::make_unique<SubgraphRunner>(c.attrs().GetGraph("body"), types.inputs, c.pool(), node_ + ", body");
  }

  void Compute(KernelContext& ctx) override {
    int64_t trips = std::numeric_limits<int64_t>::max();
    if (ctx.has_input(0)) {
      const Tensor& m = ctx.input(0);
      OF_CHECK(m.dtype() == DType::kInt64 && m.numel() == 1, kInvalidArgument, node_,
               ": M (the trip count) must be one int64, got ", DTypeName(m.dtype()), ShapeToString(m.shape()));
      trips = *m.data<int64_t>();
    }
    // An absent cond starts the loop as true. The body's condition output is honoured even then,
    // as onnxruntime and the ONNX reference implementation do (the spec's pseudo-code calls it
    // ignored for a for loop, but models are written against the runtimes).
    bool cond = ctx.has_input(1) ? ReadBool(ctx.input(1), node_, "cond") : true;
    const size_t n = num_carried_, declared = 2 + n;
    const size_t k = ctx.num_outputs() - n;
    std::vector<Tensor> feeds(ctx.num_inputs());
    for (size_t i = 0; i < n; ++i) feeds[2 + i] = ctx.input(2 + i);
    for (size_t i = declared; i < ctx.num_inputs(); ++i) feeds[i] = ctx.input(i);
    std::vector<std::vector<Tensor>> scans(k);
    for (int64_t i = 0; i < trips && cond; ++i) {
      feeds[0] = Tensor::Scalar(DType::kInt64, static_cast<double>(i));
      feeds[1] = Tensor::Scalar(DType::kBool, 1.0);
      std::vector<Tensor> outs = body_->Run(feeds);
      cond = ReadBool(outs[0], node_, "the body's condition output");
      for (size_t j = 0; j < n; ++j) feeds[2 + j] = std::move(outs[1 + j]);
      for (size_t j = 0; j < k; ++j) scans[j].push_back(std::move(outs[1 + n + j]));
    }
    for (size_t j = 0; j < n; ++j)
      if (ctx.has_output(j)) ctx.output(j) = Owned(feeds[2 + j], ctx);
    for (size_t j = 0; j < k; ++j) {
      if (!ctx.has_output(n + j)) continue;
      const TensorType& element = body_->output_types()[1 + n + j];
      const DType dtype = scans[j].empty() ? element.dtype : scans[j][0].dtype();
      OF_CHECK(dtype != DType::kUndefined, kUnsupported, node_, ": scan output ", j,
               " has no iterations and the body does not say its type");
      if (!scans[j].empty()) CheckCopyable(scans[j][0], node_);
      ctx.output(n + j) = Stack(scans[j], 0, dtype, EmptyElement(element), node_, j);
    }
  }

 private:
  std::string node_;
  size_t num_carried_ = 0;
  std::unique_ptr<SubgraphRunner> body_;
};
ONEFLOW_KERNEL_CLASS(Loop, LoopKernel);

class ScanKernel final : public OpKernel {
 public:
  explicit ScanKernel(const KernelInitContext& c) : node_(c.node().Describe()) {
    const size_t num_inputs = c.node().inputs.size();
    declared_ = DeclaredInputCount(num_inputs, c.attrs());
    spec_ = ParseScanSpec(c.attrs(), declared_, c.node().outputs.size(), node_);
    const SubgraphTypes types =
        ScanBodyTypes(c.attrs().GetGraph("body"), spec_, InitTypes(c, 0, spec_.num_states),
                      InitTypes(c, spec_.num_states, declared_), InitTypes(c, declared_, num_inputs), node_ + ", body");
    body_ = std::make_unique<SubgraphRunner>(c.attrs().GetGraph("body"), types.inputs, c.pool(), node_ + ", body");
  }

  void Compute(KernelContext& ctx) override {
    const size_t n = spec_.num_states, m = spec_.num_scan_inputs, k = spec_.num_scan_outputs;
    // Every scan input's axis, normalized, and the one sequence length they share.
    std::vector<int64_t> axes(m);
    int64_t length = -1;
    for (size_t j = 0; j < m; ++j) {
      const Tensor& x = ctx.input(n + j);
      CheckCopyable(x, node_);
      const int64_t r = static_cast<int64_t>(x.rank());
      int64_t axis = spec_.input_axes[j];
      OF_CHECK(r >= 1 && axis >= -r && axis < r, kInvalidArgument, node_, ": scan_input_axes[", j, "] = ", axis,
               " is out of range for scan input ", j, " of shape ", ShapeToString(x.shape()));
      axes[j] = axis < 0 ? axis + r : axis;
      const int64_t steps = x.dim(axes[j]);
      OF_CHECK(length < 0 || steps == length, kInvalidArgument, node_, ": scan input ", j, " has ", steps,
               " steps along its axis; scan input 0 has ", length);
      length = steps;
    }
    std::vector<Tensor> feeds(ctx.num_inputs());
    for (size_t i = 0; i < n; ++i) feeds[i] = ctx.input(i);
    for (size_t i = declared_; i < ctx.num_inputs(); ++i) feeds[i] = ctx.input(i);
    std::vector<std::vector<Tensor>> scans(k, std::vector<Tensor>(static_cast<size_t>(length)));
    for (int64_t t = 0; t < length; ++t) {
      for (size_t j = 0; j < m; ++j)
        feeds[n + j] = SliceAt(ctx.input(n + j), axes[j], spec_.input_reverse[j] ? length - 1 - t : t);
      std::vector<Tensor> outs = body_->Run(feeds);
      for (size_t i = 0; i < n; ++i) feeds[i] = std::move(outs[i]);
      for (size_t j = 0; j < k; ++j) {
        CheckCopyable(outs[n + j], node_);
        scans[j][static_cast<size_t>(spec_.output_reverse[j] ? length - 1 - t : t)] = std::move(outs[n + j]);
      }
    }
    for (size_t i = 0; i < n; ++i)
      if (ctx.has_output(i)) ctx.output(i) = Owned(feeds[i], ctx);
    for (size_t j = 0; j < k; ++j) {
      if (!ctx.has_output(n + j)) continue;
      const TensorType& element = body_->output_types()[n + j];
      const DType dtype = scans[j].empty() ? element.dtype : scans[j][0].dtype();
      ctx.output(n + j) = Stack(scans[j], spec_.output_axes[j], dtype, EmptyElement(element), node_, j);
    }
  }

 private:
  std::string node_;
  size_t declared_ = 0;
  ScanSpec spec_;
  std::unique_ptr<SubgraphRunner> body_;
};
ONEFLOW_KERNEL_CLASS(Scan, ScanKernel);

}  // namespace
}  // namespace oneflow
