// strata/cpu_features.hpp — header-only CPU feature checks for plugins that compile their loops
// per instruction set with Highway (foreach_target) and pick a set per instance at run time.
//
// Why not hwy::SupportedTargets(): Highway 1.0.3's resets the process-wide dispatch target as a
// side effect, which would undo a choice another plugin made in the same process. These checks use
// __builtin_cpu_supports, which reads CPUID once and, for AVX and AVX-512, also checks that the OS
// saves the wider registers (XCR0), so a "yes" means the code can run. x86-64 with GCC or Clang.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace strata::sdk::cpu {

// Whether this CPU (and OS) has `feature`, one of the names below or "avx512bf16"/"avx512fp16";
// false for any other name. (__builtin_cpu_supports needs a literal, hence the list.)
inline bool has(std::string_view feature) {
  __builtin_cpu_init();
#define STRATA_CPU_FEATURE(name) \
  if (feature == name) return __builtin_cpu_supports(name)
  STRATA_CPU_FEATURE("ssse3");
  STRATA_CPU_FEATURE("sse4.1");
  STRATA_CPU_FEATURE("sse4.2");
  STRATA_CPU_FEATURE("pclmul");
  STRATA_CPU_FEATURE("aes");
  STRATA_CPU_FEATURE("avx");
  STRATA_CPU_FEATURE("avx2");
  STRATA_CPU_FEATURE("bmi");
  STRATA_CPU_FEATURE("bmi2");
  STRATA_CPU_FEATURE("fma");
  STRATA_CPU_FEATURE("f16c");
  STRATA_CPU_FEATURE("avx512f");
  STRATA_CPU_FEATURE("avx512vl");
  STRATA_CPU_FEATURE("avx512dq");
  STRATA_CPU_FEATURE("avx512bw");
  STRATA_CPU_FEATURE("avx512bf16");
  STRATA_CPU_FEATURE("avx512fp16");
#undef STRATA_CPU_FEATURE
  return false;
}

// The extensions in Highway's target attribute for its AVX2 and AVX3 targets
// (HWY_TARGET_STR_AVX2 / _AVX3 in hwy/ops/set_macros-inl.h): code compiled for the target may use
// any of them. AVX3 needs the AVX2 list too.
inline constexpr std::string_view kHighwayAvx2[] = {"ssse3", "sse4.1", "sse4.2", "pclmul",
                                                    "aes",   "avx",    "avx2",   "bmi",
                                                    "bmi2",  "fma",    "f16c"};
inline constexpr std::string_view kHighwayAvx3Extra[] = {"avx512f", "avx512vl", "avx512dq",
                                                         "avx512bw"};

// Appends to `missing` (space-separated) each of `features` this CPU lacks.
template <std::size_t N>
void add_missing(const std::string_view (&features)[N], std::string& missing) {
  for (std::string_view f : features) {
    if (has(f)) continue;
    if (!missing.empty()) missing += ' ';
    missing += f;
  }
}

// What a Highway AVX2 (`avx512` false) or AVX3 (`avx512` true) target needs that this CPU lacks,
// space-separated; "" when the target can run.
inline std::string missing_for_highway(bool avx512) {
  std::string missing;
  add_missing(kHighwayAvx2, missing);
  if (avx512) add_missing(kHighwayAvx3Extra, missing);
  return missing;
}

}  // namespace strata::sdk::cpu
