// Single-precision GEMM with packing, an AVX-512 microkernel and a fused epilogue; plus a simple
// reference GEMM for other types. Used by MatMul, Gemm, Conv, ConvTranspose and the fused ops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/isa_region.h"
#include "kernels/cpu/switches.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// Applied to each finished output tile while it is still in cache:
//   C = act(C + col_bias[j] + row_bias[i] + residual[i, j])
struct GemmEpilogue {
  const float* col_bias = nullptr;  // length N (MatMul/Gemm bias)
  const float* row_bias = nullptr;  // length M (Conv bias per output channel)
  const float* residual = nullptr;  // same layout and leading dimension as C
  ActivationParams act;
  bool empty() const { return !col_bias && !row_bias && !residual && act.kind == Activation::kNone; }
};

// An operand packed once into the microkernel's panel layout (constant weights).
class PackedMatrix {
 public:
  int64_t rows() const { return rows_; }  // M for A, K for B (logical, after transposition)
  int64_t cols() const { return cols_; }  // K for A, N for B
  bool is_a() const { return is_a_; }

 private:
  friend struct GemmImpl;
  bool is_a_ = false;
  int64_t rows_ = 0, cols_ = 0;
  std::shared_ptr<float> data_;
};

// Packs op(A) of shape [M, K] (A is [K, M] when trans) / op(B) of shape [K, N].
PackedMatrix PackGemmA(int64_t M, int64_t K, const float* A, int64_t lda, bool trans);
PackedMatrix PackGemmB(int64_t K, int64_t N, const float* B, int64_t ldb, bool trans);

// One GEMM operand: raw row-major data (optionally transposed) or a pre-packed matrix.
struct GemmOperand {
  const float* data = nullptr;
  int64_t ld = 0;
  bool trans = false;
  const PackedMatrix* packed = nullptr;
  static GemmOperand Raw(const float* d, int64_t ld, bool trans = false) { return {d, ld, trans, nullptr}; }
  static GemmOperand Packed(const PackedMatrix& p) { return {nullptr, 0, false, &p}; }
  // Both: Sgemm picks per call (oneDNN on the raw data for the shapes where it measured faster).
  static GemmOperand PackedOrRaw(const PackedMatrix& p, const float* d, int64_t ld, bool trans = false) {
    return {d, ld, trans, &p};
  }
};

// C[M, N] = alpha * op(A) op(B) + beta * C, then the epilogue; row-major C with leading dim ldc.
// beta == 0 never reads C (it may hold garbage). Parallel over `pool` (nullptr = this thread).
void Sgemm(int64_t M, int64_t N, int64_t K, float alpha, const GemmOperand& A, const GemmOperand& B, float beta,
           float* C, int64_t ldc, const GemmEpilogue* epilogue, ThreadPool* pool);

// Whether Sgemm hands raw-operand products to oneDNN's sgemm (one oneDNN call per slice of the
// output, each single-threaded on one of our pool threads): oneDNN is built in and the switch
// (SetDnnlGemmEnabled, switches.h) is on. It measured faster than our microkernel here
// (bench/gemm_bench.cc). Kernels created while it is on skip pre-packing their weights, since
// oneDNN's sgemm packs internally.
bool DnnlGemmEnabled();
// Whether Sgemm multiplies more than a few rows by a B of N columns through oneDNN from B's raw
// data when it is given beside the packed copy (GemmOperand::PackedOrRaw), not by the packed copy.
bool GemmPrefersRawB(int64_t N);
// While alive, oneDNN (an OpenMP build) runs single-threaded on the calling thread; the thread's
// previous OpenMP setting is restored afterwards (the host application may use OpenMP too).
class DnnlSingleThreadScope {
 public:
  DnnlSingleThreadScope();
  ~DnnlSingleThreadScope();
  DnnlSingleThreadScope(const DnnlSingleThreadScope&) = delete;
  DnnlSingleThreadScope& operator=(const DnnlSingleThreadScope&) = delete;
  static bool Available();  // false when the OpenMP runtime's setter cannot be found

 private:
  int previous_ = 0;
};

// Reference GEMM for any arithmetic T (f64 and integers): C = alpha*op(A)op(B) + beta*C.
template <typename T>
void ReferenceGemm(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda, bool transA, const T* B,
                   int64_t ldb, bool transB, T beta, T* C, int64_t ldc) {
  std::vector<T> row(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) {
    std::fill(row.begin(), row.end(), T(0));
    for (int64_t k = 0; k < K; ++k) {
      const T a = transA ? A[k * lda + i] : A[i * lda + k];
      if (transB) {
        for (int64_t j = 0; j < N; ++j) row[j] += a * B[j * ldb + k];
      } else {
        const T* b = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) row[j] += a * b[j];
      }
    }
    T* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = alpha * row[j] + (beta == T(0) ? T(0) : beta * c[j]);
  }
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
