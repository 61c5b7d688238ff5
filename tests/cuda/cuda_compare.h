// The comparison the CUDA kernel tests share: run one op on the GPU and its CPU kernel on the same
// inputs (half-precision inputs widened to f32 for the CPU reference) and bound the relative L2 error
// of every output.
#pragma once

#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace oneflow::cuda_test {

inline void ExpectGpuMatchesCpu(OpCall call, double tol, const std::string& label) {
  const std::vector<Tensor> gpu = RunKernel(DeviceType::kCuda, call);
  OpCall ref = call;
  for (Tensor& t : ref.inputs)
    if (t.defined() && IsHalfDType(t.dtype())) t = CastHost(t, DType::kFloat32);
  for (auto& [dt, shape] : ref.outputs)
    if (IsHalfDType(dt)) dt = DType::kFloat32;
  const std::vector<Tensor> cpu = RunKernel(DeviceType::kCpu, ref);
  ASSERT_EQ(gpu.size(), cpu.size()) << label;
  for (size_t i = 0; i < gpu.size(); ++i) EXPECT_LE(RelL2(gpu[i], cpu[i]), tol) << label << " output " << i;
}

// Host int64 tensors for shape-like inputs (starts, pads, X_shape, ...): 1-D, or a scalar.
inline Tensor Int64s(const std::vector<int64_t>& v) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}
inline Tensor Int64Scalar(int64_t v) {
  Tensor t(DType::kInt64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

}  // namespace oneflow::cuda_test
