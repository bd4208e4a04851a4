#include <strata_common/cpu_isa.hpp>

#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

#include <strata/plugin.hpp>

namespace strata::common::cpu {
namespace {

// F16C and AVX512-FP16 from CPUID (leaf 1 ECX bit 29; leaf 7 subleaf 0 EDX bit 23), because not
// every compiler's __builtin_cpu_supports names them (clang 14 names neither). Their registers
// are AVX's and AVX-512's, whose OS support (XCR0) the builtin's "avx" and "avx512f" check.
bool cpuid_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0 &&
         __builtin_cpu_supports("avx");
}

bool cpuid_avx512fp16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 23)) != 0 &&
         __builtin_cpu_supports("avx512f");
}

// Whether this CPU (and OS) has `feature`. __builtin_cpu_supports needs a literal, hence the list.
bool has(std::string_view feature) {
  __builtin_cpu_init();
  if (feature == "f16c") return cpuid_f16c();
  if (feature == "avx512fp16") return cpuid_avx512fp16();
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
  STRATA_CPU_FEATURE("avx512f");
  STRATA_CPU_FEATURE("avx512vl");
  STRATA_CPU_FEATURE("avx512dq");
  STRATA_CPU_FEATURE("avx512bw");
  STRATA_CPU_FEATURE("avx512bf16");
#undef STRATA_CPU_FEATURE
  return false;
}

// The extensions in Highway's target attribute for its AVX2 and AVX3 targets
// (HWY_TARGET_STR_AVX2 / _AVX3 in hwy/ops/set_macros-inl.h): code compiled for the target may use
// any of them. AVX3 needs the AVX2 list too.
constexpr std::string_view kHighwayAvx2[] = {"ssse3", "sse4.1", "sse4.2", "pclmul", "aes", "avx",
                                             "avx2",  "bmi",    "bmi2",   "fma",    "f16c"};
constexpr std::string_view kHighwayAvx3Extra[] = {"avx512f", "avx512vl", "avx512dq", "avx512bw"};

template <std::size_t N>
void add_missing(const std::string_view (&features)[N], std::string& missing) {
  for (std::string_view f : features) {
    if (has(f)) continue;
    if (!missing.empty()) missing += ' ';
    missing += f;
  }
}

constexpr Isa kWidestFirst[] = {Isa::avx512, Isa::avx2, Isa::scalar};

std::string available_names() {
  std::string out;
  for (Isa isa : kWidestFirst) {
    if (isa_available(isa)) out += std::string(out.empty() ? "" : ", ") + isa_name(isa);
  }
  return out;
}

bool set(const char* value) { return value != nullptr && *value != '\0'; }

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
  if (isa == Isa::scalar) return missing;
  add_missing(kHighwayAvx2, missing);
  if (isa == Isa::avx512) add_missing(kHighwayAvx3Extra, missing);
  return missing;
}

bool isa_available(Isa isa) { return missing_features(isa).empty(); }

Isa widest_isa() {
  for (Isa isa : kWidestFirst) {
    if (isa_available(isa)) return isa;
  }
  return Isa::scalar;
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

std::optional<Isa> parse_isa(const char* variable, const char* value) {
  if (!set(value) || std::strcmp(value, "auto") == 0) return std::nullopt;
  for (Isa isa : kWidestFirst) {
    if (std::strcmp(value, isa_name(isa)) == 0) return isa;
  }
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, std::string(variable) +
                                             ": expected scalar, avx2, avx512 or auto, got '" +
                                             value + "'");
}

std::string IsaChoice::describe() const {
  if (forced_by.empty()) return std::string(isa_name(isa)) + " (the widest this CPU has)";
  return std::string(isa_name(isa)) + " (forced by " + forced_by + ")";
}

IsaChoice choose_isa(const char* value, const char* legacy_variable, const char* legacy_value) {
  IsaChoice choice;
  const char* variable = kIsaVariable;
  if (legacy_variable != nullptr && set(legacy_value)) {
    if (set(value)) {
      choice.deprecation = std::string(legacy_variable) + " is deprecated and ignored: " +
                           kIsaVariable + " is set and chooses for every plugin";
    } else {
      choice.deprecation = std::string(legacy_variable) + " is deprecated: use " + kIsaVariable +
                           ", which chooses for every plugin";
      variable = legacy_variable;
      value = legacy_value;
    }
  }
  const std::optional<Isa> forced = parse_isa(variable, value);
  if (!forced) {
    choice.isa = widest_isa();
    return choice;
  }
  const std::string missing = missing_features(*forced);
  if (!missing.empty()) {
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              std::string(variable) + ": " + isa_name(*forced) +
                  " requested but this CPU does not support it: it lacks " + missing +
                  " (available: " + available_names() + "; it has: " + cpu_features() + ")");
  }
  choice.isa = *forced;
  choice.forced_by = variable;
  return choice;
}

IsaChoice choose_isa(const char* legacy_variable) {
  return choose_isa(std::getenv(kIsaVariable), legacy_variable,
                    legacy_variable == nullptr ? nullptr : std::getenv(legacy_variable));
}

}  // namespace strata::common::cpu
