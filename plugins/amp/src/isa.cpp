#include "isa.hpp"

#include <strata/plugin.hpp>
#include <string_view>

namespace strata::amp {
namespace {

// __builtin_cpu_supports reads CPUID once (libgcc's constructor) and, for AVX and AVX-512, also
// checks that the OS saves the wider registers (XCR0), so a "yes" means the code can run.
bool has(std::string_view feature) {
  __builtin_cpu_init();
  if (feature == "avx2") return __builtin_cpu_supports("avx2");
  if (feature == "f16c") return __builtin_cpu_supports("f16c");
  if (feature == "avx512f") return __builtin_cpu_supports("avx512f");
  if (feature == "avx512bf16") return __builtin_cpu_supports("avx512bf16");
  if (feature == "avx512fp16") return __builtin_cpu_supports("avx512fp16");
  return false;
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
      return has("avx2") && has("f16c");
    case Isa::avx512:
      return has("avx512f") && has("avx2") && has("f16c");
  }
  return false;
}

const Kernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::avx2:
      return kAvx2Kernels;
    case Isa::avx512:
      return kAvx512Kernels;
    case Isa::scalar:
      break;
  }
  return kScalarKernels;
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
                    (isa == Isa::avx2 ? "AVX2 and F16C" : "AVX512F") +
                    ", which this CPU does not have (it has: " + cpu_features() + ")");
    }
    return isa;
  }
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
            "STRATA_AMP_ISA: expected scalar, avx2 or avx512, got \"" + std::string(name) + "\"");
}

std::string cpu_features() {
  std::string found;
  for (const char* feature : {"avx2", "f16c", "avx512f", "avx512bf16", "avx512fp16"}) {
    if (!has(feature)) continue;
    if (!found.empty()) found += ' ';
    found += feature;
  }
  return found.empty() ? "none of avx2, f16c, avx512f" : found;
}

}  // namespace strata::amp
