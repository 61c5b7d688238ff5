// 2-D f32 convolution on oneDNN (its brgconv kernels in NHWC inside, NCHW at the boundaries), split
// into bands of output rows across the engine's own thread pool with oneDNN single-threaded per
// band, so the session's intra_op_threads decides the parallelism and no OpenMP team spins.
#pragma once

#include <cstdint>
#include <memory>

#include "base/thread_pool.h"
#include "kernels/cpu/gemm.h"

namespace oneflow {

struct DnnlConvParams {
  int64_t n, c, h, w;       // input
  int64_t m, kh, kw;        // weights [m, c, kh, kw]
  int64_t sh, sw, dh, dw;   // strides, dilations (ONNX convention: 1 = dense)
  int64_t pt, pl, pb, pr;   // pads
  int64_t oh, ow;           // output
};

class DnnlConv2d;

// Whether Conv kernels created from now on may use oneDNN (default: yes when built in). For
// benchmarks and tests that compare against the im2col path.
void SetDnnlConvEnabled(bool enabled);
bool DnnlConvEnabled();

// Returns nullptr when oneDNN is not built in or does not take this configuration.
std::shared_ptr<DnnlConv2d> CreateDnnlConv2d(const DnnlConvParams& p, const float* weights);

// y = act(conv(x) + bias + z) for NCHW x, y and z (bias and z may be null).
void RunDnnlConv2d(const DnnlConv2d& conv, const float* x, const float* bias, const float* z,
                   const ActivationSpec& act, float* y, ThreadPool& pool);

}  // namespace oneflow
