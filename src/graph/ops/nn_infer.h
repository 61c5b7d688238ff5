// Shape inference of MatMul, Gemm, Conv and ConvTranspose, shared with their fused variants.
#pragma once

#include <vector>

#include "graph/op_schema.h"

namespace oneflow {

// numpy matmul's output dims of A x B (1-D operands, broadcast batch dims); errors name A and B.
std::vector<Dim> MatMulDims(InferContext& ctx, const TensorType& a, const TensorType& b);
void InferMatMul(InferContext& ctx);
void InferGemm(InferContext& ctx);
void InferConv(InferContext& ctx);
void InferConvTranspose(InferContext& ctx);

}  // namespace oneflow
