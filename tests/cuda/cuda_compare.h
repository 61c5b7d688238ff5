// The comparison the CUDA kernel tests share: run one op on the GPU (outputs poisoned first) and its
// CPU kernel on the same inputs (half-precision inputs widened to f32 for the CPU reference, so the
// reference is the f32 result on the same rounded inputs), then compare every output element by
// element (ElementsClose in cuda_test_util.h: atol + rtol * |want|, NaN only where the reference has
// NaN, integers exact), plus a relative-L2 bound on the whole output.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace oneflow::cuda_test {

// The CPU reference of `call`: half-precision inputs and outputs widened to f32.
inline std::vector<Tensor> RunCpuReference(const OpCall& call) {
  OpCall ref = call;
  for (Tensor& t : ref.inputs)
    if (t.defined() && IsHalfDType(t.dtype())) t = CastHost(t, DType::kFloat32);
  for (auto& [dt, shape] : ref.outputs)
    if (IsHalfDType(dt)) dt = DType::kFloat32;
  return RunKernel(DeviceType::kCpu, ref);
}

// `tols[i]` is output i's tolerance (the last one repeats for later outputs; empty: DefaultTol of
// each output's dtype). `layout` places the GPU tensors (misaligned views); nullptr: fresh tensors.
inline void ExpectGpuMatchesCpuEach(const OpCall& call, const std::vector<Tol>& tols, const std::string& label,
                                    const DeviceLayout* layout = nullptr) {
  const std::vector<Tensor> gpu = layout ? RunKernel(DeviceType::kCuda, call, *layout) : RunKernel(DeviceType::kCuda, call);
  const std::vector<Tensor> cpu = RunCpuReference(call);
  ASSERT_EQ(gpu.size(), cpu.size()) << label;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const Tol tol = tols.empty() ? DefaultTol(call.outputs[i].first) : tols[std::min(i, tols.size() - 1)];
    EXPECT_TRUE(ElementsClose(gpu[i], cpu[i], tol)) << label << " output " << i;
  }
}

// One tolerance for every floating output (integer and bool outputs are always exact).
inline void ExpectGpuMatchesCpu(const OpCall& call, const Tol& tol, const std::string& label) {
  ExpectGpuMatchesCpuEach(call, {tol}, label);
}
// Each output with DefaultTol of its own dtype.
inline void ExpectGpuMatchesCpu(const OpCall& call, const std::string& label) { ExpectGpuMatchesCpuEach(call, {}, label); }
// The same on device views at the offsets of `layout` (e.g. odd offsets: misaligned pointers).
inline void ExpectGpuMatchesCpu(const OpCall& call, const Tol& tol, const std::string& label,
                                const DeviceLayout& layout) {
  ExpectGpuMatchesCpuEach(call, {tol}, label, &layout);
}
// The older single-number form (kept for the test files that still use it): see LegacyTol.
inline void ExpectGpuMatchesCpu(const OpCall& call, double tol, const std::string& label) {
  ExpectGpuMatchesCpuEach(call, {LegacyTol(tol)}, label);
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
