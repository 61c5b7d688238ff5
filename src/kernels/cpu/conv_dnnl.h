// 2-D f32 convolution on oneDNN (its brgconv kernels in NHWC inside, NCHW at the boundaries), split
// into bands of output rows across the engine's own thread pool with oneDNN single-threaded per
// band, so the session's intra_op_threads decides the parallelism and no OpenMP team spins.
#pragma once

#include <cstdint>
#include <memory>

#include "base/thread_pool.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/isa_region.h"
#include "kernels/cpu/switches.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

struct DnnlConvParams {
  int64_t n, c, h, w;       // input
  int64_t m, kh, kw;        // weights [m, c, kh, kw]
  int64_t sh, sw, dh, dw;   // strides, dilations (ONNX convention: 1 = dense)
  int64_t pt, pl, pb, pr;   // pads
  int64_t oh, ow;           // output
  int64_t g = 1;            // groups: weights [m, c / g, kh, kw] (depthwise: g = c = m)
};

class DnnlConv2d;

// The epilogue an NHWC plan applies inside the primitive (bias, residual as a sum post-op, and the
// activation as an eltwise post-op where oneDNN computes it exactly like ApplyActivation).
struct DnnlConvEpilogue {
  bool bias = false;
  bool residual = false;
  ActivationParams act;
};

// Returns nullptr when oneDNN is not built in or does not take this configuration. Without an
// epilogue the plan serves RunDnnlConv2d (NCHW); with one, RunDnnlConv2dNhwc.
std::shared_ptr<DnnlConv2d> CreateDnnlConv2d(const DnnlConvParams& p, const float* weights,
                                             const DnnlConvEpilogue* epilogue = nullptr);

// Whether an NHWC plan runs on the Winograd kernels (for tests and diagnostics).
bool DnnlConvUsesWinograd(const DnnlConv2d& conv);

// y = act(conv(x) + bias + z) for NCHW x, y and z (bias and z may be null).
void RunDnnlConv2d(const DnnlConv2d& conv, const float* x, const float* bias, const float* z,
                   const ActivationParams& act, float* y, ThreadPool& pool);

// y = act(conv(x) + bias + z) for NHWC x [n, h, w, c], y and z [n, oh, ow, m], with no layout
// copies: the plan's epilogue (CreateDnnlConv2d) says which of bias/z are given.
void RunDnnlConv2dNhwc(const DnnlConv2d& conv, const float* x, const float* bias, const float* z, float* y,
                       ThreadPool& pool);

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
