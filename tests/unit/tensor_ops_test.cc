// Tensor-op data movement: the Transpose/strided-copy fast paths against a naive index loop, on
// large random tensors of every element size, plus end-to-end checks of a few kernels' edge cases.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "graph/ops/tensor_util.h"
#include "kernels/cpu/tensor_copy.h"

namespace oneflow {
namespace {

// Reference: out[j] = in[sum_k idx_k(j) * in_stride[perm[k]]] with a plain multi-index walk.
template <typename U>
std::vector<U> NaiveTranspose(const std::vector<U>& in, const Shape& shape, const std::vector<int64_t>& perm) {
  const size_t r = shape.size();
  std::vector<int64_t> st(r, 1);
  for (size_t k = r - 1; k-- > 0;) st[k] = st[k + 1] * shape[k + 1];
  Shape out_shape(r);
  for (size_t k = 0; k < r; ++k) out_shape[k] = shape[static_cast<size_t>(perm[k])];
  std::vector<U> out(in.size());
  std::vector<int64_t> idx(r, 0);
  for (size_t j = 0; j < out.size(); ++j) {
    int64_t off = 0;
    for (size_t k = 0; k < r; ++k) off += idx[k] * st[static_cast<size_t>(perm[k])];
    out[j] = in[static_cast<size_t>(off)];
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < out_shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

template <typename U>
void CheckTranspose(const Shape& shape, const std::vector<int64_t>& perm, ThreadPool* pool) {
  std::mt19937_64 rng(shape.size() * 131 + static_cast<size_t>(perm[0]));
  std::vector<U> in(static_cast<size_t>(NumElements(shape)));
  for (U& v : in) v = static_cast<U>(rng());
  std::vector<U> want = NaiveTranspose(in, shape, perm);
  std::vector<U> got(in.size(), U(0));
  TransposeCopy(in.data(), got.data(), shape, perm, sizeof(U), pool);
  ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(U)))
      << "shape " << ShapeToString(shape) << " perm " << ShapeToString(perm) << " elem " << sizeof(U);
}

template <typename U>
void CheckAllCases(ThreadPool* pool) {
  // Attention layout [B,S,H,D] -> [B,H,S,D]: last axis kept, memcpy runs.
  CheckTranspose<U>({4, 128, 12, 64}, {0, 2, 1, 3}, pool);
  // Last-two swap: blocked 2-D transpose, with ragged block edges.
  CheckTranspose<U>({3, 257, 129}, {0, 2, 1}, pool);
  CheckTranspose<U>({1000, 997}, {1, 0}, pool);
  // [B,H,S,D] -> [B,H,D,S] (K transposed for attention scores).
  CheckTranspose<U>({2, 12, 100, 64}, {0, 1, 3, 2}, pool);
  // Rotations that collapse into a 2-D transpose, and fully general permutations.
  CheckTranspose<U>({30, 40, 50}, {2, 0, 1}, pool);
  CheckTranspose<U>({30, 40, 50}, {1, 2, 0}, pool);
  CheckTranspose<U>({7, 1, 33, 5, 9}, {3, 0, 4, 2, 1}, pool);
  CheckTranspose<U>({6, 5, 4, 3, 2}, {4, 3, 2, 1, 0}, pool);
  CheckTranspose<U>({64, 3, 64}, {2, 1, 0}, pool);
  // Identity and size-1 dims only.
  CheckTranspose<U>({5, 6, 7}, {0, 1, 2}, pool);
  CheckTranspose<U>({1, 1, 1}, {2, 0, 1}, pool);
}

TEST(TensorOps, TransposeMatchesNaiveSingleThread) {
  CheckAllCases<uint8_t>(nullptr);
  CheckAllCases<uint16_t>(nullptr);
  CheckAllCases<uint32_t>(nullptr);
  CheckAllCases<uint64_t>(nullptr);
}

TEST(TensorOps, TransposeMatchesNaiveThreaded) {
  ThreadPool pool(4);
  CheckAllCases<uint8_t>(&pool);
  CheckAllCases<uint16_t>(&pool);
  CheckAllCases<uint32_t>(&pool);
  CheckAllCases<uint64_t>(&pool);
}

TEST(TensorOps, StridedCopyBroadcastAndReverse) {
  ThreadPool pool(3);
  // Broadcast a [1, 300] row over 500 rows (stride 0), and a column [400, 1] over 300 columns.
  std::vector<float> row(300), col(400);
  std::iota(row.begin(), row.end(), 0.0f);
  std::iota(col.begin(), col.end(), 1000.0f);
  std::vector<float> out(500 * 300);
  StridedCopy(row.data(), out.data(), {500, 300}, {0, 1}, sizeof(float), &pool);
  for (int i = 0; i < 500; ++i)
    for (int j = 0; j < 300; ++j) ASSERT_EQ(out[static_cast<size_t>(i * 300 + j)], row[static_cast<size_t>(j)]);
  std::vector<float> out2(400 * 300);
  StridedCopy(col.data(), out2.data(), {400, 300}, {1, 0}, sizeof(float), &pool);
  for (int i = 0; i < 400; ++i)
    for (int j = 0; j < 300; ++j) ASSERT_EQ(out2[static_cast<size_t>(i * 300 + j)], col[static_cast<size_t>(i)]);
  // Reverse both axes of a [300, 200] matrix (negative strides from the last element).
  std::vector<int32_t> m(300 * 200);
  std::iota(m.begin(), m.end(), 0);
  std::vector<int32_t> rev(m.size());
  StridedCopy(m.data() + m.size() - 1, rev.data(), {300, 200}, {-200, -1}, sizeof(int32_t), &pool);
  for (size_t i = 0; i < m.size(); ++i) ASSERT_EQ(rev[i], m[m.size() - 1 - i]);
}

TEST(TensorOps, SliceClampingAndNegativeSteps) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  auto sl = ComputeSlice({10, 5}, {0, 1}, {kMax, 1000}, {}, {}, "t");
  EXPECT_EQ(sl[0].count, 10);
  EXPECT_EQ(sl[1].start, 1);
  EXPECT_EQ(sl[1].count, 4);
  sl = ComputeSlice({10}, {-1}, {std::numeric_limits<int64_t>::min()}, {0}, {-3}, "t");  // 9, 6, 3, 0
  EXPECT_EQ(sl[0].start, 9);
  EXPECT_EQ(sl[0].count, 4);
  sl = ComputeSlice({10}, {20}, {-20}, {-1}, {-1}, "t");  // start clamps to 9, end to -1: all 10
  EXPECT_EQ(sl[0].start, 9);
  EXPECT_EQ(sl[0].count, 10);
  sl = ComputeSlice({10}, {5}, {2}, {}, {}, "t");
  EXPECT_EQ(sl[0].count, 0);
  EXPECT_THROW(ComputeSlice({10}, {0}, {5}, {}, {0}, "t"), Error);
  EXPECT_THROW(ComputeSlice({10}, {0}, {5}, {1}, {}, "t"), Error);
}

TEST(TensorOps, IndicesWrapAndRejectOutOfRange) {
  Tensor idx(DType::kInt32, {3});
  idx.data<int32_t>()[0] = -1;
  idx.data<int32_t>()[1] = 0;
  idx.data<int32_t>()[2] = 4;
  std::vector<int64_t> v = ReadIndices(idx, 5, "Gather");
  EXPECT_EQ(v, (std::vector<int64_t>{4, 0, 4}));
  idx.data<int32_t>()[2] = 5;
  try {
    ReadIndices(idx, 5, "Gather 'g'");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("Gather 'g'"), std::string::npos);
  }
}

}  // namespace
}  // namespace oneflow
