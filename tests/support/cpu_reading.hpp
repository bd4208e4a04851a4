// The tests' own reading of the CPU, independent of the code under test (strata_common/cpu_isa):
// Highway's AVX2 target needs AVX2 + FMA + F16C + BMI1/2 (and SSE4, PCLMUL, AES, present on every
// CPU with those); its AVX3 target also AVX-512 F/VL/DQ/BW. The compiler's cpuid reading (CPUID
// itself for F16C), not Highway's.
#pragma once

#include <cpuid.h>

namespace strata::test {

// F16C from CPUID leaf 1 (ECX bit 29), with the OS support of AVX's registers that the builtin
// checks: not every compiler's __builtin_cpu_supports names "f16c" (clang 14 does not).
inline bool cpu_has_f16c() {
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0 &&
         __builtin_cpu_supports("avx");
}

inline bool cpu_runs_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && cpu_has_f16c() &&
         __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2");
}

inline bool cpu_runs_avx512() {
  return cpu_runs_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw");
}

}  // namespace strata::test
