// SBP rules shared by op definitions outside sbp_rules.cc (the unary rows of unary_ops.h).
#pragma once

#include "graph/op_schema.h"

namespace oneflow {

// How P passes through an elementwise op: not at all (Relu), on every input at once (Add: the
// sum of partial sums), or on one input with the others B (Mul by a replicated factor).
enum class Linear { kNone, kAll, kAny, kFirst };

// Any split the inputs share with the output (broadcast inputs B), plus the partial-sum
// signatures `linear` allows.
SbpFn ElementwiseSbp(Linear linear);

}  // namespace oneflow
