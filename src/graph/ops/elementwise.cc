// Op family: elementwise (schemas, attribute defaults, opset ranges, shape inference).
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"

namespace oneflow {

void RegisterElementwiseOps(OpRegistry& r) {
  r.Register(OpSchema("Add").Since(13).Input("A").Input("B").Output("C").Infer(InferBroadcast));
  r.Register(OpSchema("Relu").Since(13).Input("X").Output("Y").Infer(InferSameAsInput0));
}

}  // namespace oneflow
