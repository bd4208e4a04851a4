// The tests' own reading of the CPU, independent of the code under test (strata_common/cpu_isa):
// Highway's AVX2 target needs AVX2 + FMA + F16C + BMI1/2 (and SSE4, PCLMUL, AES, present on every
// CPU with those); its AVX3 target also AVX-512 F/VL/DQ/BW. GCC's cpuid reading, not Highway's.
#pragma once

namespace strata::test {

inline bool cpu_runs_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2");
}

inline bool cpu_runs_avx512() {
  return cpu_runs_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw");
}

}  // namespace strata::test
