// The optimization passes. Each takes a prepared graph (graph/prepare.h) by reference and rewrites
// it in place; OptimizeGraph (passes/pipeline.h) fixes their order.
#pragma once

#include <functional>

#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "graph/graph.h"
#include "graph/prepare.h"

namespace oneflow {

// Removes nodes whose outputs nobody uses and constants nobody reads. Returns nodes removed.
int EliminateDeadCode(Graph& g);

// Computes node `n` of `g` on concrete inputs (nullptr: an omitted optional input) into `outputs`,
// one per node output; throws kUnsupported when it has no kernel for the node. Passes get it
// injected because running kernels is a layer above the graph: the engine, planner and trainer
// pass EvaluateOnCpu (kernels/node_runner.h).
using NodeEvaluator = std::function<void(const Graph& g, const Node& n, const std::vector<const Tensor*>& inputs,
                                         std::vector<Tensor>& outputs, ThreadPool& pool)>;

// Evaluates nodes whose inputs are all constant (and Shape/Size of fully known types) with
// `evaluate`, replacing them by constants. Outputs larger than `max_bytes` are left alone.
int FoldConstants(Graph& g, ThreadPool& pool, const NodeEvaluator& evaluate, size_t max_bytes = size_t{64} << 20);

// Fusions (passes/fusion.cc): Conv+BatchNormalization folding, MatMul/Gemm + bias +
// activation, Conv + activation. Returns the number of rewrites.
int FuseOps(Graph& g);

// Attention fusion (passes/attention_fusion.cc): MatMul(Q, K^T) [-> Div/Mul by a scalar
// constant] -> Softmax(last axis) -> MatMul(., V) on [B, H, S, D] tensors becomes ai.oneflow
// FusedAttention (the absorbed nodes are removed). Returns the number of rewrites; the caller
// re-resolves schemas and re-infers shapes. OptimizeGraph runs it for CUDA sessions only (the flash
// kernel); CPU sessions keep the packed-GEMM MatMul path (the CPU kernel is a plain reference).
int FuseAttention(Graph& g);

// Elementwise fusion (passes/elementwise_fusion.cc): each maximal group of elementwise nodes
// of one shape (activations, Add/Sub/Mul/Div/Pow/Max/Min, Clip with constant bounds) whose
// intermediates are read by nothing else and are no graph outputs becomes one ai.oneflow
// FusedElementwise running a register program (graph/fused_elementwise_program.h). Operands from
// outside are scalar constants (folded into the program) or tensors broadcasting along one
// contiguous block of dims. Returns the number of fused nodes made; the caller re-resolves schemas
// and re-infers shapes.
int FuseElementwise(Graph& g);

// QDQ fusion (passes/qdq_fusion.cc): DequantizeLinear -> Conv / MatMul / Add / GlobalAveragePool
// -> QuantizeLinear groups become QLinearConv, QLinearMatMul, com.microsoft QLinearAdd and
// QLinearGlobalAveragePool; quantize_dynamic's MatMuls become com.microsoft DynamicQuantizeMatMul.
// Returns the number of rewrites; the caller re-resolves schemas and
// re-infers shapes.
int FuseQdq(Graph& g);

// Layout pass (passes/layout.cc): 2-D f32 convs run NHWC (FusedConv layout "NHWC") with
// explicit transposes pushed through layout-free ops and cancelled in pairs. Returns the number
// of rewrites; the caller re-resolves schemas and re-infers shapes after it.
int OptimizeLayout(Graph& g);

}  // namespace oneflow
