// CPU kernels: spatial family registration, plus LRN, Col2Im and AffineGrid (pooling, Resize and Einsum live in
// pool.cc, resize.cc and einsum.cc).
#include <cmath>
#include <cstring>

#include "graph/infer_util.h"
#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN
namespace {

// LRN: y = x / (bias + alpha / size * sum of x^2 over the neighbouring channels)^beta.
void LRNKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  OF_REQUIRE(x.rank() >= 3, ctx.node_desc(), ": LRN input must be [N, C, D1, ...]");
  const int64_t size = ctx.attrs().GetInt("size");
  const double alpha = ctx.attrs().GetFloat("alpha"), beta = ctx.attrs().GetFloat("beta"),
               bias = ctx.attrs().GetFloat("bias");
  const int64_t N = x.dim(0), C = x.dim(1), plane = N * C > 0 ? x.numel() / (N * C) : 0;
  const int64_t before = (size - 1) / 2, after = size - 1 - before;  // floor / ceil of (size-1)/2
  OF_CHECK(IsFloatDType(x.dtype()), kUnsupported, ctx.node_desc(), ": LRN needs a float input");
  DispatchFloating(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = ComputeType<T>;  // float for f16/bf16
    const T* px = x.data<T>();
    T* py = y.data<T>();
    ctx.pool().ParallelFor(N * C, static_cast<double>(plane) * static_cast<double>(size + 4), [&](int64_t begin, int64_t end) {
      std::vector<A> sq(static_cast<size_t>(plane));
      for (int64_t p = begin; p < end; ++p) {
        const int64_t n = p / C, c = p % C;
        std::fill(sq.begin(), sq.end(), A(0));
        for (int64_t cc = std::max<int64_t>(0, c - before); cc <= std::min(C - 1, c + after); ++cc) {
          const T* src = px + (n * C + cc) * plane;
          for (int64_t i = 0; i < plane; ++i) {
            A v = static_cast<A>(src[i]);
            sq[i] += v * v;
          }
        }
        const T* src = px + p * plane;
        T* dst = py + p * plane;
        const A scale = static_cast<A>(alpha / static_cast<double>(size));
        for (int64_t i = 0; i < plane; ++i)
          dst[i] = T(static_cast<A>(src[i]) / std::pow(static_cast<A>(bias) + scale * sq[i], static_cast<A>(beta)));
      }
    });
  });
}
ONEFLOW_KERNEL(LRN, LRNKernel);

// Col2Im: sums sliding blocks [N, C*prod(block), L] back into images [N, C, image_shape...].
void Col2ImKernel(KernelContext& ctx) {
  const std::string node = ctx.node_desc();
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  std::vector<int64_t> img = ctx.input(1).ToInt64Vector(), blk = ctx.input(2).ToInt64Vector();
  const size_t r = img.size();
  std::vector<int64_t> dil = ctx.attrs().GetInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> str = ctx.attrs().GetInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = ctx.attrs().GetInts("pads", std::vector<int64_t>(2 * r, 0));
  OF_REQUIRE(dil.size() == r && str.size() == r && pads.size() == 2 * r, node,
             ": dilations/strides/pads do not match image_shape");
  std::vector<int64_t> nb(r);
  int64_t blocks = 1, kprod = 1;
  for (size_t d = 0; d < r; ++d) {
    OF_REQUIRE(dil[d] >= 1 && str[d] >= 1 && dil[d] <= kMaxWindowAttr && str[d] <= kMaxWindowAttr, node,
               ": dilations and strides must be in [1, 2^31]");
    OF_REQUIRE(pads[d] >= 0 && pads[d + r] >= 0 && pads[d] <= kMaxWindowAttr && pads[d + r] <= kMaxWindowAttr, node,
               ": pads must be in [0, 2^31]");
    OF_REQUIRE(img[d] >= 0 && blk[d] >= 1, node, ": image_shape must be non-negative and block_shape positive");
    // image_shape and block_shape are input data: any int64.
    const int64_t padded = CheckedAdd(img[d], pads[d] + pads[d + r], node, "the padded image size");
    const int64_t extent = CheckedAdd(CheckedMul(dil[d], blk[d] - 1, node, "the dilated block size"), 1, node,
                                      "the dilated block size");
    nb[d] = (padded - extent) / str[d] + 1;
    OF_REQUIRE(nb[d] >= 1, node, ": the blocks do not fit the padded image");
    blocks = CheckedMul(blocks, nb[d], node, "the number of blocks");
    kprod = CheckedMul(kprod, blk[d], node, "prod(block_shape)");
  }
  OF_REQUIRE(x.dim(2) == blocks, node, ": input has ", x.dim(2), " blocks, expected ", blocks);
  const int64_t N = y.dim(0), C = y.dim(1), plane = N * C > 0 ? y.numel() / (N * C) : 0;
  std::memset(y.raw(), 0, y.nbytes());
  DispatchNumeric(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    ctx.pool().ParallelFor(N * C, static_cast<double>(kprod * blocks), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> kb(r), b(r);
      for (int64_t p = begin; p < end; ++p) {
        T* dst = py + p * plane;
        for (int64_t k = 0; k < kprod; ++k) {
          int64_t rem = k;
          for (size_t d = r; d-- > 0;) { kb[d] = rem % blk[d]; rem /= blk[d]; }
          const T* src = px + (p * kprod + k) * blocks;
          for (int64_t l = 0; l < blocks; ++l) {
            int64_t lr = l, off = 0;
            bool inside = true;
            for (size_t d = r; d-- > 0;) {
              b[d] = lr % nb[d];
              lr /= nb[d];
            }
            for (size_t d = 0; d < r; ++d) {
              const int64_t pos = b[d] * str[d] - pads[d] + kb[d] * dil[d];
              if (pos < 0 || pos >= img[d]) { inside = false; break; }
              off = off * img[d] + pos;
            }
            if (inside) dst[off] += src[l];
          }
        }
      }
    });
  });
}
ONEFLOW_KERNEL(Col2Im, Col2ImKernel);

// AffineGrid: each output point is theta applied to the homogeneous normalized coordinates
// (x, y[, z], 1) of its position, with x along the last (width) dim.
void AffineGridKernel(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  Tensor& y = ctx.output(0);
  const bool align = ctx.attrs().GetInt("align_corners") != 0;
  const int64_t N = y.dim(0), r = y.dim(y.rank() - 1);
  OF_REQUIRE(theta.rank() == 3 && theta.dim(0) == N && theta.dim(1) == r && theta.dim(2) == r + 1,
             ctx.node_desc(), ": theta must be [", N, ", ", r, ", ", r + 1, "], got ", ShapeToString(theta.shape()));
  std::vector<int64_t> dims(y.shape().begin() + 1, y.shape().end() - 1);
  const int64_t points = N > 0 ? y.numel() / (N * r) : 0;
  auto coord = [&](int64_t i, int64_t n) {
    if (align) return n > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1) : -1.0;
    return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
  };
  OF_CHECK(IsFloatDType(theta.dtype()), kUnsupported, ctx.node_desc(), ": theta must be a float tensor");
  DispatchFloating(theta.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pt = theta.data<T>();
    T* py = y.data<T>();
    std::vector<double> homo(static_cast<size_t>(r + 1));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t p = 0; p < points; ++p) {
        int64_t rem = p;
        for (int64_t d = r; d-- > 0;) {  // homo[0] is x (last dim), homo[1] y, ...
          const int64_t c = rem % dims[d];
          rem /= dims[d];
          homo[r - 1 - d] = coord(c, dims[d]);
        }
        homo[r] = 1.0;
        for (int64_t k = 0; k < r; ++k) {
          double v = 0;
          for (int64_t j = 0; j <= r; ++j) v += CastToDouble(pt[(n * r + k) * (r + 1) + j]) * homo[j];
          py[(n * points + p) * r + k] = CastFromDouble<T>(v);
        }
      }
    }
  });
}
ONEFLOW_KERNEL(AffineGrid, AffineGridKernel);

}  // namespace

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
