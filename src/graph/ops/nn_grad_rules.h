// Gradient rules of the nn ops (Conv, ConvTranspose, the pools, Softmax/LogSoftmax and the
// normalizations), attached with .Grad() in their registrations (ops/nn.cc, ops/spatial.cc,
// ops/normalization.cc) and defined in ops/nn_grad_rules.cc. They emit the ai.oneflow backward ops
// of ops/nn_grad.cc with the forward node's attributes.
#pragma once

#include "graph/grad_context.h"

namespace oneflow {

void GradConv(GradContext& c);
void GradConvTranspose(GradContext& c);
void GradMaxPool(GradContext& c);
void GradAveragePool(GradContext& c);
void GradGlobalAveragePool(GradContext& c);
void GradGlobalMaxPool(GradContext& c);
void GradSoftmax(GradContext& c);
void GradLogSoftmax(GradContext& c);
void GradLayerNormalization(GradContext& c);
void GradBatchNormalization(GradContext& c);
void GradInstanceNormalization(GradContext& c);

}  // namespace oneflow
