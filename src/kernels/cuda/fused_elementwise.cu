// CUDA kernel: ai.oneflow FusedElementwise, one launch per fused node. Each thread takes kVec
// consecutive output elements (16 bytes of T), loads its operands (one 16-byte load for an operand
// laid out like the output when aligned, indexed loads for broadcast ones), runs the program on f32
// registers and stores once. The register file lives in shared memory, [register][lane][thread],
// so the program's run-time register numbers index it without spilling to local memory and each
// warp's accesses are conflict-free. The program is a __grid_constant__ parameter: indexed in place.
#include <cmath>

#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "graph/fused_elementwise_program.h"
#include "graph/op_schema.h"
#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/unary_math.cuh"

namespace oneflow::cuda {
namespace {

constexpr int kBlock = 128;  // 12 registers x 8 lanes x 128 threads x 4 bytes = 48 KiB at most

struct DeviceProgram {
  int num_code = 0, num_regs = 0, out_reg = 0;
  unsigned vector_inputs = 0;  // bit k: input k is laid out like the output and 16-byte aligned
  bool vector_output = false;
  bool index32 = false;        // every element index fits 32 bits (cheaper divisions)
  int4 code[kEwMaxInstructions];  // {op, dst, a, b}
  float constants[kEwMaxConstants];
  const void* inputs[kEwMaxInputs];
  int64_t div[kEwMaxInputs], mod[kEwMaxInputs];
};

// Lane j of a register of this thread: regs[j * kBlock].
template <int kVec, typename F>
__device__ __forceinline__ void Lanes1(float* d, const float* a, F f) {
#pragma unroll
  for (int j = 0; j < kVec; ++j) d[j * kBlock] = f(a[j * kBlock]);
}
template <int kVec, typename F>
__device__ __forceinline__ void Lanes2(float* d, const float* a, const float* b, F f) {
#pragma unroll
  for (int j = 0; j < kVec; ++j) d[j * kBlock] = f(a[j * kBlock], b[j * kBlock]);
}

// A unary row with its op fixed at compile time; its parameters are constants[param ...].
template <int kVec, class Op>
__device__ __forceinline__ void RowLanes(float* d, const float* a, const float* c, int param) {
  constexpr int kParams = Op::kParams.count;
  float p[unary::kMaxParams] = {};
#pragma unroll
  for (int i = 0; i < kParams; ++i) p[i] = c[param + i];
  Lanes1<kVec>(d, a, [&](float x) { return RowFwd<Op>(x, p); });
}

template <int kVec>
__device__ __forceinline__ void Arithmetic(int op, float* d, const float* a, const float* b, const float* c, int param) {
  switch (op) {
#define OF_EW_UNARY(Op) \
  case static_cast<int>(EwOp::k##Op): return RowLanes<kVec, unary::Op>(d, a, c, param);
    ONEFLOW_UNARY_OPS(OF_EW_UNARY)
#undef OF_EW_UNARY
#define OF_EW_BINARY(Op)                    \
  case static_cast<int>(EwOp::k##Op): \
    return Lanes2<kVec>(d, a, b, [](float x, float y) { return binary::Op::Fwd(x, y); });
    ONEFLOW_BINARY_OPS(OF_EW_BINARY)  // Max and Min propagate NaN from either side, as on the CPU
#undef OF_EW_BINARY
    default: return;
  }
}

// Operand k at output elements [base, base + kVec) into register d.
template <typename T, int kVec>
__device__ __forceinline__ void Load(const DeviceProgram& p, int k, int64_t base, bool whole, int64_t n, float* d) {
  const T* src = static_cast<const T*>(p.inputs[k]);
  if (whole && ((p.vector_inputs >> k) & 1u)) {
    const Pack<T, kVec> v = *reinterpret_cast<const Pack<T, kVec>*>(src + base);
#pragma unroll
    for (int j = 0; j < kVec; ++j) d[j * kBlock] = Convert<float>(v.v[j]);
    return;
  }
  const int64_t div = p.div[k], mod = p.mod[k];
  if (mod == 1) {
    const float v = Convert<float>(src[0]);
#pragma unroll
    for (int j = 0; j < kVec; ++j) d[j * kBlock] = v;
    return;
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const int64_t e = base + j;
    int64_t idx = 0;
    if (e < n) {
      if (p.index32) idx = (static_cast<uint32_t>(e) / static_cast<uint32_t>(div)) % static_cast<uint32_t>(mod);
      else idx = (e / div) % mod;
    }
    d[j * kBlock] = Convert<float>(src[idx]);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock) FusedElementwiseKernel(const __grid_constant__ DeviceProgram p,
                                                                 T* __restrict__ y, int64_t n) {
  constexpr int kVec = 16 / sizeof(T);
  extern __shared__ float regs[];
  auto reg = [&](int r) { return regs + r * kVec * kBlock + threadIdx.x; };
  const int64_t groups = (n + kVec - 1) / kVec;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlock;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; g < groups; g += stride) {
    const int64_t base = g * kVec;
    const bool whole = base + kVec <= n;
    for (int pc = 0; pc < p.num_code; ++pc) {
      const int4 in = p.code[pc];
      float* d = reg(in.y);
      if (in.x == static_cast<int>(EwOp::kLoad)) {
        Load<T, kVec>(p, in.z, base, whole, n, d);
      } else if (in.x == static_cast<int>(EwOp::kConst)) {
        const float c = p.constants[in.z];
#pragma unroll
        for (int j = 0; j < kVec; ++j) d[j * kBlock] = c;
      } else {
        Arithmetic<kVec>(in.x, d, reg(in.z), reg(in.w), p.constants, in.w);
      }
    }
    const float* r = reg(p.out_reg);
    if (whole && p.vector_output) {
      Pack<T, kVec> v;
#pragma unroll
      for (int j = 0; j < kVec; ++j) v.v[j] = Convert<T>(r[j * kBlock]);
      *reinterpret_cast<Pack<T, kVec>*>(y + base) = v;
    } else {
      for (int j = 0; j < kVec && base + j < n; ++j) y[base + j] = Convert<T>(r[j * kBlock]);
    }
  }
}

class FusedElementwiseCudaKernel final : public OpKernel {
 public:
  explicit FusedElementwiseCudaKernel(const KernelInitContext& c) {
    const std::string what = c.node().Describe();
    const EwProgram prog = EwProgram::FromAttrs(c.attrs(), kEwMaxInputs, what);
    inputs_read_ = prog.inputs_read();
    // Refused here, so placement runs the node on the CPU instead of failing a run.
    const DType dt = c.has_input(0) ? c.input_type(0).dtype : DType::kFloat32;
    OF_CHECK(dt == DType::kFloat32 || dt == DType::kFloat16 || dt == DType::kBFloat16, kUnsupported, what,
             ": dtype ", DTypeName(dt), " is not supported on CUDA");
    base_.num_code = static_cast<int>(prog.code.size());
    base_.num_regs = prog.num_registers;
    base_.out_reg = prog.output_register();
    for (size_t i = 0; i < prog.code.size(); ++i) {
      const EwInstr& in = prog.code[i];
      base_.code[i] = make_int4(static_cast<int>(in.op), in.dst, in.a, in.b);
    }
    std::copy(prog.constants.begin(), prog.constants.end(), base_.constants);
  }

  void Compute(KernelContext& ctx) override {
    Tensor& y = ctx.output(0);
    const int64_t n = y.numel();
    OF_REQUIRE(ctx.num_inputs() >= inputs_read_ && ctx.num_inputs() <= static_cast<size_t>(kEwMaxInputs),
               ctx.node_desc(), ": the program reads ", inputs_read_, " inputs, got ", ctx.num_inputs());
    DeviceProgram p = base_;
    for (size_t k = 0; k < ctx.num_inputs(); ++k) {
      const Tensor& x = ctx.input(k);
      OF_REQUIRE(x.dtype() == y.dtype(), ctx.node_desc(), ": input ", k, " is ", DTypeName(x.dtype()), ", the output ",
                 DTypeName(y.dtype()));
      const OperandIndexMap m = MakeOperandIndexMap(x.shape(), y.shape(), ctx.node_desc());
      p.inputs[k] = x.raw();
      p.div[k] = m.div;
      p.mod[k] = m.mod;
      if (m.div == 1 && m.mod == n && Aligned16(x.raw())) p.vector_inputs |= 1u << k;
    }
    p.vector_output = Aligned16(y.raw());
    p.index32 = n <= static_cast<int64_t>(UINT32_MAX);
    if (n == 0) return;
    cudaStream_t s = CurrentStream();
    DispatchFloat(y.dtype(), ctx.node_desc().c_str(), [&](auto tag) {
      using T = decltype(tag);
      constexpr int kVec = 16 / sizeof(T);
      const int64_t groups = (n + kVec - 1) / kVec;
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((groups + kBlock - 1) / kBlock, 65535));
      const size_t smem = static_cast<size_t>(p.num_regs) * kVec * kBlock * sizeof(float);
      FusedElementwiseKernel<T><<<blocks, kBlock, smem, s>>>(p, y.data<T>(), n);
    });
    OF_CUDA_CHECK_LAUNCH("FusedElementwiseKernel");
  }

 private:
  DeviceProgram base_;
  size_t inputs_read_ = 0;
};
ONEFLOW_CUDA_KERNEL_CLASS(FusedElementwise, FusedElementwiseCudaKernel);

}  // namespace
}  // namespace oneflow::cuda
