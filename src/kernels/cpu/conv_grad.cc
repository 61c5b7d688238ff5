// CPU kernels: the backward ops of Conv and ConvTranspose (ConvGradData, ConvGradFilter, ConvGradBias,
// ConvTransposeGradData, ConvTransposeGradFilter), 1-D/2-D/3-D, groups, strides, dilations, pads.
//
// Every op is one of three products of a convolution "input I -> output O" (ConvTranspose is the
// data gradient of the Conv that maps its output back to its input, so its grads are the Conv's
// forward and filter gradient with the roles swapped):
//   forward        O_g   = W_g  . im2col(I_g)
//   data grad      dI_g  = col2im(W_g^T . dO_g)
//   filter grad    dW_g  = dO_g . im2col(I_g)^T
// Several images go into one GEMM (their columns side by side), because training images are often
// small (8x8 digits, 32x32 CIFAR) and a per-image GEMM with K or N = H*W would starve the
// microkernel; the batch is cut into chunks so the column matrix stays within a fixed budget.
// Depthwise convs skip the GEMMs (one row per group) for direct loops.
#include <cstring>

#include "graph/op_schema.h"
#include "graph/ops/conv_shape.h"
#include "kernels/cpu/half_compute.h"
#include "kernels/kernel.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/reduce_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

namespace {

// Elements of the column matrix (and of the gathered output rows) per chunk of images: 4 MiB of
// f32, so what im2col wrote is still largely in cache when the GEMM reads it (measured 1.2-1.4x
// faster on the 3x3 layers of bench/nn_grad_bench.cc than 16 MiB chunks).
constexpr int64_t kColBudget = int64_t{1} << 20;
// Fewest input channels per group for which a stride-1 data gradient runs as a convolution.
constexpr int64_t kMinRowsAsConv = 32;

template <typename T>
T* Scratch(int which, size_t n) {
  thread_local std::vector<T> bufs[2];
  if (bufs[which].size() < n) bufs[which].resize(n);
  return bufs[which].data();
}

// The valid output columns [lo, hi) of one kernel tap along the innermost dim: 0 <= ow*s + off < in.
inline void TapRange(const ConvPlan& p, int64_t off, int64_t* lo, int64_t* hi) {
  int64_t a = off >= 0 ? 0 : (-off + p.s[2] - 1) / p.s[2];
  int64_t b = p.in[2] - off <= 0 ? 0 : (p.in[2] - off - 1) / p.s[2] + 1;
  a = std::min(a, p.out[2]);
  *lo = a;
  *hi = std::max(a, std::min(b, p.out[2]));
}

// col[(c, kd, kh, kw), n * out_size + (od, oh, ow)] = I[n, c, od*s - p + kd*d, ...] (0 outside) for
// `nb` images; `x` is image 0's first channel of the group, images are C * in_size apart.
template <typename T>
void Im2ColBatch(const ConvPlan& p, const T* x, int64_t nb, T* col, ThreadPool& pool) {
  const int64_t rows = p.Cg * p.kernel_size, L = nb * p.out_size;
  pool.ParallelFor(rows * nb, static_cast<double>(p.out_size) + 8.0, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t r = t / nb, n = t % nb;
      const int64_t kw = r % p.k[2], kh = (r / p.k[2]) % p.k[1], kd = (r / (p.k[2] * p.k[1])) % p.k[0];
      const int64_t c = r / p.kernel_size;
      const T* xc = x + n * p.C * p.in_size + c * p.in_size;
      T* dst = col + r * L + n * p.out_size;
      const int64_t off = kw * p.d[2] - p.p[2];
      int64_t lo, hi;
      TapRange(p, off, &lo, &hi);
      for (int64_t od = 0; od < p.out[0]; ++od) {
        const int64_t id = od * p.s[0] - p.p[0] + kd * p.d[0];
        for (int64_t oh = 0; oh < p.out[1]; ++oh) {
          T* drow = dst + (od * p.out[1] + oh) * p.out[2];
          const int64_t ih = oh * p.s[1] - p.p[1] + kh * p.d[1];
          if (id < 0 || id >= p.in[0] || ih < 0 || ih >= p.in[1]) {
            std::fill(drow, drow + p.out[2], T(0));
            continue;
          }
          const T* srow = xc + (id * p.in[1] + ih) * p.in[2] + off;
          std::fill(drow, drow + lo, T(0));
          if (p.s[2] == 1) {
            std::memcpy(drow + lo, srow + lo, static_cast<size_t>(hi - lo) * sizeof(T));
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) drow[ow] = srow[ow * p.s[2]];
          }
          std::fill(drow + hi, drow + p.out[2], T(0));
        }
      }
    }
  });
}

// The adjoint of Im2ColBatch: dI[n, c, ...] += every column entry that im2col read from there.
// `dx` must hold zeros (or a sum to add to). Parallel over (image, channel): each owns its plane.
template <typename T>
void Col2ImBatch(const ConvPlan& p, const T* col, int64_t nb, T* dx, ThreadPool& pool) {
  const int64_t L = nb * p.out_size;
  pool.ParallelFor(nb * p.Cg, static_cast<double>(p.kernel_size * p.out_size) + 8.0, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / p.Cg, c = t % p.Cg;
      T* xc = dx + n * p.C * p.in_size + c * p.in_size;
      for (int64_t kd = 0; kd < p.k[0]; ++kd)
        for (int64_t kh = 0; kh < p.k[1]; ++kh)
          for (int64_t kw = 0; kw < p.k[2]; ++kw) {
            const int64_t r = ((c * p.k[0] + kd) * p.k[1] + kh) * p.k[2] + kw;
            const T* src = col + r * L + n * p.out_size;
            const int64_t off = kw * p.d[2] - p.p[2];
            int64_t lo, hi;
            TapRange(p, off, &lo, &hi);
            for (int64_t od = 0; od < p.out[0]; ++od) {
              const int64_t id = od * p.s[0] - p.p[0] + kd * p.d[0];
              if (id < 0 || id >= p.in[0]) continue;
              for (int64_t oh = 0; oh < p.out[1]; ++oh) {
                const int64_t ih = oh * p.s[1] - p.p[1] + kh * p.d[1];
                if (ih < 0 || ih >= p.in[1]) continue;
                const T* srow = src + (od * p.out[1] + oh) * p.out[2];
                T* drow = xc + (id * p.in[1] + ih) * p.in[2] + off;
                if (p.s[2] == 1) {
                  for (int64_t ow = lo; ow < hi; ++ow) drow[ow] += srow[ow];
                } else {
                  for (int64_t ow = lo; ow < hi; ++ow) drow[ow * p.s[2]] += srow[ow];
                }
              }
            }
          }
    }
  });
}

// Between the NCHW output of group g for images [n0, n0 + nb) and a dense [Mg, nb * out_size]
// matrix (the GEMM operand): gather (to_dense) or scatter.
template <typename T>
void GroupRows(const ConvPlan& p, T* nchw, int64_t n0, int64_t nb, int64_t g, T* dense, bool to_dense,
               ThreadPool& pool) {
  const int64_t L = nb * p.out_size;
  const size_t bytes = static_cast<size_t>(p.out_size) * sizeof(T);
  pool.ParallelFor(p.Mg * nb, static_cast<double>(p.out_size) / 4 + 8.0, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t m = t / nb, n = t % nb;
      T* a = nchw + ((n0 + n) * p.M + g * p.Mg + m) * p.out_size;
      T* b = dense + m * L + n * p.out_size;
      if (to_dense)
        std::memcpy(b, a, bytes);
      else
        std::memcpy(a, b, bytes);
    }
  });
}

// C[M, N] = op(A) op(B) + beta * C: the packed SGEMM for f32, the reference GEMM for f64.
template <typename T>
void GemmT(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, bool ta, const T* B, int64_t ldb, bool tb, T beta,
           T* C, int64_t ldc, ThreadPool& pool) {
  if constexpr (std::is_same_v<T, float>) {
    Sgemm(M, N, K, 1.0f, GemmOperand::Raw(A, lda, ta), GemmOperand::Raw(B, ldb, tb), beta, C, ldc, nullptr, &pool);
  } else {
    ReferenceGemm<T>(M, N, K, T(1), A, lda, ta, B, ldb, tb, beta, C, ldc);
  }
}

// Images per chunk: the column matrix ([Cg * k, L]) and the gathered output rows ([Mg, L]) both
// stay within the budget.
int64_t ChunkImages(const ConvPlan& p) {
  const int64_t per_image = std::max<int64_t>(1, std::max(p.Cg * p.kernel_size, p.Mg) * p.out_size);
  return std::max<int64_t>(1, std::min<int64_t>(p.N, kColBudget / per_image));
}

// Depthwise convs (one input and one output channel per group) as direct loops: a per-group GEMM
// would have one row, and a parallel region per group costs more than its work. Calls
// fn(dy_row, x_row, lo, hi, tap) for every (output row, kernel tap) pair of plane (n, c) whose rows
// overlap, with x_row offset so that output column ow reads x_row[ow * s].
template <typename T, typename Fn>
void ForEachDepthwiseRow(const ConvPlan& p, const T* dy, const T* x, int64_t n, int64_t c, Fn&& fn) {
  const T* dyc = dy + (n * p.M + c) * p.out_size;
  const T* xc = x + (n * p.C + c) * p.in_size;
  for (int64_t kd = 0; kd < p.k[0]; ++kd)
    for (int64_t kh = 0; kh < p.k[1]; ++kh)
      for (int64_t kw = 0; kw < p.k[2]; ++kw) {
        const int64_t tap = (kd * p.k[1] + kh) * p.k[2] + kw, off = kw * p.d[2] - p.p[2];
        int64_t lo, hi;
        TapRange(p, off, &lo, &hi);
        for (int64_t od = 0; od < p.out[0]; ++od) {
          const int64_t id = od * p.s[0] - p.p[0] + kd * p.d[0];
          if (id < 0 || id >= p.in[0]) continue;
          for (int64_t oh = 0; oh < p.out[1]; ++oh) {
            const int64_t ih = oh * p.s[1] - p.p[1] + kh * p.d[1];
            if (ih < 0 || ih >= p.in[1]) continue;
            fn(dyc + (od * p.out[1] + oh) * p.out[2], xc + (id * p.in[1] + ih) * p.in[2] + off, lo, hi, tap);
          }
        }
      }
}

// dX of a depthwise conv, parallel over (n, c) planes.
template <typename T>
void DepthwiseDataGrad(const ConvPlan& p, const T* dy, const T* w, T* dx, ThreadPool& pool) {
  pool.ParallelFor(p.N * p.C, 2.0 * static_cast<double>(p.kernel_size * p.out_size) + 8.0, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t n = t / p.C, c = t % p.C;
      std::fill(dx + t * p.in_size, dx + (t + 1) * p.in_size, T(0));
      const T* wc = w + c * p.kernel_size;
      // dx is written through x_row: ForEachDepthwiseRow offsets it like the input it reads.
      ForEachDepthwiseRow<T>(p, dy, dx, n, c, [&](const T* g, const T* xr, int64_t lo, int64_t hi, int64_t tap) {
        T* d = const_cast<T*>(xr);
        const T wv = wc[tap];
        if (p.s[2] == 1) {
          for (int64_t ow = lo; ow < hi; ++ow) d[ow] += wv * g[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) d[ow * p.s[2]] += wv * g[ow];
        }
      });
    }
  });
}

// dW of a depthwise conv, parallel over channels (each sums over the batch).
template <typename T>
void DepthwiseFilterGrad(const ConvPlan& p, const T* x, const T* dy, T* dw, ThreadPool& pool) {
  pool.ParallelFor(p.C, 2.0 * static_cast<double>(p.N * p.kernel_size * p.out_size) + 8.0, [&](int64_t b, int64_t e) {
    // Per tap, products accumulate column-wise over every row (vectorizable like the forward);
    // each tap's columns are summed once at the end rather than one short dot product per row.
    std::vector<T> acc(static_cast<size_t>(p.kernel_size * p.out[2]));
    for (int64_t c = b; c < e; ++c) {
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t n = 0; n < p.N; ++n)
        ForEachDepthwiseRow<T>(p, dy, x, n, c, [&](const T* g, const T* xr, int64_t lo, int64_t hi, int64_t tap) {
          T* a = acc.data() + tap * p.out[2];
          if (p.s[2] == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) a[ow] += g[ow] * xr[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) a[ow] += g[ow] * xr[ow * p.s[2]];
          }
        });
      T* wc = dw + c * p.kernel_size;
      for (int64_t t = 0; t < p.kernel_size; ++t) {
        const T* a = acc.data() + t * p.out[2];
        wc[t] = LaneSum<T>(p.out[2], [&](int64_t i) { return a[i]; });
      }
    }
  });
}

bool IsDepthwise(const ConvPlan& p) { return p.Cg == 1 && p.Mg == 1; }

// O = conv(I, W) (no bias) for the whole batch.
template <typename T>
void ConvForwardCore(const ConvPlan& p, const T* x, const T* w, T* y, ThreadPool& pool) {
  const int64_t kdim = p.Cg * p.kernel_size, chunk = ChunkImages(p);
  for (int64_t n0 = 0; n0 < p.N; n0 += chunk) {
    const int64_t nb = std::min(chunk, p.N - n0), L = nb * p.out_size;
    T* col = Scratch<T>(0, static_cast<size_t>(kdim * L));
    T* dense = Scratch<T>(1, static_cast<size_t>(p.Mg * L));
    for (int64_t g = 0; g < p.G; ++g) {
      Im2ColBatch<T>(p, x + (n0 * p.C + g * p.Cg) * p.in_size, nb, col, pool);
      GemmT<T>(p.Mg, L, kdim, w + g * p.Mg * kdim, kdim, false, col, L, false, T(0), dense, L, pool);
      GroupRows<T>(p, y, n0, nb, g, dense, false, pool);
    }
  }
}

// With stride 1 the data gradient is itself a convolution: of dO by W with its channel axes swapped
// and its taps reversed, padded by (k - 1) * d - p. That runs the forward's im2col + GEMM, whose
// GEMM has depth Mg * k (not Mg) and which needs no scatter-add: measured 1.6-1.8x faster than the
// col2im form on 3x3 layers with 64-128 input channels, but slower when the GEMM has few rows (the
// input channels per group): below kMinRowsAsConv the col2im form is used (bench/nn_grad_bench.cc).
template <typename T>
void ConvDataGradAsConv(const ConvPlan& p, const T* dy, const T* w, T* dx, ThreadPool& pool) {
  ConvPlan q = p;
  std::swap(q.C, q.M);
  std::swap(q.Cg, q.Mg);
  for (int i = 0; i < 3; ++i) {
    std::swap(q.in[i], q.out[i]);
    q.p[i] = (p.k[i] - 1) * p.d[i] - p.p[i];
  }
  std::swap(q.in_size, q.out_size);
  // wt[g, c, m, K-1-t] = w[g, m, c, t]: per group [Cg, Mg, K] from [Mg, Cg, K].
  const int64_t K = p.kernel_size;
  std::vector<T> wt(static_cast<size_t>(p.M * p.Cg * K));
  for (int64_t g = 0; g < p.G; ++g)
    for (int64_t m = 0; m < p.Mg; ++m)
      for (int64_t c = 0; c < p.Cg; ++c) {
        const T* src = w + ((g * p.Mg + m) * p.Cg + c) * K;
        T* dst = wt.data() + ((g * p.Cg + c) * p.Mg + m) * K;
        for (int64_t t = 0; t < K; ++t) dst[K - 1 - t] = src[t];
      }
  ConvForwardCore<T>(q, dy, wt.data(), dx, pool);
}

// dI = the data gradient of conv(I, W) for the upstream dO.
template <typename T>
void ConvDataGradCore(const ConvPlan& p, const T* dy, const T* w, T* dx, ThreadPool& pool) {
  if (IsDepthwise(p)) return DepthwiseDataGrad<T>(p, dy, w, dx, pool);
  if (p.s[0] == 1 && p.s[1] == 1 && p.s[2] == 1 && p.Cg >= kMinRowsAsConv)
    return ConvDataGradAsConv<T>(p, dy, w, dx, pool);
  const int64_t kdim = p.Cg * p.kernel_size, chunk = ChunkImages(p);
  std::memset(dx, 0, static_cast<size_t>(p.N * p.C * p.in_size) * sizeof(T));
  for (int64_t n0 = 0; n0 < p.N; n0 += chunk) {
    const int64_t nb = std::min(chunk, p.N - n0), L = nb * p.out_size;
    T* col = Scratch<T>(0, static_cast<size_t>(kdim * L));
    T* dense = Scratch<T>(1, static_cast<size_t>(p.Mg * L));
    for (int64_t g = 0; g < p.G; ++g) {
      GroupRows<T>(p, const_cast<T*>(dy), n0, nb, g, dense, true, pool);
      GemmT<T>(kdim, L, p.Mg, w + g * p.Mg * kdim, kdim, true, dense, L, false, T(0), col, L, pool);
      Col2ImBatch<T>(p, col, nb, dx + (n0 * p.C + g * p.Cg) * p.in_size, pool);
    }
  }
}

// dw[M, N] = dense[M, K] . col[N, K]^T + beta * dw. The product is small and its depth K (images x
// positions) long, so f32 splits K across the pool: each thread reads only its share of the column
// matrix (row slabs would each stream all of it) into a private partial, and the partials are summed.
template <typename T>
void FilterGemm(int64_t M, int64_t N, int64_t K, const T* dense, const T* col, T beta, T* dw, ThreadPool& pool) {
  const int64_t parts = std::min<int64_t>(pool.num_threads(), K / 256);
  if constexpr (std::is_same_v<T, float>) {
    if (parts > 1) {
      std::vector<float> partial(static_cast<size_t>(parts * M * N));
      pool.ParallelFor(
          parts, 2.0 * static_cast<double>(M * N) * static_cast<double>(K) / parts, [&](int64_t b, int64_t e) {
            for (int64_t t = b; t < e; ++t) {
              const int64_t k0 = K * t / parts, k1 = K * (t + 1) / parts;
              Sgemm(M, N, k1 - k0, 1.0f, GemmOperand::Raw(dense + k0, K), GemmOperand::Raw(col + k0, K, true), 0.0f,
                    partial.data() + t * M * N, N, nullptr, nullptr);
            }
          });
      pool.ParallelFor(M, static_cast<double>(N * parts), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          float* row = dw + i * N;
          for (int64_t j = 0; j < N; ++j) {
            float s = beta == 0.0f ? 0.0f : row[j];
            for (int64_t t = 0; t < parts; ++t) s += partial[static_cast<size_t>((t * M + i) * N + j)];
            row[j] = s;
          }
        }
      });
      return;
    }
  }
  GemmT<T>(M, N, K, dense, K, false, col, K, true, beta, dw, N, pool);
}

// dW = the filter gradient of conv(I, W) for the upstream dO, summed over the batch.
template <typename T>
void ConvFilterGradCore(const ConvPlan& p, const T* x, const T* dy, T* dw, ThreadPool& pool) {
  if (IsDepthwise(p)) return DepthwiseFilterGrad<T>(p, x, dy, dw, pool);
  const int64_t kdim = p.Cg * p.kernel_size, chunk = ChunkImages(p);
  if (p.N == 0) std::memset(dw, 0, static_cast<size_t>(p.M * kdim) * sizeof(T));
  for (int64_t n0 = 0; n0 < p.N; n0 += chunk) {
    const int64_t nb = std::min(chunk, p.N - n0), L = nb * p.out_size;
    T* col = Scratch<T>(0, static_cast<size_t>(kdim * L));
    T* dense = Scratch<T>(1, static_cast<size_t>(p.Mg * L));
    for (int64_t g = 0; g < p.G; ++g) {
      Im2ColBatch<T>(p, x + (n0 * p.C + g * p.Cg) * p.in_size, nb, col, pool);
      GroupRows<T>(p, const_cast<T*>(dy), n0, nb, g, dense, true, pool);
      FilterGemm<T>(p.Mg, kdim, L, dense, col, n0 == 0 ? T(0) : T(1), dw + g * p.Mg * kdim, pool);
    }
  }
}

std::vector<int64_t> Spatial(const Shape& s) { return std::vector<int64_t>(s.begin() + 2, s.end()); }

// The plan of conv "I -> O" for Conv(X, W) -> Y: I = X, O = Y.
ConvPlan ConvPlanOf(const KernelContext& ctx, const Shape& x, const Shape& w, const Shape& y) {
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(x.size() >= 3 && x.size() <= 5 && w.size() == x.size() && y.size() == x.size(), node, ": X ",
             ShapeToString(x), ", W ", ShapeToString(w), " and dY ", ShapeToString(y), " must all have rank 3 to 5");
  ConvGeometry g = ResolveConvGeometry(ctx.attrs(), Spatial(x), Spatial(w), node);
  OF_REQUIRE(g.out == Spatial(y) && y[0] == x[0] && y[1] == w[0], node, ": dY ", ShapeToString(y),
             " is not the output shape of Conv(X ", ShapeToString(x), ", W ", ShapeToString(w), ")");
  ConvPlan p;
  p.N = x[0];
  p.C = x[1];
  p.M = w[0];
  p.G = g.group;
  p.Cg = p.C / p.G;
  p.Mg = p.M / p.G;
  OF_REQUIRE(p.Cg * p.G == p.C && w[1] == p.Cg && p.Mg * p.G == p.M, node, ": X ", ShapeToString(x), " and W ",
             ShapeToString(w), " do not match group ", g.group);
  SetConvPlanSpatial(p, g, g.out.data(), op::kConv);
  return p;
}

// The plan of conv "I -> O" for ConvTranspose(X, W) -> Y: I = Y (channels W[1] * group), O = X.
ConvPlan ConvTransposePlanOf(const KernelContext& ctx, const Shape& x, const Shape& w, const Shape& y) {
  const std::string& node = ctx.node_desc();
  OF_REQUIRE(x.size() >= 3 && x.size() <= 5 && w.size() == x.size() && y.size() == x.size(), node, ": X ",
             ShapeToString(x), ", W ", ShapeToString(w), " and dY ", ShapeToString(y), " must all have rank 3 to 5");
  ConvGeometry g = ResolveConvTransposeGeometry(ctx.attrs(), Spatial(x), Spatial(w), node);
  OF_REQUIRE(g.out == Spatial(y) && y[0] == x[0] && y[1] == w[1] * g.group && w[0] == x[1], node, ": dY ",
             ShapeToString(y), " is not the output shape of ConvTranspose(X ", ShapeToString(x), ", W ",
             ShapeToString(w), ")");
  ConvPlan p;
  p.N = x[0];
  p.C = y[1];
  p.M = x[1];
  p.G = g.group;
  p.Cg = w[1];
  p.Mg = p.M / p.G;
  OF_REQUIRE(p.Mg * p.G == p.M, node, ": input channels ", p.M, " are not divisible by group ", p.G);
  const std::vector<int64_t> x_spatial = g.in;
  g.in = g.out;  // the conv reads Y's positions and writes X's
  SetConvPlanSpatial(p, g, x_spatial.data(), op::kConvTranspose);
  return p;
}

void RequireSameDType(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  OF_REQUIRE(a.dtype() == b.dtype(), ctx.node_desc(), ": inputs must share a dtype, got ", DTypeName(a.dtype()),
             " and ", DTypeName(b.dtype()));
}

template <bool kTranspose>
void ConvGradDataKernel(KernelContext& ctx) {
  if (HasHalfInput(ctx)) return ComputeHalfViaF32(ctx, ConvGradDataKernel<kTranspose>);
  const Tensor& dy = ctx.input(0);
  const Tensor& w = ctx.input(1);
  RequireSameDType(ctx, dy, w);
  Tensor& dx = ctx.output(0);
  const ConvPlan p = kTranspose ? ConvTransposePlanOf(ctx, dx.shape(), w.shape(), dy.shape())
                                : ConvPlanOf(ctx, dx.shape(), w.shape(), dy.shape());
  if (dx.numel() == 0) return;
  DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (kTranspose) {
      // ConvTranspose's dX is the conv of dY (its own input space) by W.
      ConvForwardCore<T>(p, dy.data<T>(), w.data<T>(), dx.data<T>(), ctx.pool());
    } else {
      ConvDataGradCore<T>(p, dy.data<T>(), w.data<T>(), dx.data<T>(), ctx.pool());
    }
  });
}
ONEFLOW_KERNEL(ConvGradData, ConvGradDataKernel<false>);
ONEFLOW_KERNEL(ConvTransposeGradData, ConvGradDataKernel<true>);

template <bool kTranspose>
void ConvGradFilterKernel(KernelContext& ctx) {
  if (HasHalfInput(ctx)) return ComputeHalfViaF32(ctx, ConvGradFilterKernel<kTranspose>);
  const Tensor& x = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  RequireSameDType(ctx, x, dy);
  Tensor& dw = ctx.output(0);
  const ConvPlan p = kTranspose ? ConvTransposePlanOf(ctx, x.shape(), dw.shape(), dy.shape())
                                : ConvPlanOf(ctx, x.shape(), dw.shape(), dy.shape());
  if (dw.numel() == 0) return;
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (kTranspose) {
      ConvFilterGradCore<T>(p, dy.data<T>(), x.data<T>(), dw.data<T>(), ctx.pool());
    } else {
      ConvFilterGradCore<T>(p, x.data<T>(), dy.data<T>(), dw.data<T>(), ctx.pool());
    }
  });
}
ONEFLOW_KERNEL(ConvGradFilter, ConvGradFilterKernel<false>);
ONEFLOW_KERNEL(ConvTransposeGradFilter, ConvGradFilterKernel<true>);

// dB[c] = sum of dY[n, c, ...] over the batch and every spatial position.
void ConvGradBiasKernel(KernelContext& ctx) {
  if (HasHalfInput(ctx)) return ComputeHalfViaF32(ctx, ConvGradBiasKernel);
  const Tensor& dy = ctx.input(0);
  OF_REQUIRE(dy.rank() >= 2, ctx.node_desc(), ": dY must have rank >= 2");
  const int64_t N = dy.dim(0), C = dy.dim(1), S = ShapeProduct(dy.shape(), 2, dy.shape().size());
  Tensor& db = ctx.output(0);
  DispatchFloat(dy.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = dy.data<T>();
    T* dst = db.data<T>();
    ctx.pool().ParallelFor(C, static_cast<double>(N * S), [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        T acc = T(0);
        for (int64_t n = 0; n < N; ++n) {
          const T* plane = src + (n * C + c) * S;
          acc += LaneSum<T>(S, [&](int64_t i) { return plane[i]; });
        }
        dst[c] = acc;
      }
    });
  });
}
ONEFLOW_KERNEL(ConvGradBias, ConvGradBiasKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
