// CPU feature checks and the STRATA_COMM_ISA choice for the shared-memory reduction kernels.
// Adapted from the amp plugin's isa.cpp (plugins stay self-contained, so this is a copy).
#include "shm_isa.hpp"

#include <strata/plugin.hpp>

#include <string_view>

namespace strata::allreduce_mpi::shm {
namespace {

// __builtin_cpu_supports reads CPUID once and, for AVX and AVX-512, also checks that the OS saves
// the wider registers (XCR0), so a "yes" means the code can run. (Not hwy::SupportedTargets():
// Highway 1.0.3's resets the process-wide dispatch target as a side effect, which would undo a
// choice another plugin made in this process.) __builtin_cpu_supports needs literal names.
bool has(std::string_view feature) {
  __builtin_cpu_init();
#define STRATA_SHM_FEATURE(name) \
  if (feature == name) return __builtin_cpu_supports(name)
  STRATA_SHM_FEATURE("ssse3");
  STRATA_SHM_FEATURE("sse4.1");
  STRATA_SHM_FEATURE("sse4.2");
  STRATA_SHM_FEATURE("pclmul");
  STRATA_SHM_FEATURE("aes");
  STRATA_SHM_FEATURE("avx");
  STRATA_SHM_FEATURE("avx2");
  STRATA_SHM_FEATURE("bmi");
  STRATA_SHM_FEATURE("bmi2");
  STRATA_SHM_FEATURE("fma");
  STRATA_SHM_FEATURE("f16c");
  STRATA_SHM_FEATURE("avx512f");
  STRATA_SHM_FEATURE("avx512vl");
  STRATA_SHM_FEATURE("avx512dq");
  STRATA_SHM_FEATURE("avx512bw");
#undef STRATA_SHM_FEATURE
  return false;
}

// The extensions in Highway's target attribute for each set (HWY_TARGET_STR_AVX2 / _AVX3 in
// hwy/ops/set_macros-inl.h): the compiled code may use any of them.
constexpr std::string_view kAvx2Needs[] = {"ssse3", "sse4.1", "sse4.2", "pclmul", "aes", "avx",
                                           "avx2",  "bmi",    "bmi2",   "fma",    "f16c"};
constexpr std::string_view kAvx512Needs[] = {"avx512f", "avx512vl", "avx512dq", "avx512bw"};

template <std::size_t N>
void add_missing(const std::string_view (&features)[N], std::string& missing) {
  for (std::string_view f : features) {
    if (has(f)) continue;
    if (!missing.empty()) missing += ' ';
    missing += f;
  }
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
  }
  return "unknown";
}

std::string missing_features(Isa isa) {
  std::string missing;
  if (isa == Isa::avx2 || isa == Isa::avx512) add_missing(kAvx2Needs, missing);
  if (isa == Isa::avx512) add_missing(kAvx512Needs, missing);
  return missing;
}

bool isa_available(Isa isa) { return missing_features(isa).empty(); }

Isa select_isa(const char* forced) {
  const std::string_view name = forced == nullptr ? "" : forced;
  if (name.empty()) {
    for (Isa isa : {Isa::avx512, Isa::avx2}) {
      if (isa_available(isa)) return isa;
    }
    return Isa::scalar;
  }
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (name != isa_name(isa)) continue;
    const std::string missing = missing_features(isa);
    if (!missing.empty()) {
      sdk::fail(STRATA_ERR_UNSUPPORTED, "STRATA_COMM_ISA: " + std::string(name) +
                                            " needs CPU features this CPU lacks: " + missing);
    }
    return isa;
  }
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
            "STRATA_COMM_ISA: expected scalar, avx2 or avx512, got \"" + std::string(name) + "\"");
}

}  // namespace strata::allreduce_mpi::shm
