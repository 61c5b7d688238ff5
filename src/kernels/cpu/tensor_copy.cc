// Strided copies and index helpers shared by the tensor-manipulation kernels.
#include "kernels/cpu/tensor_copy.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace oneflow {

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

// out[o][r][c] = src[base(o) + r + c * ld] for a [R, C] tile per outer index: blocked so both the
// reads and the writes stay within a few cache lines.
template <typename U>
void Transpose2DTyped(const U* src, U* dst, const std::vector<DimStride>& dims, int64_t begin, int64_t end) {
  const size_t n = dims.size() - 2;
  const int64_t R = dims[n].size, C = dims[n + 1].size, ld = dims[n + 1].stride;
  constexpr int64_t B = 32;
  const int64_t row_blocks = (R + B - 1) / B;
  std::vector<int64_t> idx;
  int64_t o = begin / row_blocks;
  int64_t base = RowOffset(dims, n, o, idx);
  for (int64_t w = begin; w < end; ++w) {
    int64_t wo = w / row_blocks;
    if (wo != o) {
      base = NextRow(dims, n, idx, base);
      o = wo;
    }
    const int64_t r0 = (w % row_blocks) * B, r1 = std::min(R, r0 + B);
    U* out = dst + o * R * C;
    const U* in = src + base;
    for (int64_t c0 = 0; c0 < C; c0 += B) {
      const int64_t c1 = std::min(C, c0 + B);
      for (int64_t c = c0; c < c1; ++c) {
        const U* s = in + c * ld;
        for (int64_t r = r0; r < r1; ++r) out[r * C + c] = s[r];
      }
    }
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
    const int64_t outer = total / (R * C), row_blocks = (R + 31) / 32;
    DispatchElemSize(elem_size, [&](auto tag) {
      using U = typename decltype(tag)::type;
      Parallel(pool, outer * row_blocks, 32.0 * static_cast<double>(C), [&](int64_t b, int64_t e) {
        Transpose2DTyped<U>(reinterpret_cast<const U*>(s), reinterpret_cast<U*>(d), dims, b, e);
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

}  // namespace oneflow
