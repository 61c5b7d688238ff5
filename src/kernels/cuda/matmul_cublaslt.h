// Row-major GEMM on cuBLASLt, shared by the MatMul/Gemm kernels and the GPU benchmark:
// D[b] = alpha * op(A[b]) op(B[b]) (+ beta * D[b]) (+ bias[N]) then an optional fused activation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "base/dtype.h"

namespace oneflow::cuda {

enum class LtEpilogue { kNone, kRelu, kGeluTanh };

struct LtGemm {
  DType dtype = DType::kFloat32;  // A, B, D and bias: f32, f16 or bf16 (f32 accumulation)
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // [m,k] (or [k,m] when trans_a), row-major, leading dim = its last dim
  const void* b = nullptr;  // [k,n] (or [n,k] when trans_b)
  void* d = nullptr;        // [m,n]
  float alpha = 1.0f, beta = 0.0f;  // beta != 0 accumulates into d
  const void* bias = nullptr;       // [n] or nullptr
  LtEpilogue epilogue = LtEpilogue::kNone;
  int64_t batch = 1;  // strided batches; a stride of 0 broadcasts that operand
  int64_t stride_a = 0, stride_b = 0, stride_d = 0;
};

// Runs on `stream` with a workspace from the device's caching allocator. Operands may be aligned to
// as little as their element size (views at odd offsets, borrowed device memory): each operand's
// alignment (its pointer, leading dimension and batch stride in bytes) is given to cuBLASLt's
// heuristic, and a bias aligned to less than 16 bytes is broadcast into D first (then accumulated,
// beta = 1) instead of being read by the epilogue; that needs beta == 0. Throws kUnsupported when
// cuBLASLt has no algorithm for the case.
void LtMatmul(const LtGemm& g, cudaStream_t stream);

// f32 GEMMs may use TF32 tensor cores (10-bit mantissa products, f32 accumulation). Off by default
// so f32 results match the CPU's; ONEFLOW_CUDA_ALLOW_TF32=1 in the environment turns it on.
void SetAllowTf32(bool allow);
bool AllowTf32();

}  // namespace oneflow::cuda
