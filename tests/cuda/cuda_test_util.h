// Helpers for the CUDA tests: the "no CUDA device" skip, running one kernel on the CPU or the GPU
// on the same host inputs, and error measures against the CPU reference.
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

Tensor RandomTensor(DType dt, const Shape& shape, std::mt19937& rng, float lo = -2.0f, float hi = 2.0f);
// A host-side dtype conversion through the CPU Cast kernel.
Tensor CastHost(const Tensor& t, DType to);
// ||got - want|| / ||want|| in double precision (inputs converted to f64); NaN counts as infinite.
double RelL2(const Tensor& got, const Tensor& want);

}  // namespace oneflow::cuda_test
