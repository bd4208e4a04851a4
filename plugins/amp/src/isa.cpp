#include "isa.hpp"

#include <strata/plugin.hpp>
#include <string_view>

namespace strata::amp {
namespace {

// __builtin_cpu_supports reads CPUID once (libgcc's constructor) and, for AVX and AVX-512, also
// checks that the OS saves the wider registers (XCR0), so a "yes" means the code can run.
// (Not hwy::SupportedTargets(): Highway 1.0.3's resets the process-wide dispatch target as a side
// effect, which would undo a STRATA_CPU_ISA choice the offload plugin made in this process.)
bool has(std::string_view feature) {
  __builtin_cpu_init();
#define STRATA_AMP_FEATURE(name) \
  if (feature == name) return __builtin_cpu_supports(name)
  STRATA_AMP_FEATURE("ssse3");
  STRATA_AMP_FEATURE("sse4.1");
  STRATA_AMP_FEATURE("sse4.2");
  STRATA_AMP_FEATURE("pclmul");
  STRATA_AMP_FEATURE("aes");
  STRATA_AMP_FEATURE("avx");
  STRATA_AMP_FEATURE("avx2");
  STRATA_AMP_FEATURE("bmi");
  STRATA_AMP_FEATURE("bmi2");
  STRATA_AMP_FEATURE("fma");
  STRATA_AMP_FEATURE("f16c");
  STRATA_AMP_FEATURE("avx512f");
  STRATA_AMP_FEATURE("avx512vl");
  STRATA_AMP_FEATURE("avx512dq");
  STRATA_AMP_FEATURE("avx512bw");
  STRATA_AMP_FEATURE("avx512bf16");
  STRATA_AMP_FEATURE("avx512fp16");
#undef STRATA_AMP_FEATURE
  return false;
}

// The extensions in Highway's target attribute for each set (HWY_TARGET_STR_AVX2 / _AVX3 in
// hwy/ops/set_macros-inl.h): the compiled code may use any of them.
constexpr std::string_view kAvx2Needs[] = {"ssse3", "sse4.1", "sse4.2", "pclmul", "aes", "avx",
                                           "avx2",  "bmi",    "bmi2",   "fma",    "f16c"};
constexpr std::string_view kAvx512Needs[] = {"avx512f", "avx512vl", "avx512dq", "avx512bw"};

template <std::size_t N>
bool has_all(const std::string_view (&features)[N]) {
  for (std::string_view f : features) {
    if (!has(f)) return false;
  }
  return true;
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

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return true;
    case Isa::avx2:
      return has_all(kAvx2Needs);
    case Isa::avx512:
      return has_all(kAvx2Needs) && has_all(kAvx512Needs);
  }
  return false;
}

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
    if (!isa_available(isa)) {
      sdk::fail(STRATA_ERR_UNSUPPORTED,
                "STRATA_AMP_ISA: " + std::string(name) + " needs " +
                    (isa == Isa::avx2 ? "AVX2, FMA, F16C and BMI1/2"
                                      : "AVX512F/VL/DQ/BW besides what avx2 needs") +
                    ", which this CPU does not have (it has: " + cpu_features() + ")");
    }
    return isa;
  }
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
            "STRATA_AMP_ISA: expected scalar, avx2 or avx512, got \"" + std::string(name) + "\"");
}

std::string cpu_features() {
  std::string found;
  for (const char* feature : {"avx2", "f16c", "fma", "bmi2", "avx512f", "avx512vl", "avx512dq",
                              "avx512bw", "avx512bf16", "avx512fp16"}) {
    if (!has(feature)) continue;
    if (!found.empty()) found += ' ';
    found += feature;
  }
  return found.empty() ? "none of avx2, f16c, avx512f" : found;
}

}  // namespace strata::amp
