// The batch geometry of numpy matmul, shared by MatMul (matmul.cc) and MatMulInteger
// (matmul_integer.cc): 1-D operands promoted to matrices, batch dims broadcast.
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"
#include "base/tensor.h"
#include "graph/infer_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// Batch geometry of a MatMul: operands viewed as [batch..., M, K] x [batch..., K, N].
struct MatMulShape {
  int64_t M = 1, K = 1, N = 1;
  Shape batch;                          // broadcast batch dims
  std::vector<int64_t> a_stride, b_stride;  // element strides per batch dim (0 = broadcast)
  int64_t BatchCount() const { return NumElements(batch); }
};

inline MatMulShape AnalyzeMatMul(const Shape& a, const Shape& b) {
  MatMulShape s;
  Shape ad = a, bd = b;
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  s.M = ad[ad.size() - 2];
  s.K = ad[ad.size() - 1];
  s.N = bd[bd.size() - 1];
  OF_REQUIRE(bd[bd.size() - 2] == s.K, "MatMul inner dimensions differ: ", ShapeToString(a), " x ", ShapeToString(b));
  Shape abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2);
  s.batch = BroadcastShapes(abatch, bbatch);
  const size_t r = s.batch.size();
  s.a_stride.assign(r, 0);
  s.b_stride.assign(r, 0);
  int64_t as = s.M * s.K, bs = s.K * s.N;
  for (size_t i = 0; i < r; ++i) {
    const size_t ai = abatch.size() - 1 - i, bi = bbatch.size() - 1 - i, oi = r - 1 - i;
    if (i < abatch.size()) {
      s.a_stride[oi] = abatch[ai] == 1 ? 0 : as;
      as *= abatch[ai];
    }
    if (i < bbatch.size()) {
      s.b_stride[oi] = bbatch[bi] == 1 ? 0 : bs;
      bs *= bbatch[bi];
    }
  }
  return s;
}

// Element offsets of batch item `index` into A and B.
inline void BatchOffsets(const MatMulShape& s, int64_t index, int64_t& a_off, int64_t& b_off) {
  a_off = b_off = 0;
  for (size_t d = s.batch.size(); d-- > 0;) {
    const int64_t i = index % s.batch[d];
    index /= s.batch[d];
    a_off += i * s.a_stride[d];
    b_off += i * s.b_stride[d];
  }
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
