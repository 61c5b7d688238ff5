// Helpers for the CUDA tests: the "no CUDA device" skip, running one kernel on the CPU or the GPU
// on the same host inputs (optionally on device views at chosen, possibly misaligned, offsets), and
// per-element comparisons against the CPU reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../cpu_kernel_call.h"
#include "base/thread_pool.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "kernels/kernel.h"

namespace oneflow::cuda_test {

// GPU tests skip (never pass) where there is no device, saying why.
#define OF_REQUIRE_CUDA_DEVICE()                                                         \
  do {                                                                                   \
    std::string of_why_;                                                                 \
    if (::oneflow::cuda::DeviceCount(&of_why_) == 0) GTEST_SKIP() << "no CUDA device: " << of_why_; \
  } while (0)

using test_util::OpCall;

ThreadPool& Pool();
// Runs the registered kernel of `call` on `device`; returns host tensors. On CUDA the outputs are
// poisoned (all bits set: NaN for floats) before the run, so an unwritten element shows up.
std::vector<Tensor> RunKernel(DeviceType device, const OpCall& call);

// Where the CUDA run of RunKernel places each tensor: input i (output j) views a fresh device
// allocation `input_offsets[i]` (`output_offsets[j]`) elements past its start (missing entries: 0).
// Allocations are 256-byte aligned, so an offset of 1 gives an f16/bf16 tensor 2-byte and an f32
// tensor 4-byte alignment. Each output's whole allocation (the bytes before the view and a guard
// after it) is poisoned before the run; any byte outside the view that changes is a test failure.
struct DeviceLayout {
  std::vector<int64_t> input_offsets;
  std::vector<int64_t> output_offsets;
};
std::vector<Tensor> RunKernel(DeviceType device, const OpCall& call, const DeviceLayout& layout);

Tensor RandomTensor(DType dt, const Shape& shape, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f);
// A host-side dtype conversion through the CPU Cast kernel.
Tensor CastHost(const Tensor& t, DType to);
// ||got - want|| / ||want|| in double precision (inputs converted to f64); NaN counts as infinite.
// A summary measure only: kernel results are compared per element (ElementsClose).
double RelL2(const Tensor& got, const Tensor& want);

// Per-element tolerance. Element i passes when
//   want[i] is NaN and got[i] is NaN, or want[i] is +-inf and got[i] equals it, or
//   |got[i] - want[i]| <= atol + atol_rms * rms(want) + rtol * |want[i]|,
// where rms(want) is the root mean square of the finite reference values: long sums that cancel
// to near zero carry an absolute error proportional to the magnitude of their terms, not of their
// result. A NaN (or inf) anywhere the reference has none fails. In addition, the relative L2 error
// of the whole tensor must be at most rel_l2 (checked only when rel_l2 > 0). Integer and bool
// tensors are always compared exactly.
struct Tol {
  double rtol = 0.0;
  double atol = 0.0;
  double atol_rms = 0.0;
  double rel_l2 = 0.0;
};
// Every element bit-equal in value (data movement, integer math, compares).
Tol ExactTol();
// For results computed in f32 and stored as `dt` (f32: a few ulp of reordered f32 math; f16 / bf16:
// the output's rounding, up to about two of its ulps, since the reference is the unrounded f32).
Tol DefaultTol(DType dt);
// f32 GEMMs on TF32 tensor cores (10-bit mantissa products, f32 accumulation), O(1) inputs.
Tol Tf32Tol();
// The single number the older callers pass (once a relative-L2 bound): rtol = atol_rms = rel_l2 =
// tol; 0 means exact.
Tol LegacyTol(double tol);

// The per-element comparison above; on failure the message gives the number of bad elements, the
// first few as (index, got, want, allowed) and the relative L2 error.
::testing::AssertionResult ElementsClose(const Tensor& got, const Tensor& want, const Tol& tol);

// Fills a host tensor's bytes with 0xFF (NaN for floats, -1 for signed integers).
void PoisonHost(Tensor& t);

}  // namespace oneflow::cuda_test
