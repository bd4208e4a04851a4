// The amp kernel set's names and the STRATA_AMP_ISA choice, over the SDK's CPU feature checks
// (strata/cpu_features.hpp).
#include "isa.hpp"

#include <strata/cpu_features.hpp>
#include <strata/plugin.hpp>
#include <string_view>

namespace strata::amp {

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
      return sdk::cpu::missing_for_highway(false).empty();
    case Isa::avx512:
      return sdk::cpu::missing_for_highway(true).empty();
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
    if (!sdk::cpu::has(feature)) continue;
    if (!found.empty()) found += ' ';
    found += feature;
  }
  return found.empty() ? "none of avx2, f16c, avx512f" : found;
}

}  // namespace strata::amp
