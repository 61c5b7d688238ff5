// The optimization pipeline: which passes run, in which order, for a prepared graph. The passes
// know no devices; the engine turns a device into these switches (engine/session.h
// OptimizeForDevice) and injects the evaluator constant folding runs nodes with.
#pragma once

#include "base/thread_pool.h"
#include "graph/graph.h"
#include "passes/passes.h"

namespace oneflow {

struct PipelineOptions {
  // 0: nothing; 1: constant folding and dead-code elimination; 2: also the fusions below.
  int level = 2;
  // Level 2: channels-last convs (OptimizeLayout), for kernels that prefer NHWC (the CPU's).
  bool channels_last = true;
  // Level 2: FuseAttention, for a device with a fused attention kernel (CUDA's flash kernel).
  bool fuse_attention = false;
  // Level 2: FuseQdq, first (before constant folding turns DequantizeLinear of weights into
  // floats), for a device with the integer kernels it targets (the CPU's).
  bool fuse_qdq = true;
  // Level 2: FuseElementwise, last, after the layout pass has pushed transposes through single ops.
  bool fuse_elementwise = true;
};

// Runs the pipeline on a prepared graph, leaving it prepared (schemas resolved, shapes inferred).
void OptimizeGraph(Graph& g, const PipelineOptions& options, ThreadPool& pool, const NodeEvaluator& evaluate);

}  // namespace oneflow
