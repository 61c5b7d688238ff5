// The program of an ai.oneflow FusedElementwise node (built by passes/elementwise_fusion.cc,
// run by kernels/cpu/fused_elementwise.cc and kernels/cuda/fused_elementwise.cu).
//
// A program is a straight-line list of instructions over a small file of f32 registers, evaluated
// independently for every output element. It is stored in three attributes:
//   program        ints, 4 per instruction: {op, dst, a, b}
//   constants      floats: scalar operands and op parameters
//   num_registers  int
// Operands by op kind:
//   kLoad   dst = input[a] at the element's broadcast position (see OperandIndexMap)
//   kConst  dst = constants[a]
//   unary   dst = op(reg a); parameterized ops read constants[b] (and constants[b + 1])
//   binary  dst = op(reg a, reg b)
// The result is the destination of the last instruction. All inputs and the output share one float
// dtype; the math is f32 whatever the storage (f16/bf16 round once, at the store).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/tensor.h"
#include "graph/attribute.h"
#include "graph/ops/binary_ops.h"
#include "graph/ops/unary_ops.h"

namespace oneflow {

// kLoad, kConst, then one unary instruction per row of graph/ops/unary_ops.h (in its order; a
// parameterized row reads its parameters from constants[b ...]), then one binary instruction per
// row of graph/ops/binary_ops.h.
enum class EwOp : int32_t {
  kLoad, kConst,
#define OF_EW_UNARY_OP(Op) k##Op,
  ONEFLOW_UNARY_OPS(OF_EW_UNARY_OP)
#undef OF_EW_UNARY_OP
  // binary: one per row of graph/ops/binary_ops.h, in its order
#define OF_EW_BINARY_OP(Op) k##Op,
  ONEFLOW_BINARY_OPS(OF_EW_BINARY_OP)
#undef OF_EW_BINARY_OP
  kCount
};
// The unary instructions are the rows, shifted past kLoad (UnaryOpId::kNone sits where kConst does).
static_assert(static_cast<int>(EwOp::kRelu) - static_cast<int>(UnaryOpId::kRelu) == static_cast<int>(EwOp::kConst));
constexpr EwOp EwOpOfRow(UnaryOpId id) { return static_cast<EwOp>(static_cast<int>(id) + static_cast<int>(EwOp::kConst)); }
constexpr UnaryOpId RowOfEwOp(EwOp op) { return static_cast<UnaryOpId>(static_cast<int>(op) - static_cast<int>(EwOp::kConst)); }
// The binary instructions are the binary rows, after the unary ones.
constexpr int kEwFirstBinary = static_cast<int>(UnaryOpId::kCount) + static_cast<int>(EwOp::kConst);
static_assert(static_cast<int>(EwOp::kCount) - kEwFirstBinary == static_cast<int>(BinaryOpId::kCount));
constexpr EwOp EwOpOfBinary(BinaryOpId id) { return static_cast<EwOp>(static_cast<int>(id) + kEwFirstBinary); }
constexpr BinaryOpId BinaryOfEwOp(EwOp op) { return static_cast<BinaryOpId>(static_cast<int>(op) - kEwFirstBinary); }

// Limits every kernel relies on (the pass keeps programs within them).
constexpr int kEwMaxRegisters = 12;
constexpr int kEwMaxInstructions = 64;
constexpr int kEwMaxInputs = 16;
constexpr int kEwMaxConstants = 64;

struct EwInstr {
  EwOp op;
  int32_t dst, a, b;
};

struct EwProgram {
  std::vector<EwInstr> code;
  std::vector<float> constants;
  int num_registers = 0;

  // Writes/reads the three attributes.
  void ToAttrs(AttrMap& attrs) const;
  // Decodes and validates against `num_inputs` (kernels, created before they see their inputs,
  // pass kEwMaxInputs and check inputs_read() when they run): known ops, registers and constant indices in range,
  // no register read before it is written, limits above. Throws kInvalidModel naming `what`.
  static EwProgram FromAttrs(const AttrMap& attrs, size_t num_inputs, const std::string& what);
  int output_register() const { return code.back().dst; }
  // 1 + the highest input index a kLoad reads (kernels check it against the inputs of each run).
  size_t inputs_read() const;
};

bool EwIsUnary(EwOp op);
bool EwIsBinary(EwOp op);
const char* EwOpName(EwOp op);
// Approximate cycles per element of one instruction on the CPU (for ParallelFor's grain).
double EwOpCost(EwOp op);

// Where an operand of shape `in` is read for output element e of shape `out`: (e / div) % mod. Every
// broadcast the pass allows fits: same shape (1, numel), a scalar (mod 1), a bias along trailing dims
// (1, numel(in)), a per-row value such as a mean over the last axis (inner size, numel(in)), or any
// contiguous block of dims. Throws kInvalidArgument naming `what` for any other broadcast.
struct OperandIndexMap {
  int64_t div = 1, mod = 1;
};
OperandIndexMap MakeOperandIndexMap(const Shape& in, const Shape& out, const std::string& what);

}  // namespace oneflow
