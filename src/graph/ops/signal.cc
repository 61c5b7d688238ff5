// Op family: signal processing (the window functions of opset 17: HannWindow, HammingWindow,
// BlackmanWindow). Kernels: kernels/cpu/signal.cc.
//
// Each takes a scalar size N and writes N samples w[n] of its window in output_datatype; periodic
// windows (the default) use the period N (the first N of an N + 1 symmetric window), symmetric
// ones N - 1, as numpy's and PyTorch's window functions do.
#include "graph/op_schema.h"
#include "graph/ops/all_ops.h"

namespace oneflow {
namespace {

void InferWindow(InferContext& ctx) {
  const TensorType& size = ctx.input_type(0);
  if (size.dtype != DType::kInt32 && size.dtype != DType::kInt64)
    ctx.Error("size must be int32 or int64, got ", DTypeName(size.dtype));
  if (size.has_rank && size.rank() != 0 && !(size.rank() == 1 && size.dims[0].known() && size.dims[0].value == 1))
    ctx.Error("size must be a scalar, got ", size.ToString());
  const int64_t code = ctx.attrs().GetInt("output_datatype");
  const DType out = static_cast<DType>(code);
  if (code <= 0 || code > INT32_MAX || !IsKnownDType(static_cast<int32_t>(code)) || out == DType::kString ||
      out == DType::kBool)
    Fail(ErrorCode::kUnsupported, ctx.node(), ": output_datatype ", code, " is not a numeric type we support");
  Dim n = Dim::Unknown();
  if (const Tensor* v = ctx.input_value(0)) {
    const int64_t len = v->GetAsInt64(0);
    if (len < 0) ctx.Error("size must be >= 0, got ", len);
    n = Dim::Known(len);
  }
  ctx.set_output(0, TensorType::Of(out, {n}));
}

OpSchema Window(const char* name) {
  return std::move(OpSchema(name).Since(17).ShapeInput("size").Output("output")
                       .Attr("output_datatype", Attribute::Int(static_cast<int64_t>(DType::kFloat32)))
                       .Attr("periodic", Attribute::Int(1)).Infer(InferWindow));
}

}  // namespace

void RegisterSignalOps(OpRegistry& r) {
  for (const char* op : {op::kHannWindow, op::kHammingWindow, op::kBlackmanWindow}) r.Register(Window(op));
}

}  // namespace oneflow
