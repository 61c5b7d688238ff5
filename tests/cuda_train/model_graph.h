// Hand-built training models for the training tests: trainable parameters and opset-17 nodes named
// after their output value.
#pragma once

#include "../graph_builder.h"

namespace oneflow::train_test {

// AddParam(g, name, t): a trainable initializer; AddOp(g, type, in, out, attrs): a node named after
// its new output value `out`. Both from tests/graph_builder.h (the unit and CUDA tests share them).
using test_util::AddOp;
using test_util::AddParam;

}  // namespace oneflow::train_test
