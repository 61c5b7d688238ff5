// Op family: normalization (schemas, attribute defaults, opset ranges, shape inference).
#include "graph/infer_util.h"
#include "graph/ops/all_ops.h"

namespace oneflow {

void RegisterNormalizationOps(OpRegistry& r) { (void)r; }

}  // namespace oneflow
