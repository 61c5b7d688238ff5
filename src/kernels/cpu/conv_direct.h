// Direct NHWC convolution for 3-wide kernels at unit column stride over few input channels (the
// first conv of a small image net: RGB in, 3x3). oneDNN's kernels vectorize over input channels in
// blocks of 16, so with 3 channels most lanes idle; here a tile of output pixels keeps its output
// channels in registers and each input value, broadcast once, feeds the three pixels that read it.
// Measured on the cnn bench's first conv (3->32 channels, 32x32, 2-core Zen 5 under load): on par
// with oneDNN on one thread (12.5 vs 12.4 us), and its rows split over the pool, where oneDNN's
// plan keeps a conv this small (1.8 MFLOP) on one thread. On a 7x7 stride-2 stem a plain
// broadcast-per-tap tile was 20% slower than oneDNN, so only this geometry is taken.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/elementwise_util.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// The geometry of one 2-D convolution in NHWC: x [n, h, w, c], weights [m, c, kh, kw] (ONNX
// OIHW), y [n, oh, ow, m]. Pads are the top and left ones (the output size fixes the others).
struct DirectConvGeometry {
  int64_t n, h, w, c;
  int64_t m, kh, kw;
  int64_t sh, sw, dh, dw;  // strides and dilations (1 = dense)
  int64_t pt, pl;
  int64_t oh, ow;
};

class DirectConvNhwc {
 public:
  // Whether this kernel takes an f32, one-group conv with `c` input and `m` output channels, kernel
  // width kw, column stride sw and dilation dw: few input channels, output channels a multiple of
  // 16, kw = 3, sw = dw = 1 (any kernel height, row stride and dilation), and AVX-512.
  static bool Applies(int64_t c, int64_t m, int64_t kw, int64_t sw, int64_t dw);

  // weights: [m, c, kh, kw]; repacked once into [kh, kw, c, m] (a weight vector per tap).
  // Run takes any geometry with kw = 3 and sw = dw = 1.
  DirectConvNhwc(int64_t m, int64_t c, int64_t kh, int64_t kw, const float* weights, const ActivationParams& act);

  // y = act(conv(x) + bias + z); bias [m] and z (residual, shaped like y) may be null.
  void Run(const DirectConvGeometry& g, const float* x, const float* bias, const float* z, float* y,
           ThreadPool& pool) const;

 private:
  int64_t m_, c_, kh_, kw_;
  std::vector<float> packed_;  // [kh][kw][c][m]
  ActivationParams act_;
};

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
