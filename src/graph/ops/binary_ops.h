// The binary arithmetic ops, each formula written once. A row of ONEFLOW_BINARY_TABLE
// (graph/op_list.h) names a struct below holding the op's ONNX name, its cost, how SBP partial sums pass through it, whether its
// schema and kernels come from the row, its mixed-precision class, and its scalar formula
//
//   Fwd(a, b)      y = f(a, b)
//
// a template over the compute type C (float for f32/f16/bf16, double, and the integer types) that
// compiles for the host and for CUDA devices (OF_HD). Integer results are defined everywhere, as
// numpy's: +, -, * and powers wrap; x / 0 is 0 and INT_MIN / -1 wraps to INT_MIN. Max and Min
// propagate a NaN from either side. From the rows:
//   graph/ops/elementwise.cc            the schemas of the standalone rows (Add, Sub, Mul, Div)
//   kernels/cpu/binary.cc               the CPU kernels (and Max/Min/Sum/Mean's pairwise steps)
//   kernels/cuda/elementwise.cu         the CUDA kernels
//   graph/fused_elementwise_program.h   FusedElementwise's binary instructions (EwOp)
//   kernels/cpu/fused_elementwise.cc, kernels/cuda/fused_elementwise.cu  its interpreters
//   passes/elementwise_fusion.cc        which nodes the pass lowers to those instructions
//   passes/layout.cc                    which nodes NHWC transposes move through (all of them:
//                                       elementwise with broadcasting, no layout of their own)
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "graph/ops/unary_ops.h"  // OF_HD, unary::kCheap / kLibm

namespace oneflow {
namespace binary {

// Unsigned type wide enough that integer +, -, * wrap instead of overflowing (no UB, no promotion
// to int for the narrow types).
template <class C>
using WrapType = std::conditional_t<(sizeof(C) < 4), uint32_t, std::make_unsigned_t<C>>;

// x^y for integers by repeated squaring (exact where double pow would round for large int64);
// wraps like numpy. A negative exponent truncates toward 0: 1 and -1 keep their powers, every
// other base (0 too, rather than a trap) gives 0.
template <class T, class E>
OF_HD T IntPow(T x, E y) {
  if constexpr (std::is_signed_v<E>) {
    if (y < 0) {
      if (x == T(1)) return T(1);
      if constexpr (std::is_signed_v<T>) {
        if (x == T(-1)) return (y & 1) ? T(-1) : T(1);
      }
      return T(0);
    }
  }
  using W = WrapType<T>;
  W result = 1, base = static_cast<W>(x);
  while (y) {
    if (y & 1) result *= base;
    base *= base;
    y >>= 1;
  }
  return static_cast<T>(result);
}

// How SBP partial sums pass through the op (graph/ops/sbp_rules.h Linear): kBoth, P op P = P
// (Add, Sub); kEither, P op B and B op P are P (Mul); kFirst, P op B is P (Div).
enum class Linearity : uint8_t { kNone, kBoth, kEither, kFirst };

struct RowDefaults {
  static constexpr double kCost = unary::kCheap;
  static constexpr Linearity kLinearity = Linearity::kNone;
  // The schema and the kernels come from the row (otherwise written elsewhere: Pow takes mixed
  // types, Max and Min any number of inputs; their kernels still use the formula).
  static constexpr bool kStandalone = true;
  // Mixed precision (train/mixed_precision.cc): cheap enough to run in f16/bf16 when an input is.
  static constexpr bool kFollowsLowPrecision = true;
};

struct Add : RowDefaults {
  static constexpr const char* kName = op::kAdd;
  static constexpr Linearity kLinearity = Linearity::kBoth;
  template <class C>
  OF_HD static C Fwd(C a, C b) {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(WrapType<C>(a) + WrapType<C>(b));
    else return a + b;
  }
};
struct Sub : RowDefaults {
  static constexpr const char* kName = op::kSub;
  static constexpr Linearity kLinearity = Linearity::kBoth;
  template <class C>
  OF_HD static C Fwd(C a, C b) {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(WrapType<C>(a) - WrapType<C>(b));
    else return a - b;
  }
};
struct Mul : RowDefaults {
  static constexpr const char* kName = op::kMul;
  static constexpr Linearity kLinearity = Linearity::kEither;
  template <class C>
  OF_HD static C Fwd(C a, C b) {
    if constexpr (std::is_integral_v<C>) return static_cast<C>(WrapType<C>(a) * WrapType<C>(b));
    else return a * b;
  }
};
// Integer division truncates (C semantics, as ONNX); the two cases C leaves undefined get numpy's
// answers instead of a trap.
struct Div : RowDefaults {
  static constexpr const char* kName = op::kDiv;
  static constexpr Linearity kLinearity = Linearity::kFirst;
  template <class C>
  OF_HD static C Fwd(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return Sub::Fwd(C(0), a);
      }
    }
    return static_cast<C>(a / b);
  }
};
struct Pow : RowDefaults {
  static constexpr const char* kName = op::kPow;
  static constexpr double kCost = unary::kLibm;
  static constexpr bool kStandalone = false;
  static constexpr bool kFollowsLowPrecision = false;
  template <class C>
  OF_HD static C Fwd(C a, C b) {
    if constexpr (std::is_integral_v<C>) return IntPow(a, b);
    else if constexpr (std::is_same_v<C, float>) return ::powf(a, b);
    else return ::pow(a, b);
  }
};
struct Max : RowDefaults {
  static constexpr const char* kName = op::kMax;
  static constexpr bool kStandalone = false;
  static constexpr bool kFollowsLowPrecision = false;
  template <class C>
  OF_HD static C Fwd(C a, C b) { return (a != a || a > b) ? a : b; }  // a NaN on either side wins
};
struct Min : RowDefaults {
  static constexpr const char* kName = op::kMin;
  static constexpr bool kStandalone = false;
  static constexpr bool kFollowsLowPrecision = false;
  template <class C>
  OF_HD static C Fwd(C a, C b) { return (a != a || a < b) ? a : b; }
};

}  // namespace binary

// Every row, once: the order of BinaryOpId and of FusedElementwise's binary instructions.

enum class BinaryOpId : int16_t {
#define OF_BINARY_ID(Op) k##Op,
  ONEFLOW_BINARY_OPS(OF_BINARY_ID)
#undef OF_BINARY_ID
  kCount
};

// A row's facts as data, for code that looks ops up by name (passes, the schema registration).
struct BinaryOpInfo {
  BinaryOpId id;
  OpId op;  // its id in the op list
  const char* name;
  double cost;
  binary::Linearity linearity;
  bool standalone;
  bool follows_low_precision;
};

#define OF_BINARY_INFO(Op)                                                                                   \
  BinaryOpInfo{BinaryOpId::k##Op, OpId::k##Op, binary::Op::kName, binary::Op::kCost, binary::Op::kLinearity, \
               binary::Op::kStandalone, binary::Op::kFollowsLowPrecision},
inline constexpr BinaryOpInfo kBinaryOps[] = {ONEFLOW_BINARY_OPS(OF_BINARY_INFO)};
#undef OF_BINARY_INFO
static_assert(sizeof(kBinaryOps) / sizeof(kBinaryOps[0]) == static_cast<size_t>(BinaryOpId::kCount));

inline const BinaryOpInfo& BinaryInfo(BinaryOpId id) { return kBinaryOps[static_cast<int>(id)]; }
// The row of ONNX op `name` in `domain` ("" or "ai.onnx"); nullptr when there is none.
inline const BinaryOpInfo* FindBinaryOp(const std::string& domain, const std::string& name) {
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  for (const BinaryOpInfo& row : kBinaryOps)
    if (name == row.name) return &row;
  return nullptr;
}

}  // namespace oneflow
