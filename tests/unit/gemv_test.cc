// Sgemm's few-rows path (M <= 4 against a pre-packed B) vs a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/gemm.h"

namespace oneflow {
namespace {

TEST(SgemvPacked, MatchesReferenceForSmallM) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  ThreadPool pool(2);
  for (int64_t M : {1, 2, 3, 4}) {
    for (int64_t N : {1, 31, 77, 1024}) {
      for (int64_t K : {1, 5, 1500}) {
        for (bool trans_a : {false, true}) {
          std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N)), bias(static_cast<size_t>(N));
          for (auto& v : A) v = dist(rng);
          for (auto& v : B) v = dist(rng);
          for (auto& v : bias) v = dist(rng);
          std::vector<float> C(static_cast<size_t>(M * N), 0.25f);
          PackedMatrix packed = PackGemmB(K, N, B.data(), N, false);
          GemmEpilogue ep;
          ep.col_bias = bias.data();
          ep.act.kind = Activation::kRelu;
          const float alpha = 0.5f, beta = 2.0f;
          const int64_t lda = trans_a ? M : K;
          Sgemm(M, N, K, alpha, GemmOperand::Raw(A.data(), lda, trans_a), GemmOperand::Packed(packed), beta, C.data(),
                N, &ep, &pool);
          for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
              double acc = 0;
              for (int64_t k = 0; k < K; ++k)
                acc += static_cast<double>(trans_a ? A[k * M + i] : A[i * K + k]) * B[k * N + j];
              double want = std::max(0.0, alpha * acc + beta * 0.25 + bias[j]);
              ASSERT_NEAR(C[i * N + j], want, 1e-4 * (1 + std::fabs(want)))
                  << "M=" << M << " N=" << N << " K=" << K << " i=" << i << " j=" << j;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace oneflow
