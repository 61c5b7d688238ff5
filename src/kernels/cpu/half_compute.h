// Half-precision (f16/bf16) support for CPU kernels that only have an f32 path: the inputs are
// widened to f32, the f32 kernel body runs, and the outputs are rounded back. It exists so
// mixed-precision training (train/mixed_precision.h) runs end to end on a CPU; it is no faster
// than f32 (on a GPU these ops run natively in f16/bf16).
#pragma once

#include <functional>

#include "kernels/kernel.h"
#include "kernels/cpu/isa_region.h"

namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// True when any input of `ctx` is f16/bf16 (then every float input and output of the node is
// treated as that dtype's f32 widening).
bool HasHalfInput(const KernelContext& ctx);

// Runs `f32_body` on a context whose f16/bf16 inputs are f32 copies and whose f16/bf16 outputs
// are f32 temporaries, then rounds those outputs (to nearest even) into the real ones.
void ComputeHalfViaF32(KernelContext& ctx, const std::function<void(KernelContext&)>& f32_body);

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
