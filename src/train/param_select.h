// Which initializers a training session trains: every float initializer of the model unless frozen
// by exact name or by a glob pattern.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace oneflow::train {

// Shell-style match of the whole name: '*' any run of characters (including none), '?' one
// character; no other special characters (a name with '[' matches itself).
bool GlobMatch(const std::string& pattern, const std::string& name);

// Value ids of the trainable parameters, in value order: values with is_parameter, a constant and
// dtype float32, that are not graph inputs (an initializer that is also an input is a default the
// caller may feed, so it is data), whose name matches none of `frozen` (exact names or globs). Throws
// kInvalidArgument for a frozen entry that matches no float parameter (a typo would otherwise
// silently train everything) and kUnsupported for a float16/bfloat16/float64 parameter that is
// not frozen (updates are f32 only).
std::vector<int> SelectParameters(const Graph& g, const std::vector<std::string>& frozen);

}  // namespace oneflow::train
