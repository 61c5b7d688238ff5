// Shape inference of MatMul, Gemm, Conv and ConvTranspose, shared with their fused variants.
#pragma once

#include "graph/op_schema.h"

namespace oneflow {

void InferMatMul(InferContext& ctx);
void InferGemm(InferContext& ctx);
void InferConv(InferContext& ctx);
void InferConvTranspose(InferContext& ctx);

}  // namespace oneflow
