// Direct NHWC convolution for convs with few input channels (the first conv of an image net: RGB
// in, e.g. 3x32x32 or the 7x7 stem). oneDNN's kernels vectorize over input channels in blocks of
// 16, so with 3 channels most lanes idle (cnn bench, 3->32 channels 3x3 on 32x32: 13 us on one
// core through oneDNN). Here each output pixel tile keeps its output channels in registers and
// every (kernel row, kernel col, input channel) tap is one broadcast input times one weight vector,
// so the work is M/16 FMAs per tap per pixel whatever C is.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/elementwise_util.h"

namespace oneflow {

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
  // Whether this kernel takes a conv with `c` input channels and `m` output channels (f32, one
  // group): few input channels, output channels a multiple of 16, and a CPU with AVX-512.
  static bool Applies(int64_t c, int64_t m);

  // weights: [m, c, kh, kw]; repacked once into [kh, kw, c, m] (a weight vector per tap).
  DirectConvNhwc(int64_t m, int64_t c, int64_t kh, int64_t kw, const float* weights, const ActivationParams& act);

  // y = act(conv(x) + bias + z); bias [m] and z (residual, shaped like y) may be null.
  void Run(const DirectConvGeometry& g, const float* x, const float* bias, const float* z, float* y,
           ThreadPool& pool) const;

 private:
  int64_t m_, c_, kh_, kw_;
  std::vector<float> packed_;  // [kh][kw][c][m]
  ActivationParams act_;
};

}  // namespace oneflow
