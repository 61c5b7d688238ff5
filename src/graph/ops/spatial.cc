// Op family: spatial (schemas, attribute defaults, opset ranges, shape inference).
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"

namespace oneflow {

void RegisterSpatialOps(OpRegistry& r) { (void)r; }

}  // namespace oneflow
