// Op family: reduction (schemas, attribute defaults, opset ranges, shape inference).
#include <algorithm>

#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"
#include "graph/ops/grad_rules.h"

namespace oneflow {

namespace {

// Reduce*: axes come from the `axes` attribute (opset 13..17, except ReduceSum) or from the
// optional second input (ReduceSum 13+, all from 18). Empty axes reduce everything unless
// noop_with_empty_axes is set.
void InferReduce(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  const AttrMap& attrs = ctx.attrs();
  const bool keepdims = attrs.GetInt("keepdims") != 0;
  const bool noop = attrs.GetInt("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  bool axes_known = true;
  if (attrs.has("axes")) {
    axes = attrs.GetInts("axes");
  } else if (ctx.has_input(1)) {
    const Tensor* v = ctx.input_value(1);
    if (v) {
      if (v->dtype() != DType::kInt64) ctx.Error("axes must be int64, got ", DTypeName(v->dtype()));
      axes = v->ToInt64Vector();
    } else {
      axes_known = false;
    }
  }
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  const int64_t rank = x.rank();
  if (!axes_known) {
    if (keepdims) ctx.set_output(0, TensorType::Of(x.dtype, std::vector<Dim>(rank, Dim::Unknown())));
    else ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    return;
  }
  if (axes.empty() && noop) {
    ctx.set_output(0, x);
    return;
  }
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) ctx.Error("axis ", a, " is out of range for rank ", rank);
    int64_t n = a < 0 ? a + rank : a;
    if (reduced[n]) ctx.Error("axis ", a, " is repeated");
    reduced[n] = true;
  }
  std::vector<Dim> dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) dims.push_back(x.dims[i]);
    else if (keepdims) dims.push_back(Dim::Known(1));
  }
  ctx.set_output(0, TensorType::Of(x.dtype, std::move(dims)));
}

void InferArgReduce(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(DType::kInt64));
    return;
  }
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  if (x.dims[axis].known() && x.dims[axis].value == 0) ctx.Error("cannot take ArgMax/ArgMin over an empty axis");
  std::vector<Dim> dims = x.dims;
  if (ctx.attrs().GetInt("keepdims") != 0) dims[axis] = Dim::Known(1);
  else dims.erase(dims.begin() + axis);
  ctx.set_output(0, TensorType::Of(DType::kInt64, std::move(dims)));
}

void InferCumulative(InferContext& ctx) {
  if (ctx.has_input(1)) {
    const TensorType& a = ctx.input_type(1);
    if (a.dtype != DType::kInt32 && a.dtype != DType::kInt64) ctx.Error("axis must be int32 or int64");
    if (a.has_rank && a.rank() > 1) ctx.Error("axis must be a scalar or a 1-element tensor");
  }
  ctx.set_output(0, ctx.input_type(0));
}

void InferTopK(InferContext& ctx) {
  const TensorType& x = ctx.input_type(0);
  if (ctx.input_dtype(1) != DType::kInt64) ctx.Error("K must be int64");
  if (!x.has_rank) {
    ctx.set_output(0, TensorType::UnknownShape(x.dtype));
    ctx.set_output(1, TensorType::UnknownShape(DType::kInt64));
    return;
  }
  const int64_t axis = NormalizeAxis(ctx.attrs().GetInt("axis"), x.rank());
  std::vector<Dim> dims = x.dims;
  if (const Tensor* k = ctx.input_value(1)) {
    if (k->numel() != 1) ctx.Error("K must hold exactly one value");
    const int64_t kv = k->GetAsInt64(0);
    if (kv < 0) ctx.Error("K must be non-negative, got ", kv);
    if (x.dims[axis].known() && kv > x.dims[axis].value)
      ctx.Error("K = ", kv, " exceeds the axis size ", x.dims[axis].value);
    dims[axis] = Dim::Known(kv);
  } else {
    dims[axis] = Dim::Unknown();
  }
  ctx.set_output(0, TensorType::Of(x.dtype, dims));
  ctx.set_output(1, TensorType::Of(DType::kInt64, dims));
}

const char* const kReduceOps[] = {op::kReduceMean, op::kReduceMax, op::kReduceMin, op::kReduceProd, op::kReduceL1,
                                  op::kReduceL2, op::kReduceLogSum, op::kReduceLogSumExp, op::kReduceSumSquare};

}  // namespace

void RegisterReductionOps(OpRegistry& r) {
  // ReduceSum took axes as an input already at opset 13.
  r.Register(OpSchema(op::kReduceSum).Since(13).Input("data").OptionalShapeInput("axes").Output("reduced")
                 .Attr("keepdims", Attribute::Int(1)).Attr("noop_with_empty_axes", Attribute::Int(0))
                 .Infer(InferReduce).Grad(ReduceGradRule(op::kReduceSum)));
  for (const char* op : kReduceOps) {
    r.Register(OpSchema(op).Since(13).Until(17).Input("data").Output("reduced")
                   .OptionalAttr("axes", AttrKind::kInts).Attr("keepdims", Attribute::Int(1))
                   .Infer(InferReduce).Grad(ReduceGradRule(op)));
    r.Register(OpSchema(op).Since(18).Input("data").OptionalShapeInput("axes").Output("reduced")
                   .Attr("keepdims", Attribute::Int(1)).Attr("noop_with_empty_axes", Attribute::Int(0))
                   .Infer(InferReduce).Grad(ReduceGradRule(op)));
  }
  for (const char* op : {op::kArgMax, op::kArgMin}) {
    r.Register(OpSchema(op).Since(13).Input("data").Output("reduced")
                   .Attr("axis", Attribute::Int(0)).Attr("keepdims", Attribute::Int(1))
                   .Attr("select_last_index", Attribute::Int(0)).Infer(InferArgReduce));
  }
  r.Register(OpSchema(op::kCumSum).Since(13).Input("x").LaunchInput("axis").Output("y")
                 .Attr("exclusive", Attribute::Int(0)).Attr("reverse", Attribute::Int(0))
                 .Infer(InferCumulative).Grad(GradCumSum));
  r.Register(OpSchema(op::kCumProd).Since(26).Input("x").LaunchInput("axis").Output("y")
                 .Attr("exclusive", Attribute::Int(0)).Attr("reverse", Attribute::Int(0))
                 .Infer(InferCumulative));
  r.Register(OpSchema(op::kTopK).Since(13).Input("X").ShapeInput("K").Output("Values").Output("Indices")
                 .Attr("axis", Attribute::Int(-1)).Attr("largest", Attribute::Int(1))
                 .Attr("sorted", Attribute::Int(1)).Infer(InferTopK).Grad(GradTopK));
}

}  // namespace oneflow
