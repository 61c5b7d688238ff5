// Shape-inference building blocks shared by op definitions.
#pragma once

#include <string>
#include <vector>

#include "graph/op_schema.h"

namespace oneflow {

// Maps a possibly negative axis into [0, rank); fails naming `what` when out of range.
int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* what = "axis");

// Numpy-style multidirectional broadcasting of static types (dims may be symbolic).
std::vector<Dim> BroadcastDims(const std::vector<Dim>& a, const std::vector<Dim>& b, const InferContext& ctx);
// Same for concrete shapes; throws kInvalidArgument naming both shapes when they do not broadcast.
Shape BroadcastShapes(const Shape& a, const Shape& b);

// Output 0 = input 0's type (elementwise unary ops).
void InferSameAsInput0(InferContext& ctx);
// Output 0 = broadcast of all present inputs, with input 0's dtype; inputs must share a dtype.
void InferBroadcast(InferContext& ctx);
// Like InferBroadcast but the output dtype is bool (comparisons).
void InferBroadcastToBool(InferContext& ctx);

// Requires all present inputs to have the same dtype; fails naming the op otherwise.
void CheckSameDType(const InferContext& ctx);

// Attributes, constant inputs and a model's declared dims are untrusted: a mangled or fuzzed file
// can hold any int64, and signed overflow is undefined behaviour. Sizes computed from them go
// through these, which fail with kInvalidArgument ("<who>: <what> overflows int64") instead.
int64_t CheckedAdd(int64_t a, int64_t b, const std::string& who, const char* what);
int64_t CheckedMul(int64_t a, int64_t b, const std::string& who, const char* what);

// Bound for window-like attributes (kernel sizes, strides, dilations, pads, block sizes): far
// beyond any real model, and the product of two such values stays far from int64 overflow.
constexpr int64_t kMaxWindowAttr = int64_t{1} << 31;

}  // namespace oneflow
