// Lane-wise max for AVX-512 kernels without GCC 12's false -Wmaybe-uninitialized: its
// _mm512_max_ps merges the result into _mm512_undefined_ps() under an all-ones mask, and the
// warning fires wherever that is inlined. Merging into `a` instead compiles to the same vmaxps.
#pragma once

#if defined(__AVX512F__)
#include <immintrin.h>

namespace oneflow {

// max(a, b) per lane, exactly _mm512_max_ps: a NaN in either operand gives b.
inline __m512 MaxPs(__m512 a, __m512 b) { return _mm512_mask_max_ps(a, static_cast<__mmask16>(0xFFFF), a, b); }

}  // namespace oneflow
#endif
