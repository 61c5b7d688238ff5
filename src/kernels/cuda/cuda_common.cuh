// Device-side helpers shared by the CUDA kernel files: f16/bf16 <-> f32, dtype dispatch, launch
// sizing, warp/block reductions, and numpy broadcasting index maps.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "base/error.h"
#include "base/tensor.h"
#include "device/cuda/cuda_check.h"

namespace oneflow::cuda {

template <typename T> struct IsHalf : std::false_type {};
template <> struct IsHalf<__half> : std::true_type {};
template <> struct IsHalf<__nv_bfloat16> : std::true_type {};

// Converts between any two supported element types; halves go through float.
template <typename D, typename S>
__device__ __forceinline__ D Convert(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<S, __half>) {
    return Convert<D>(__half2float(v));
  } else if constexpr (std::is_same_v<S, __nv_bfloat16>) {
    return Convert<D>(__bfloat162float(v));
  } else if constexpr (std::is_same_v<D, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<D, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<D>(v);
  }
}

// Calls fn(T{}) for the floating dtypes CUDA kernels compute (f32, f16, bf16); throws otherwise.
template <typename Fn>
void DispatchFloat(DType dt, const char* what, Fn&& fn) {
  switch (dt) {
    case DType::kFloat32: fn(float{}); return;
    case DType::kFloat16: fn(__half{}); return;
    case DType::kBFloat16: fn(__nv_bfloat16{}); return;
    default: Fail(ErrorCode::kUnsupported, what, ": dtype ", DTypeName(dt), " is not supported on CUDA");
  }
}

// Calls fn(U{}) with U the unsigned integer of `bytes` bytes (1, 2, 4, 8), for kernels that only move
// elements; false (fn not called) for any other size, so the caller reports it in its own words.
template <typename Fn>
bool DispatchBits(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1: fn(uint8_t{}); return true;
    case 2: fn(uint16_t{}); return true;
    case 4: fn(uint32_t{}); return true;
    case 8: fn(uint64_t{}); return true;
    default: return false;
  }
}

// kVec elements of T moved as one access (16 bytes for kVec = 16 / sizeof(T)).
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

inline bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

constexpr int kThreads = 256;
// Blocks for a grid-stride loop over `work` items: enough to fill the chip, capped for tiny launches.
inline unsigned GridFor(int64_t work) {
  const int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65535)));
}

// The device current for this thread (the one kernels launched now run on).
inline int CurrentDevice() {
  int d = 0;
  OF_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum across the block (blockDim.x a multiple of 32); every thread gets the result.
__device__ inline float BlockSum(float v) {
  __shared__ float smem[32];
  v = WarpSum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? smem[threadIdx.x] : 0.0f;
  if (warp == 0) {
    v = WarpSum(v);
    if (lane == 0) smem[0] = v;
  }
  __syncthreads();
  return smem[0];
}

constexpr int kMaxRank = 8;
// Output dims and per-input element strides (0 on broadcast dims), passed by value to kernels.
struct BroadcastMap {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[2][kMaxRank] = {};
};

// Builds the map of up to two inputs broadcast to `out` (inputs may have lower rank).
inline BroadcastMap MakeBroadcastMap(const Shape& out, const Shape& a, const Shape& b) {
  OF_CHECK(out.size() <= static_cast<size_t>(kMaxRank), kUnsupported, "CUDA broadcasting supports rank <= ",
           kMaxRank, ", got ", out.size());
  BroadcastMap m;
  m.rank = static_cast<int>(out.size());
  const Shape* ins[2] = {&a, &b};
  for (int k = 0; k < 2; ++k) {
    const Shape& s = *ins[k];
    OF_REQUIRE(s.size() <= out.size(), "broadcast: input ", ShapeToString(s), " has higher rank than ",
               ShapeToString(out));
    int64_t stride = 1;
    for (int d = m.rank - 1; d >= 0; --d) {
      const int sd = d - (m.rank - static_cast<int>(s.size()));
      const int64_t dim = sd >= 0 ? s[static_cast<size_t>(sd)] : 1;
      OF_REQUIRE(dim == 1 || dim == out[static_cast<size_t>(d)], "broadcast: ", ShapeToString(s),
                 " does not broadcast to ", ShapeToString(out));
      m.strides[k][d] = dim == 1 ? 0 : stride;
      stride *= dim;
    }
  }
  for (int d = 0; d < m.rank; ++d) m.dims[d] = out[static_cast<size_t>(d)];
  return m;
}

// Offsets of output element `i` in the two inputs.
__device__ __forceinline__ void BroadcastOffsets(const BroadcastMap& m, int64_t i, int64_t& oa, int64_t& ob) {
  oa = 0;
  ob = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    const int64_t idx = i % m.dims[d];
    i /= m.dims[d];
    oa += idx * m.strides[0][d];
    ob += idx * m.strides[1][d];
  }
}

// A reduction's index map, passed by value to kernels: the kept dims (one output element per
// position) and the reduced dims, outermost first, with their element strides in the input.
struct ReduceMap {
  int nk = 0, nr = 0;
  int64_t kdims[kMaxRank], kstrides[kMaxRank], rdims[kMaxRank], rstrides[kMaxRank];
  int64_t rcount = 1;  // positions reduced into each output element

  // Input offset of output element `o`'s first reduced position.
  __device__ int64_t KeptOffset(int64_t o) const {
    int64_t off = 0;
    for (int d = nk - 1; d >= 0; --d) {
      off += (o % kdims[d]) * kstrides[d];
      o /= kdims[d];
    }
    return off;
  }
  // Offset of the `r`-th reduced position (0 <= r < rcount) from an output element's first one.
  __device__ int64_t ReducedOffset(int64_t r) const {
    int64_t off = 0;
    for (int d = nr - 1; d >= 0; --d) {
      off += (r % rdims[d]) * rstrides[d];
      r /= rdims[d];
    }
    return off;
  }
};

}  // namespace oneflow::cuda
