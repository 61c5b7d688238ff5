#include "passes/pipeline.h"

namespace oneflow {

void OptimizeGraph(Graph& g, const PipelineOptions& options, ThreadPool& pool, const NodeEvaluator& evaluate) {
  if (options.level <= 0) return;
  if (options.level >= 2 && options.fuse_qdq && FuseQdq(g) > 0) PrepareGraph(g);
  FoldConstants(g, pool, evaluate);
  if (options.level >= 2) {
    if (FuseOps(g) > 0) {
      PrepareGraph(g);
      FoldConstants(g, pool, evaluate);
    }
    // Before elementwise fusion, which would otherwise take the scale Div into a chain.
    if (options.fuse_attention && FuseAttention(g) > 0) PrepareGraph(g);
    if (options.channels_last && OptimizeLayout(g) > 0) {
      PrepareGraph(g);
      FoldConstants(g, pool, evaluate);  // transposes of constant residuals
    }
    // Last: the layout pass pushes transposes through single elementwise ops, not fused ones.
    if (options.fuse_elementwise) EliminateDeadCode(g);  // a dead reader must not keep a value unfused
    if (options.fuse_elementwise && FuseElementwise(g) > 0) PrepareGraph(g);
  }
  EliminateDeadCode(g);
}

}  // namespace oneflow
