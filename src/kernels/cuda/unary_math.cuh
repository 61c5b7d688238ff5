// The unary activations and math of the CUDA elementwise kernels, in f32, shared by the unary
// kernels and fused epilogues (elementwise.cu) and FusedElementwise programs (fused_elementwise.cu).
#pragma once

#include <cmath>

#include "graph/fused_elementwise_program.h"
#include "kernels/cpu/elementwise_util.h"

namespace oneflow::cuda {

enum UnaryOp : int {
  kRelu, kLeakyRelu, kSigmoid, kTanh, kGelu, kGeluTanh, kHardSigmoid, kHardSwish, kClip,
  kExp, kLog, kNeg, kAbs, kSqrt, kReciprocal, kErf, kSoftplus, kIdentity,
};

// LaunchActivationInPlace maps the fused ops' Activation codes onto these by subtracting one.
static_assert(static_cast<int>(Activation::kRelu) - 1 == kRelu && static_cast<int>(Activation::kLeakyRelu) - 1 == kLeakyRelu &&
              static_cast<int>(Activation::kSigmoid) - 1 == kSigmoid && static_cast<int>(Activation::kTanh) - 1 == kTanh &&
              static_cast<int>(Activation::kGelu) - 1 == kGelu && static_cast<int>(Activation::kGeluTanh) - 1 == kGeluTanh &&
              static_cast<int>(Activation::kHardSigmoid) - 1 == kHardSigmoid &&
              static_cast<int>(Activation::kHardSwish) - 1 == kHardSwish && static_cast<int>(Activation::kClip) - 1 == kClip,
              "UnaryOp must follow the order of Activation");

struct UnaryParams {
  int op = kIdentity;
  float alpha = 0.0f, beta = 0.0f, lo = -INFINITY, hi = INFINITY;
};

// x clamped to [lo, hi] with NaN passing through; lo > hi gives hi (numpy.clip).
__device__ __forceinline__ float Clamp(float x, float lo, float hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}

__device__ __forceinline__ float ApplyUnary(const UnaryParams& p, float x) {
  switch (p.op) {
    case kRelu: return x > 0.0f ? x : 0.0f;
    case kLeakyRelu: return x >= 0.0f ? x : p.alpha * x;
    case kSigmoid: return 1.0f / (1.0f + expf(-x));
    case kTanh: return tanhf(x);
    case kGelu: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case kGeluTanh: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    // Clamps as selects, as the CPU kernels: a NaN stays NaN (fminf/fmaxf would drop it).
    case kHardSigmoid: return Clamp(p.alpha * x + p.beta, 0.0f, 1.0f);
    case kHardSwish: return x * Clamp(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f);
    case kClip: return Clamp(x, p.lo, p.hi);
    case kExp: return expf(x);
    case kLog: return logf(x);
    case kNeg: return -x;
    case kAbs: return fabsf(x);
    case kSqrt: return sqrtf(x);
    case kReciprocal: return 1.0f / x;
    case kErf: return erff(x);
    case kSoftplus: return x > 20.0f ? x : log1pf(expf(x));
    default: return x;
  }
}

// FusedElementwise's unary ops kRelu .. kSoftplus are these, in the same order.
static_assert(static_cast<int>(EwOp::kSoftplus) - static_cast<int>(EwOp::kRelu) == kSoftplus &&
              static_cast<int>(EwOp::kClip) - static_cast<int>(EwOp::kRelu) == kClip &&
              static_cast<int>(EwOp::kExp) - static_cast<int>(EwOp::kRelu) == kExp,
              "EwOp's unary ops must follow the order of UnaryOp");

}  // namespace oneflow::cuda
