// CPU kernel: ai.oneflow FusedElementwise. The output is cut into tiles of kTile elements; each
// instruction of the program runs over a whole tile of f32 registers on the stack (one simple
// loop per instruction, which GCC vectorizes), so the interpretation costs one switch per
// instruction per tile. Unary instructions are the rows' own formulas (graph/ops/unary_ops.h) and
// binary ones those of kernels/cpu/binary.cc, so fused and unfused graphs agree to rounding;
// f16/bf16 are widened on load and rounded once on store.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "graph/fused_elementwise_program.h"
#include "graph/op_schema.h"
#include "kernels/kernel.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

constexpr int64_t kTile = 512;

// Input `k` of the node as the program reads it.
template <typename T>
struct Operand {
  const T* data = nullptr;
  OperandIndexMap map;
};

// dst[0, len) = operand values for output elements [e, e + len).
template <typename T>
void Load(const Operand<T>& op, int64_t e, int64_t len, float* dst) {
  const T* src = op.data;
  const int64_t div = op.map.div, mod = op.map.mod;
  if (mod == 1) {
    const float v = static_cast<float>(src[0]);
    for (int64_t i = 0; i < len; ++i) dst[i] = v;
    return;
  }
  for (int64_t i = 0; i < len;) {
    const int64_t q = (e + i) / div, idx = q % mod;
    if (div == 1) {  // a contiguous run of the operand (all of it for a same-shape operand)
      const int64_t run = std::min(mod - idx, len - i);
      OF_IVDEP
      for (int64_t j = 0; j < run; ++j) dst[i + j] = static_cast<float>(src[idx + j]);
      i += run;
    } else {  // one operand value repeated over the rest of its block of div elements
      const int64_t run = std::min(div - (e + i) % div, len - i);
      const float v = static_cast<float>(src[idx]);
      for (int64_t j = 0; j < run; ++j) dst[i + j] = v;
      i += run;
    }
  }
}

// d[i] = f(a[i]) / f(a[i], b[i]) over a tile; d may be a or b (same index only).
template <typename F>
inline void Map1(float* d, const float* a, int64_t n, F f) {
  OF_IVDEP
  for (int64_t i = 0; i < n; ++i) d[i] = f(a[i]);
}
template <typename F>
inline void Map2(float* d, const float* a, const float* b, int64_t n, F f) {
  OF_IVDEP
  for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], b[i]);
}

// A unary row over a tile; its parameters are c[param ...] (FromAttrs checked that they exist).
template <class Op>
inline void MapRow(float* d, const float* a, int64_t n, const std::vector<float>& c, int32_t param) {
  float p[unary::kMaxParams] = {};
  for (int i = 0; i < Op::kParams.count; ++i) p[i] = c[static_cast<size_t>(param + i)];
  unary::WithFirstParam<Op>(p, [&, p1 = p[1]](auto first) {
    Map1(d, a, n, [first, p1](float v) {
      const float q[unary::kMaxParams] = {static_cast<float>(first), p1};
      return Op::Fwd(v, q);
    });
  });
}

// Runs one arithmetic instruction over a tile of n elements.
void Execute(const EwInstr& in, const std::vector<float>& c, float* d, const float* a, const float* b, int64_t n) {
  switch (in.op) {
#define OF_EW_ROW(Op) \
  case EwOp::k##Op: return MapRow<unary::Op>(d, a, n, c, in.b);
    ONEFLOW_UNARY_OPS(OF_EW_ROW)
#undef OF_EW_ROW
#define OF_EW_BINARY(Op) \
  case EwOp::k##Op: return Map2(d, a, b, n, [](float x, float y) { return binary::Op::Fwd(x, y); });
    ONEFLOW_BINARY_OPS(OF_EW_BINARY)
#undef OF_EW_BINARY
    default: Fail(ErrorCode::kInternal, "FusedElementwise: instruction ", EwOpName(in.op), " is not arithmetic");
  }
}

class FusedElementwiseKernel final : public OpKernel {
 public:
  explicit FusedElementwiseKernel(const KernelInitContext& c)
      : program_(EwProgram::FromAttrs(c.attrs(), kEwMaxInputs, c.node().Describe())) {
    for (const EwInstr& in : program_.code) cost_ += EwOpCost(in.op);
  }

  void Compute(KernelContext& ctx) override {
    Tensor& y = ctx.output(0);
    OF_REQUIRE(ctx.num_inputs() >= program_.inputs_read(), ctx.node_desc(), ": the program reads ",
               program_.inputs_read(), " inputs, got ", ctx.num_inputs());
    for (size_t k = 0; k < ctx.num_inputs(); ++k)
      OF_REQUIRE(ctx.input(k).dtype() == y.dtype(), ctx.node_desc(), ": input ", k, " is ",
                 DTypeName(ctx.input(k).dtype()), ", the output ", DTypeName(y.dtype()));
    switch (y.dtype()) {
      case DType::kFloat32: return Run<float>(ctx);
      case DType::kFloat16: return Run<Float16>(ctx);
      case DType::kBFloat16: return Run<BFloat16>(ctx);
      default: Fail(ErrorCode::kUnsupported, ctx.node_desc(), ": dtype ", DTypeName(y.dtype()), " (f32, f16, bf16 only)");
    }
  }

 private:
  template <typename T>
  void Run(KernelContext& ctx) const {
    Tensor& y = ctx.output(0);
    std::vector<Operand<T>> ops(ctx.num_inputs());
    for (size_t k = 0; k < ops.size(); ++k) {
      ops[k].data = ctx.input(k).data<T>();
      ops[k].map = MakeOperandIndexMap(ctx.input(k).shape(), y.shape(), ctx.node_desc());
    }
    T* out = y.data<T>();
    const int64_t numel = y.numel();
    const std::vector<EwInstr>& code = program_.code;
    ctx.pool().ParallelFor(numel, cost_, [&](int64_t begin, int64_t end) {
      alignas(64) float regs[kEwMaxRegisters][kTile];
      // Where each register's current value is read from: its buffer, or for an f32 operand laid
      // out like the output, the operand itself (no copy). Nothing is ever written through these.
      const float* src[kEwMaxRegisters];
      for (int64_t e = begin; e < end; e += kTile) {
        const int64_t n = std::min(kTile, end - e);
        bool stored = false;
        for (size_t pc = 0; pc < code.size(); ++pc) {
          const EwInstr& in = code[pc];
          float* d = regs[in.dst];
          if (in.op == EwOp::kLoad) {
            const Operand<T>& op = ops[static_cast<size_t>(in.a)];
            if constexpr (std::is_same_v<T, float>) {
              if (op.map.div == 1 && op.map.mod == numel) {
                src[in.dst] = op.data + e;
                continue;
              }
            }
            Load(op, e, n, d);
          } else if (in.op == EwOp::kConst) {
            std::fill(d, d + n, program_.constants[static_cast<size_t>(in.a)]);
          } else {
            // An f32 result is computed straight into the output.
            if constexpr (std::is_same_v<T, float>) {
              if (pc + 1 == code.size()) {
                d = out + e;
                stored = true;
              }
            }
            Execute(in, program_.constants, d, src[in.a], EwIsBinary(in.op) ? src[in.b] : nullptr, n);
          }
          src[in.dst] = d;
        }
        if (stored) continue;
        const float* r = src[program_.output_register()];
        T* o = out + e;
        OF_IVDEP
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(r[i]);
      }
    });
  }

  EwProgram program_;
  double cost_ = 0.0;
};
ONEFLOW_KERNEL_CLASS(FusedElementwise, FusedElementwiseKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
