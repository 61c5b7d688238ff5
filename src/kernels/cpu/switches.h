// Process-wide switches of the CPU kernels, for benchmarks and tests that compare one path with
// another. Unlike the rest of kernels/cpu this is compiled once (not per instruction-set tier,
// isa_region.h), so a switch flipped by a caller reaches every tier's copy of the kernels.
#pragma once

namespace oneflow {

// Whether Sgemm may hand raw-operand products to oneDNN's sgemm (DnnlGemmEnabled in gemm.h adds
// whether oneDNN is there at all). Default: on.
void SetDnnlGemmEnabled(bool enabled);
bool DnnlGemmSwitchOn();

// Whether Conv kernels created from now on may use oneDNN (default: yes when built in). For
// benchmarks and tests that compare against the im2col path.
void SetDnnlConvEnabled(bool enabled);
bool DnnlConvEnabled();

// Whether NHWC conv plans created from now on may use oneDNN's Winograd kernels for 3x3 stride-1
// convs with channel counts that are multiples of 16 (default: yes, unless the environment sets
// ONEFLOW_CONV_WINOGRAD=0). Winograd reassociates the sums: results differ from the direct
// kernel in the last bits, as two direct kernels' blockings do (docs/architecture.md, compute
// kernels). oneDNN has Winograd kernels for AVX-512 only.
void SetWinogradEnabled(bool enabled);
bool WinogradEnabled();

}  // namespace oneflow
