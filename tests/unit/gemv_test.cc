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

namespace oneflow {
namespace {

// Products of >= 2 GFLOP on several threads take oneDNN's own thread team; compare that path with
// our microkernel (an independent implementation) and spot-check against double dot products.
TEST(SgemmLarge, OneDnnTeamMatchesOwnKernelAndReference) {
  if (!DnnlGemmEnabled()) GTEST_SKIP() << "oneDNN is not built in";
  const int64_t M = 1040, N = 1024, K = 1000;  // 2.1 GFLOP
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N)), bias(static_cast<size_t>(N));
  for (auto& v : A) v = dist(rng);
  for (auto& v : B) v = dist(rng);
  for (auto& v : bias) v = dist(rng);
  GemmEpilogue ep;
  ep.col_bias = bias.data();
  ep.act.kind = Activation::kRelu;
  ThreadPool pool(2);
  std::vector<float> team(static_cast<size_t>(M * N)), own(team.size());
  Sgemm(M, N, K, 1.0f, GemmOperand::Raw(A.data(), K), GemmOperand::Raw(B.data(), N), 0.0f, team.data(), N, &ep, &pool);
  PackedMatrix packed = PackGemmB(K, N, B.data(), N, false);  // packed B always takes our kernel
  Sgemm(M, N, K, 1.0f, GemmOperand::Raw(A.data(), K), GemmOperand::Packed(packed), 0.0f, own.data(), N, &ep, &pool);
  for (size_t i = 0; i < team.size(); ++i) ASSERT_NEAR(team[i], own[i], 2e-3f * (1.0f + std::fabs(own[i]))) << i;
  for (int64_t i : {int64_t{0}, M / 2, M - 1}) {
    for (int64_t j : {int64_t{0}, N / 3, N - 1}) {
      double acc = bias[static_cast<size_t>(j)];
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(A[i * K + k]) * B[k * N + j];
      ASSERT_NEAR(team[i * N + j], std::max(acc, 0.0), 1e-3 * (1 + std::fabs(acc)));
    }
  }
}

}  // namespace
}  // namespace oneflow
