// The STRATA_COMM_ISA choice for the shared-memory reduction kernels, over the SDK's CPU feature
// checks (strata/cpu_features.hpp, shared with the amp plugin).
#include "shm_isa.hpp"

#include <strata/cpu_features.hpp>
#include <strata/plugin.hpp>

#include <string_view>

namespace strata::allreduce_mpi::shm {

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
  if (isa == Isa::scalar) return "";
  return sdk::cpu::missing_for_highway(isa == Isa::avx512);
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
