// One registration function per op family; all_ops.cc calls each. Adding a family = one line there.
#pragma once

namespace oneflow {

class OpRegistry;

void RegisterElementwiseOps(OpRegistry& r);   // ops/elementwise.cc: math, activations, compare, logic, Cast
void RegisterReductionOps(OpRegistry& r);     // ops/reduction.cc: Reduce*, ArgMax/Min, Softmax, norms, CumSum, TopK
void RegisterTensorOps(OpRegistry& r);        // ops/tensor.cc: Reshape .. Slice, Gather, Pad, Shape, Range, Constant
void RegisterNnOps(OpRegistry& r);            // ops/nn.cc: MatMul, Gemm, Conv, pools, Resize, Einsum
void RegisterFusedOps(OpRegistry& r);         // ops/fused.cc: ai.oneflow ops produced by fusion passes

inline void RegisterAllOps(OpRegistry& r) {
  RegisterElementwiseOps(r);
  RegisterReductionOps(r);
  RegisterTensorOps(r);
  RegisterNnOps(r);
  RegisterFusedOps(r);
}

}  // namespace oneflow
