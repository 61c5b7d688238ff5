// Tensor-parallel weight layouts (Megatron-style column/row splits) derived from a graph: the
// weight SBP annotations that make each MatMul's weight split along its output features
// (column) or, when the MatMul reads an activation already split by an earlier column layer, along
// its input features (row, a partial-sum result). The planner propagates the rest.
#pragma once

#include <map>
#include <string>

#include "graph/graph.h"
#include "graph/sbp.h"

namespace oneflow::train {

// For the weights (graph inputs or constants marked is_parameter) of a prepared graph: the 1-D SBP
// of the column/row layout. Column MatMul weights [K, N] get S(1) and their bias ([N], added to
// the MatMul's result) S(0); row weights get S(0) and their bias stays B. Weights a MatMul does not
// read as its right operand (LayerNorm scales, embeddings) are not listed (B).
std::map<std::string, Sbp> ColumnRowLayout(const Graph& g);

}  // namespace oneflow::train
