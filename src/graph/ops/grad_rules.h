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
void GradCastLike(GradContext& c);
void GradPRelu(GradContext& c);
void GradShrink(GradContext& c);
// Unary rows without a derivative op (unary_ops.h): a formula of other ops; empty when none.
GradFn UnaryGradRule(const std::string& op);
// dX = grad_op(dY, X or Y when `use_output`), with the forward node's attributes: the rule of
// every unary row with Bwd, and of Shrink.
GradFn DerivativeOpRule(const std::string& grad_op, bool use_output);

// ops/reduction_grad.cc
GradFn ReduceGradRule(const std::string& op);  // Reduce* (both axes forms); empty when none
void GradCumSum(GradContext& c);
void GradTopK(GradContext& c);  // Values scattered back through Indices

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
void GradTrilu(GradContext& c);
void GradGatherND(GradContext& c);

// ops/einsum_grad.cc
void GradEinsum(GradContext& c);

}  // namespace oneflow
