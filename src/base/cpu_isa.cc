// CPUID-based tier detection. GCC's __builtin_cpu_supports checks the CPU's feature bits and, for the
// AVX and AVX-512 register states, that the OS saves them (XGETBV), so a tier is never picked whose
// registers a context switch would lose.
#include "base/cpu_isa.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace oneflow {

namespace {

struct IsaName {
  const char* name;
  CpuIsa isa;
};
// The tiers' own names first, in tier order (CpuIsaName indexes them), then the aliases ParseCpuIsa takes.
constexpr IsaName kNames[] = {
    {"sse4.2", CpuIsa::kSse42},   {"avx2", CpuIsa::kAvx2},           {"avx512", CpuIsa::kAvx512},
    {"avx512_vnni", CpuIsa::kAvx512Vnni}, {"x86-64-v2", CpuIsa::kSse42}, {"x86-64-v3", CpuIsa::kAvx2},
    {"x86-64-v4", CpuIsa::kAvx512}, {"baseline", CpuIsa::kSse42},  {"sse42", CpuIsa::kSse42},
    {"avx512vnni", CpuIsa::kAvx512Vnni},
};

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has no "f16c". Every CPU with
// AVX2 and FMA has it, but the avx2 tier is compiled with it, so it is checked, not assumed.
bool HasF16c() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
}
#endif

CpuIsa Detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("bmi2") ||
      !HasF16c())
    return CpuIsa::kSse42;
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl") ||
      !__builtin_cpu_supports("avx512cd"))
    return CpuIsa::kAvx2;
  return __builtin_cpu_supports("avx512vnni") ? CpuIsa::kAvx512Vnni : CpuIsa::kAvx512;
#else
  return CpuIsa::kSse42;
#endif
}

struct ActiveState {
  CpuIsa detected;
  CpuIsa active;
};

ActiveState ComputeActive() {
  ActiveState s{Detect(), CpuIsa::kSse42};
  s.active = s.detected;
  const char* cap = std::getenv("ONEFLOW_MAX_ISA");
  if (cap != nullptr && *cap != '\0') {
    CpuIsa limit;
    if (ParseCpuIsa(cap, &limit)) {
      s.active = std::min(s.detected, limit);
    } else {
      std::fprintf(stderr,
                   "oneflow: ONEFLOW_MAX_ISA=%s is not a tier (use sse4.2, avx2, avx512 or avx512_vnni); "
                   "using the detected %s\n",
                   cap, CpuIsaName(s.detected));
    }
  }
  return s;
}

const ActiveState& State() {
  static const ActiveState state = ComputeActive();
  return state;
}

std::string CpuBrand() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned int regs[12] = {};
  unsigned int max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext >= 0x80000004u) {
    for (unsigned int i = 0; i < 3; ++i)
      __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
    char text[49] = {};
    std::memcpy(text, regs, 48);
    std::string brand(text);
    brand.erase(0, brand.find_first_not_of(' '));
    while (!brand.empty() && (brand.back() == ' ' || brand.back() == '\0')) brand.pop_back();
    if (!brand.empty()) return brand;
  }
#endif
  return "unknown CPU";
}

}  // namespace

const char* CpuIsaName(CpuIsa isa) {
  const int i = static_cast<int>(isa);
  return i >= 0 && i < kCpuIsaCount ? kNames[i].name : "unknown";
}

bool ParseCpuIsa(const std::string& text, CpuIsa* isa) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const IsaName& n : kNames) {
    if (lower == n.name) {
      *isa = n.isa;
      return true;
    }
  }
  return false;
}

CpuIsa DetectedCpuIsa() { return State().detected; }
CpuIsa ActiveCpuIsa() { return State().active; }
bool CpuIsaCapped() { return State().active != State().detected; }

std::string CpuIsaSummary() {
  std::string out = CpuBrand() + " | detected " + CpuIsaName(DetectedCpuIsa()) + " | active " +
                    CpuIsaName(ActiveCpuIsa());
  if (CpuIsaCapped()) out += " (ONEFLOW_MAX_ISA)";
  return out;
}

}  // namespace oneflow
