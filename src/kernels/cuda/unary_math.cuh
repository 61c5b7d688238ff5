// The unary rows of graph/ops/unary_ops.h on a device, in f32: their Fwd and Bwd chosen by row id
// at run time (one switch, uniform across a warp), shared by the unary kernels and fused
// epilogues (elementwise.cu), the derivative kernels (grad.cu) and FusedElementwise programs
// (fused_elementwise.cu).
#pragma once

#include "graph/ops/unary_ops.h"

namespace oneflow::cuda {

// A row and its parameters (unary::Param order); op 0 (UnaryOpId::kNone) is the identity.
struct UnaryArgs {
  int op = 0;
  float p[unary::kMaxParams] = {};
};

// Row `id` with its parameters read from a node's attributes (host side).
inline UnaryArgs RowArgs(UnaryOpId id, const AttrMap& attrs, const std::string& what) {
  UnaryArgs a;
  a.op = static_cast<int>(id);
  ReadUnaryParams(UnaryInfo(id), attrs, a.p, what);
  return a;
}

template <class Op>
__device__ __forceinline__ float RowFwd(float x, const float* p) {
  return Op::template Fwd<float>(x, p);
}
template <class Op>
__device__ __forceinline__ float RowBwd(float d, float s, const float* p) {
  if constexpr (Op::kGrad != unary::GradFrom::kNone) return Op::template Bwd<float>(d, s, p);
  else return d;  // never asked: only rows with Bwd register a derivative kernel
}

__device__ __forceinline__ float EvalUnary(const UnaryArgs& a, float x) {
  switch (static_cast<UnaryOpId>(a.op)) {
#define OF_ROW_CASE(Op) \
  case UnaryOpId::k##Op: return RowFwd<unary::Op>(x, a.p);
    ONEFLOW_UNARY_OPS(OF_ROW_CASE)
#undef OF_ROW_CASE
    default: return x;
  }
}

// dX for dY = d and the saved forward value s (X or Y, as the row's kGrad says).
__device__ __forceinline__ float EvalUnaryGrad(const UnaryArgs& a, float d, float s) {
  switch (static_cast<UnaryOpId>(a.op)) {
#define OF_ROW_CASE(Op) \
  case UnaryOpId::k##Op: return RowBwd<unary::Op>(d, s, a.p);
    ONEFLOW_UNARY_OPS(OF_ROW_CASE)
#undef OF_ROW_CASE
    default: return d;
  }
}

}  // namespace oneflow::cuda
