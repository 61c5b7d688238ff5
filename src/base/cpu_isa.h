// The CPU's instruction-set tier, as the kernels see it: detected once per process with CPUID (with
// the operating system's support for the wider registers), then capped by ONEFLOW_MAX_ISA.
//
// The default build targets baseline x86-64-v2 and compiles the CPU kernels once more per wider tier
// (kernels/cpu/isa_region.h); the kernel registry keeps, for each op, the copy of the highest tier
// at or below ActiveCpuIsa(). ONEFLOW_MAX_ISA=avx2 (or sse4.2, avx512, avx512_vnni) runs a narrower
// path on a wider CPU: how every path is tested on one machine, and a way around a suspect kernel.
#pragma once
#include <string>

namespace oneflow {

enum class CpuIsa : int {
  kSse42 = 0,       // x86-64-v2 (SSE4.2, POPCNT): the default build's baseline; any CPU off x86
  kAvx2 = 1,        // x86-64-v3: AVX, AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE
  kAvx512 = 2,      // x86-64-v4: AVX-512 F, BW, DQ, VL, CD
  kAvx512Vnni = 3,  // x86-64-v4 with AVX512-VNNI (int8 dot products)
};
constexpr int kCpuIsaCount = 4;

// "sse4.2", "avx2", "avx512", "avx512_vnni".
const char* CpuIsaName(CpuIsa isa);
// Parses a name as CpuIsaName prints it (case-insensitive; "x86-64-v2".."x86-64-v4" and "baseline" too).
bool ParseCpuIsa(const std::string& text, CpuIsa* isa);

// The widest tier this CPU and its operating system support.
CpuIsa DetectedCpuIsa();
// DetectedCpuIsa(), capped by ONEFLOW_MAX_ISA when set. Read once, on first use; an unknown value
// is reported on stderr once and ignored.
CpuIsa ActiveCpuIsa();
// Whether ONEFLOW_MAX_ISA lowered the tier below the detected one.
bool CpuIsaCapped();

// "AMD EPYC 9R14 ... | detected avx512_vnni | active avx2 (ONEFLOW_MAX_ISA)": for benchmark headers,
// `oneflow info` and logs, so every figure says which path produced it.
std::string CpuIsaSummary();

}  // namespace oneflow
