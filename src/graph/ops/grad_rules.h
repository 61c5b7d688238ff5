// Gradient rules of the op families, one function per op (or per group of ops sharing a rule),
// attached with .Grad() in the op's registration in ops/<family>.cc and defined in
// ops/<family>_grad.cc. Each reads the forward node and emits backward nodes (graph/grad_context.h).
#pragma once

#include "graph/grad_context.h"

namespace oneflow {

// ops/elementwise_grad.cc
void GradAdd(GradContext& c);
void GradSub(GradContext& c);
void GradMul(GradContext& c);
void GradDiv(GradContext& c);
void GradPow(GradContext& c);
void GradMinMax(GradContext& c);  // Min and Max (variadic): the gradient goes to the selected input
void GradMean(GradContext& c);
void GradSum(GradContext& c);
void GradWhere(GradContext& c);
void GradClip(GradContext& c);
void GradPassThrough(GradContext& c);  // Identity, Dropout (inference): dX = dY
void GradCast(GradContext& c);
// Unary math; the activation ones call an ai.oneflow <Op>Grad kernel with the forward attributes.
GradFn UnaryGradRule(const std::string& op);  // empty when the op has no rule

// ops/reduction_grad.cc
GradFn ReduceGradRule(const std::string& op);  // Reduce* (both axes forms); empty when none
void GradCumSum(GradContext& c);

// ops/matmul_grad.cc
void GradMatMul(GradContext& c);
void GradGemm(GradContext& c);

// ops/tensor_grad.cc
void GradReshapeLike(GradContext& c);  // Reshape, Flatten, Squeeze, Unsqueeze: dX = dY reshaped to X
void GradTranspose(GradContext& c);
void GradConcat(GradContext& c);
void GradSplit(GradContext& c);
void GradSlice(GradContext& c);
void GradGather(GradContext& c);
void GradGatherElements(GradContext& c);
void GradExpand(GradContext& c);
void GradTile(GradContext& c);
void GradPad(GradContext& c);

// ops/einsum_grad.cc
void GradEinsum(GradContext& c);

}  // namespace oneflow
