// One source, several instruction sets. Every file of kernels/cpu wraps its code (after its
// #includes) in ONEFLOW_CPU_ISA_BEGIN / ONEFLOW_CPU_ISA_END. The build compiles the folder once with
// the build's own flags (tier 0: baseline x86-64-v2 by default) and, on x86-64, once more per wider
// tier with ONEFLOW_CPU_TIER set (src/CMakeLists.txt). Each copy lives in its own inline namespace,
// so the copies never collide at link time, and registers its kernels at its tier; the registry
// keeps, per op, the widest copy the CPU runs (base/cpu_isa.h).
//
// Why `#pragma GCC target` and not -march on the command line: an inline function or template
// instantiation that a wide copy shares with the rest of the library (std::vector's, Tensor's) is
// emitted once per object file and the linker keeps any one of them. Compiled with -mavx512f it
// could be the one kept and then run on a CPU without AVX-512. Under the pragma only what is
// defined between BEGIN and END (this folder's own code) is built for the tier; code from other
// headers keeps the baseline, and is still inlined into the wide code, where it is vectorized wide.
//
// The pragma does not change the predefined macros (__AVX512F__) in C++, so code written for one
// ISA tests the ONEFLOW_ISA_* macros below instead.
#pragma once

#if defined(ONEFLOW_CPU_TIER) && ONEFLOW_CPU_TIER > 0
#if !defined(__GNUC__) || defined(__clang__) || !(defined(__x86_64__) || defined(__i386__))
#error "ONEFLOW_CPU_TIER > 0 needs GCC on x86-64 (src/CMakeLists.txt builds the wider tiers only there)"
#endif
#if ONEFLOW_CPU_TIER == 1
#define ONEFLOW_CPU_ISA_TARGET "avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt"
#define ONEFLOW_CPU_ISA_NAMESPACE isa_avx2
#elif ONEFLOW_CPU_TIER == 2
#define ONEFLOW_CPU_ISA_TARGET \
  "avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd"
#define ONEFLOW_CPU_ISA_NAMESPACE isa_avx512
#elif ONEFLOW_CPU_TIER == 3
#define ONEFLOW_CPU_ISA_TARGET \
  "avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,popcnt,avx512f,avx512bw,avx512dq,avx512vl,avx512cd,avx512vnni"
#define ONEFLOW_CPU_ISA_NAMESPACE isa_avx512_vnni
#else
#error "unknown ONEFLOW_CPU_TIER"
#endif
#define ONEFLOW_ISA_AVX 1
#define ONEFLOW_ISA_AVX2 1
#define ONEFLOW_ISA_AVX512 (ONEFLOW_CPU_TIER >= 2)
#define ONEFLOW_ISA_AVX512VNNI (ONEFLOW_CPU_TIER >= 3)
#define ONEFLOW_CPU_ISA_PRAGMA(text) _Pragma(#text)
#define ONEFLOW_CPU_ISA_PRAGMA_TARGET(isa) ONEFLOW_CPU_ISA_PRAGMA(GCC target(isa))
#define ONEFLOW_CPU_ISA_BEGIN \
  _Pragma("GCC push_options") ONEFLOW_CPU_ISA_PRAGMA_TARGET(ONEFLOW_CPU_ISA_TARGET) \
  inline namespace ONEFLOW_CPU_ISA_NAMESPACE {
#define ONEFLOW_CPU_ISA_END } _Pragma("GCC pop_options")

#else  // tier 0: what the build's flags give (-march=x86-64-v2 by default, -march=native opted into)
#undef ONEFLOW_CPU_TIER
#define ONEFLOW_CPU_TIER 0
#if defined(__AVX__)
#define ONEFLOW_ISA_AVX 1
#else
#define ONEFLOW_ISA_AVX 0
#endif
#if defined(__AVX2__) && defined(__FMA__)
#define ONEFLOW_ISA_AVX2 1
#else
#define ONEFLOW_ISA_AVX2 0
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#define ONEFLOW_ISA_AVX512 1
#else
#define ONEFLOW_ISA_AVX512 0
#endif
#if ONEFLOW_ISA_AVX512 && defined(__AVX512VNNI__)
#define ONEFLOW_ISA_AVX512VNNI 1
#else
#define ONEFLOW_ISA_AVX512VNNI 0
#endif
#define ONEFLOW_CPU_ISA_BEGIN inline namespace isa_build {
#define ONEFLOW_CPU_ISA_END }
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>  // every intrinsic is declared whatever the flags (GCC >= 4.9); used under the pragma
#endif
