// Tensor-op data movement: the Transpose/strided-copy fast paths against a naive index loop, on
// large random tensors of every element size, plus end-to-end checks of a few kernels' edge cases.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>

#include "graph/ops/tensor_util.h"
#include "kernels/cpu/tensor_copy.h"
#include "kernels/kernel.h"

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

// Runs one registered CPU kernel directly on a 4-thread pool, so the parallel paths are exercised
// (the conformance runner uses one thread).
void RunKernel(const std::string& op, const AttrMap& attrs, std::vector<const Tensor*> inputs,
               std::vector<Tensor*> outputs) {
  static ThreadPool pool(4);
  Graph g;
  Node n;
  n.op_type = op;
  n.opset = 18;
  n.attrs = attrs;
  const KernelDef* def = KernelRegistry::Global().Find("", op, DeviceType::kCpu);
  ASSERT_NE(def, nullptr);
  auto kernel = def->factory(KernelInitContext(g, n));
  KernelContext ctx(n, pool);
  ctx.inputs() = inputs;
  ctx.outputs() = outputs;
  kernel->Compute(ctx);
}

Tensor Iota(DType dt, Shape shape) {
  Tensor t(dt, std::move(shape));
  DispatchAll(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = CastFromDouble<T>(static_cast<double>(i % 1000003));
  });
  return t;
}

Tensor Ints(std::vector<int64_t> v) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

TEST(TensorOps, ConcatSplitRoundTripThreaded) {
  Tensor a = Iota(DType::kFloat32, {64, 3, 500}), b = Iota(DType::kFloat32, {64, 7, 500});
  for (int64_t i = 0; i < b.numel(); ++i) b.data<float>()[i] += 0.5f;
  Tensor y = Tensor::Uninitialized(DType::kFloat32, {64, 10, 500});
  AttrMap attrs;
  attrs.set("axis", Attribute::Int(1));
  RunKernel("Concat", attrs, {&a, &b}, {&y});
  for (int64_t o = 0; o < 64; ++o)
    for (int64_t k = 0; k < 10; ++k)
      for (int64_t j = 0; j < 500; ++j) {
        float want = k < 3 ? a.data<float>()[(o * 3 + k) * 500 + j] : b.data<float>()[(o * 7 + k - 3) * 500 + j];
        ASSERT_EQ(y.data<float>()[(o * 10 + k) * 500 + j], want);
      }
  Tensor a2 = Tensor::Uninitialized(DType::kFloat32, {64, 3, 500}), b2 = Tensor::Uninitialized(DType::kFloat32, {64, 7, 500});
  RunKernel("Split", attrs, {&y}, {&a2, &b2});
  ASSERT_EQ(0, std::memcmp(a.raw(), a2.raw(), a.nbytes()));
  ASSERT_EQ(0, std::memcmp(b.raw(), b2.raw(), b.nbytes()));
}

TEST(TensorOps, GatherThreadedMatchesNaive) {
  Tensor x = Iota(DType::kFloat16, {5000, 64});
  std::vector<int64_t> iv;
  for (int i = 0; i < 20000; ++i) iv.push_back((i * 7919) % 10000 - 5000);  // negatives wrap
  Tensor idx = Ints(iv).Reshaped({100, 200});
  Tensor y = Tensor::Uninitialized(DType::kFloat16, {100, 200, 64});
  AttrMap attrs;
  attrs.set("axis", Attribute::Int(0));
  RunKernel("Gather", attrs, {&x, &idx}, {&y});
  const uint16_t* px = x.data<uint16_t>();
  const uint16_t* py = y.data<uint16_t>();
  for (size_t i = 0; i < iv.size(); ++i) {
    int64_t row = iv[i] < 0 ? iv[i] + 5000 : iv[i];
    ASSERT_EQ(0, std::memcmp(py + i * 64, px + row * 64, 64 * 2)) << i;
  }
}

TEST(TensorOps, SliceNegativeStepThreaded) {
  Tensor x = Iota(DType::kInt64, {300, 400});
  Tensor starts = Ints({-1, 5}), ends = Ints({std::numeric_limits<int64_t>::min(), 1000}), axes = Ints({0, 1}),
         steps = Ints({-2, 3});
  Tensor y = Tensor::Uninitialized(DType::kInt64, {150, 132});
  RunKernel("Slice", AttrMap(), {&x, &starts, &ends, &axes, &steps}, {&y});
  for (int64_t i = 0; i < 150; ++i)
    for (int64_t j = 0; j < 132; ++j)
      ASSERT_EQ(y.data<int64_t>()[i * 132 + j], x.data<int64_t>()[(299 - 2 * i) * 400 + 5 + 3 * j]);
}

TEST(TensorOps, PadReflectAndTriluThreaded) {
  Tensor x = Iota(DType::kFloat32, {40, 300, 50});
  Tensor pads = Ints({0, 3, 2, 0, 4, 5});
  Tensor y = Tensor::Uninitialized(DType::kFloat32, {40, 307, 57});
  AttrMap attrs;
  attrs.set("mode", Attribute::String("reflect"));
  RunKernel("Pad", attrs, {&x, &pads}, {&y});
  auto reflect = [](int64_t i, int64_t d) { return i < 0 ? -i : i >= d ? 2 * (d - 1) - i : i; };
  for (int64_t a = 0; a < 40; ++a)
    for (int64_t b = 0; b < 307; ++b)
      for (int64_t c = 0; c < 57; ++c)
        ASSERT_EQ(y.data<float>()[(a * 307 + b) * 57 + c],
                  x.data<float>()[(a * 300 + reflect(b - 3, 300)) * 50 + reflect(c - 2, 50)]);
  Tensor m = Iota(DType::kFloat32, {6, 200, 300});
  Tensor k = Ints({-3}).Reshaped({});
  Tensor t = Tensor::Uninitialized(DType::kFloat32, {6, 200, 300});
  AttrMap lower;
  lower.set("upper", Attribute::Int(0));
  RunKernel("Trilu", lower, {&m, &k}, {&t});
  for (int64_t i = 0; i < m.numel(); ++i) {
    int64_t r = (i / 300) % 200, c = i % 300;
    ASSERT_EQ(t.data<float>()[i], c <= r - 3 ? m.data<float>()[i] : 0.0f);
  }
}

}  // namespace
}  // namespace oneflow
