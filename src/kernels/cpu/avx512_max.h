// Lane-wise max for AVX-512 kernels without GCC 12's false -Wmaybe-uninitialized: its
// _mm512_max_ps merges the result into _mm512_undefined_ps() under an all-ones mask, and the
// warning fires wherever that is inlined. Merging into `a` instead compiles to the same vmaxps.
#pragma once

#include "kernels/cpu/isa_region.h"

#if ONEFLOW_ISA_AVX512
namespace oneflow {
ONEFLOW_CPU_ISA_BEGIN

// max(a, b) per lane, exactly _mm512_max_ps: a NaN in either operand gives b.
inline __m512 MaxPs(__m512 a, __m512 b) { return _mm512_mask_max_ps(a, static_cast<__mmask16>(0xFFFF), a, b); }

ONEFLOW_CPU_ISA_END
}  // namespace oneflow
#endif
