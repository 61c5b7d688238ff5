// Strided copies and index helpers shared by the tensor-manipulation kernels.
#include "kernels/cpu/tensor_copy.h"

#include <algorithm>
#include <cstring>


#include "base/error.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i + 1)] * shape[static_cast<size_t>(i + 1)];
  return s;
}

namespace {

struct DimStride {
  int64_t size;
  int64_t stride;
};

// Drops size-1 dims and merges neighbours that are contiguous with each other in the source
// (the destination is contiguous, so it never blocks a merge).
std::vector<DimStride> Collapse(const Shape& shape, const std::vector<int64_t>& strides) {
  std::vector<DimStride> dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!dims.empty() && dims.back().stride == strides[i] * shape[i]) {
      dims.back().size *= shape[i];
      dims.back().stride = strides[i];
    } else {
      dims.push_back({shape[i], strides[i]});
    }
  }
  return dims;
}

// Source offset of the first element of "row" `row` over dims [0, n) (row-major), in elements.
int64_t RowOffset(const std::vector<DimStride>& dims, size_t n, int64_t row, std::vector<int64_t>& idx) {
  int64_t off = 0;
  idx.assign(n, 0);
  for (size_t k = n; k-- > 0;) {
    idx[k] = row % dims[k].size;
    row /= dims[k].size;
    off += idx[k] * dims[k].stride;
  }
  return off;
}

// Advances the odometer over dims [0, n) by one, returning the new source offset.
inline int64_t NextRow(const std::vector<DimStride>& dims, size_t n, std::vector<int64_t>& idx, int64_t off) {
  for (size_t k = n; k-- > 0;) {
    if (++idx[k] < dims[k].size) return off + dims[k].stride;
    off -= (dims[k].size - 1) * dims[k].stride;
    idx[k] = 0;
  }
  return off;
}

template <typename U>
void StridedRowsTyped(const U* src, U* dst, const std::vector<DimStride>& dims, int64_t begin, int64_t end) {
  const size_t n = dims.size() - 1;
  const int64_t len = dims[n].size, stride = dims[n].stride;
  std::vector<int64_t> idx;
  int64_t off = RowOffset(dims, n, begin, idx);
  for (int64_t r = begin; r < end; ++r) {
    const U* s = src + off;
    U* d = dst + r * len;
    if (stride == 0) {
      const U v = *s;
      for (int64_t j = 0; j < len; ++j) d[j] = v;
    } else {
      for (int64_t j = 0; j < len; ++j) d[j] = s[j * stride];
    }
    off = NextRow(dims, n, idx, off);
  }
}

// One 8x8 tile: out[r][c] = in[c * ld + r] for r, c < 8, through registers/local storage so that
// each source row and each destination row is touched as a whole.
template <typename U>
inline void Tile8x8(const U* in, int64_t ld, U* out, int64_t ldo) {
#if ONEFLOW_ISA_AVX
  if constexpr (sizeof(U) == 4) {
    __m256 r0 = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 0 * ld));
    __m256 r1 = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 1 * ld));
    __m256 r2 = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 2 * ld));
    __m256 r3 = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 3 * ld));
    __m256 r4 = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 4 * ld));
    __m256 r5 = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 5 * ld));
    __m256 r6 = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 6 * ld));
    __m256 r7 = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 7 * ld));
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    float* o = reinterpret_cast<float*>(out);
    _mm256_storeu_ps(o + 0 * ldo, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(o + 1 * ldo, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(o + 2 * ldo, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(o + 3 * ldo, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(o + 4 * ldo, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(o + 5 * ldo, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(o + 6 * ldo, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(o + 7 * ldo, _mm256_permute2f128_ps(u3, u7, 0x31));
    return;
  }
#endif
  U t[8][8];
  for (int c = 0; c < 8; ++c)
    for (int r = 0; r < 8; ++r) t[r][c] = in[c * ld + r];
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) out[r * ldo + c] = t[r][c];
}

// out[o][r][c] = src[base(o) + r + c * ld] for an [R, C] matrix per outer index. Work item w is
// (outer index, block of 64 rows); inside, 8x8 register tiles, with scalar loops at the edges.
constexpr int64_t kRowBlock = 64;

template <typename U>
void Transpose2DTyped(const U* src, U* dst, const std::vector<DimStride>& dims, int64_t begin, int64_t end) {
  const size_t n = dims.size() - 2;
  const int64_t R = dims[n].size, C = dims[n + 1].size, ld = dims[n + 1].stride;
  const int64_t row_blocks = (R + kRowBlock - 1) / kRowBlock;
  std::vector<int64_t> idx;
  int64_t o = begin / row_blocks;
  int64_t base = RowOffset(dims, n, o, idx);
  for (int64_t w = begin; w < end; ++w) {
    int64_t wo = w / row_blocks;
    if (wo != o) {
      base = NextRow(dims, n, idx, base);
      o = wo;
    }
    const int64_t r0 = (w % row_blocks) * kRowBlock, r1 = std::min(R, r0 + kRowBlock);
    U* out = dst + o * R * C;
    const U* in = src + base;
    const int64_t r8 = r0 + (r1 - r0) / 8 * 8, c8 = C / 8 * 8;
    for (int64_t c0 = 0; c0 < C; c0 += kRowBlock) {
      const int64_t c1 = std::min(C, c0 + kRowBlock), c1_8 = std::min(c1, c8);
      for (int64_t r = r0; r < r8; r += 8)
        for (int64_t c = c0; c < c1_8; c += 8) Tile8x8<U>(in + c * ld + r, ld, out + r * C + c, C);
      // Ragged edges: leftover columns for the tiled rows, then leftover rows.
      for (int64_t c = c1_8; c < c1; ++c)
        for (int64_t r = r0; r < r8; ++r) out[r * C + c] = in[c * ld + r];
      for (int64_t r = r8; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) out[r * C + c] = in[c * ld + r];
    }
  }
}

// The same [R, C] -> [C... ] swap when C (the output's inner dim) is below a tile: out[o][r][c] =
// src[base(o) + r + c * ld], e.g. NCHW -> NHWC of an image with 3 channels. Rows in blocks of
// kInterleaveRows; C is a template parameter for the common tiny cases so the loop unrolls.
constexpr int64_t kInterleaveRows = 1024;

template <typename U, int kC>
void InterleaveTyped(const U* src, U* dst, const std::vector<DimStride>& dims, int64_t begin, int64_t end) {
  const size_t n = dims.size() - 2;
  const int64_t R = dims[n].size, C = kC > 0 ? kC : dims[n + 1].size, ld = dims[n + 1].stride;
  const int64_t blocks = (R + kInterleaveRows - 1) / kInterleaveRows;
  std::vector<int64_t> idx;
  for (int64_t w = begin; w < end; ++w) {
    const int64_t o = w / blocks, r0 = (w % blocks) * kInterleaveRows, r1 = std::min(R, r0 + kInterleaveRows);
    const U* in = src + RowOffset(dims, n, o, idx);
    U* out = dst + o * R * C;
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < C; ++c) out[r * C + c] = in[c * ld + r];
  }
}

template <typename Fn>
void DispatchElemSize(size_t elem_size, Fn&& fn) {
  switch (elem_size) {
    case 1: fn(TypeTag<uint8_t>{}); break;
    case 2: fn(TypeTag<uint16_t>{}); break;
    case 4: fn(TypeTag<uint32_t>{}); break;
    case 8: fn(TypeTag<uint64_t>{}); break;
    default: Fail(ErrorCode::kInternal, "unsupported element size ", elem_size);
  }
}

void Parallel(ThreadPool* pool, int64_t n, double cost, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool) pool->ParallelFor(n, cost, fn);
  else fn(0, n);
}

}  // namespace

void StridedCopy(const void* src, void* dst, const Shape& shape, const std::vector<int64_t>& src_strides,
                 size_t elem_size, ThreadPool* pool) {
  OF_ASSERT(shape.size() == src_strides.size());
  const int64_t total = NumElements(shape);
  if (total == 0) return;
  std::vector<DimStride> dims = Collapse(shape, src_strides);
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  if (dims.empty()) {
    std::memcpy(d, s, elem_size);
    return;
  }
  const size_t m = dims.size();
  if (dims[m - 1].stride == 1) {
    // Contiguous inner runs: one memcpy per run.
    const int64_t run = dims[m - 1].size;
    const size_t run_bytes = static_cast<size_t>(run) * elem_size;
    const int64_t rows = total / run;
    if (rows == 1) {
      // One big contiguous block: split it across threads.
      Parallel(pool, static_cast<int64_t>((run_bytes + 65535) / 65536), 20000.0, [&](int64_t b, int64_t e) {
        size_t lo = static_cast<size_t>(b) * 65536, hi = std::min(run_bytes, static_cast<size_t>(e) * 65536);
        std::memcpy(d + lo, s + lo, hi - lo);
      });
      return;
    }
    Parallel(pool, rows, 10.0 + static_cast<double>(run_bytes) / 8.0, [&](int64_t b, int64_t e) {
      std::vector<int64_t> idx;
      int64_t off = RowOffset(dims, m - 1, b, idx);
      for (int64_t r = b; r < e; ++r) {
        std::memcpy(d + static_cast<size_t>(r) * run_bytes, s + off * static_cast<int64_t>(elem_size), run_bytes);
        off = NextRow(dims, m - 1, idx, off);
      }
    });
    return;
  }
  if (m >= 2 && dims[m - 2].stride == 1 && dims[m - 2].size >= 8 && dims[m - 1].size >= 8 && elem_size <= 8) {
    const int64_t R = dims[m - 2].size, C = dims[m - 1].size;
    const int64_t outer = total / (R * C), row_blocks = (R + kRowBlock - 1) / kRowBlock;
    DispatchElemSize(elem_size, [&](auto tag) {
      using U = typename decltype(tag)::type;
      Parallel(pool, outer * row_blocks, static_cast<double>(kRowBlock * C), [&](int64_t b, int64_t e) {
        Transpose2DTyped<U>(reinterpret_cast<const U*>(s), reinterpret_cast<U*>(d), dims, b, e);
      });
    });
    return;
  }
  if (m >= 2 && dims[m - 2].stride == 1 && dims[m - 2].size >= 64 && dims[m - 1].size < 8 && elem_size <= 8) {
    const int64_t R = dims[m - 2].size, C = dims[m - 1].size;
    const int64_t outer = total / (R * C), blocks = (R + kInterleaveRows - 1) / kInterleaveRows;
    DispatchElemSize(elem_size, [&](auto tag) {
      using U = typename decltype(tag)::type;
      Parallel(pool, outer * blocks, static_cast<double>(kInterleaveRows * C), [&](int64_t b, int64_t e) {
        const U* su = reinterpret_cast<const U*>(s);
        U* du = reinterpret_cast<U*>(d);
        if (C == 3) InterleaveTyped<U, 3>(su, du, dims, b, e);
        else if (C == 4) InterleaveTyped<U, 4>(su, du, dims, b, e);
        else if (C == 2) InterleaveTyped<U, 2>(su, du, dims, b, e);
        else InterleaveTyped<U, 0>(su, du, dims, b, e);
      });
    });
    return;
  }
  const int64_t len = dims[m - 1].size, rows = total / len;
  if (elem_size > 8 || (elem_size & (elem_size - 1)) != 0) {
    // Odd element sizes (never produced by our dtypes today): element-wise memcpy.
    for (int64_t i = 0; i < total; ++i) {
      int64_t rem = i, off = 0;
      for (size_t k = m; k-- > 0;) {
        off += (rem % dims[k].size) * dims[k].stride;
        rem /= dims[k].size;
      }
      std::memcpy(d + static_cast<size_t>(i) * elem_size, s + off * static_cast<int64_t>(elem_size), elem_size);
    }
    return;
  }
  DispatchElemSize(elem_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    Parallel(pool, rows, 10.0 + 2.0 * static_cast<double>(len), [&](int64_t b, int64_t e) {
      StridedRowsTyped<U>(reinterpret_cast<const U*>(s), reinterpret_cast<U*>(d), dims, b, e);
    });
  });
}

void TransposeCopy(const void* src, void* dst, const Shape& in_shape, const std::vector<int64_t>& perm,
                   size_t elem_size, ThreadPool* pool) {
  OF_ASSERT(perm.size() == in_shape.size());
  std::vector<int64_t> in_strides = ContiguousStrides(in_shape);
  Shape out_shape(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    out_shape[k] = in_shape[static_cast<size_t>(perm[k])];
    strides[k] = in_strides[static_cast<size_t>(perm[k])];
  }
  StridedCopy(src, dst, out_shape, strides, elem_size, pool);
}

static std::vector<int64_t> ToInt64(const Tensor& t, const std::string& who) {
  OF_CHECK(t.dtype() == DType::kInt64 || t.dtype() == DType::kInt32, kInvalidArgument, who,
           ": indices must be int32 or int64, got ", DTypeName(t.dtype()));
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kInt64) {
    if (t.numel()) std::memcpy(v.data(), t.raw(), t.nbytes());
  } else {
    const int32_t* p = t.data<int32_t>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = p[i];
  }
  return v;
}

std::vector<int64_t> ReadRawIndices(const Tensor& indices, const std::string& who) { return ToInt64(indices, who); }

std::vector<int64_t> ReadIndices(const Tensor& indices, int64_t dim, const std::string& who) {
  std::vector<int64_t> v = ToInt64(indices, who);
  for (int64_t& x : v) {
    if (x < -dim || x >= dim)
      Fail(ErrorCode::kRuntime, who, ": index ", x, " is out of range for a dimension of size ", dim);
    if (x < 0) x += dim;
  }
  return v;
}

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
