#include "cpu_isa.hpp"

#include <hwy/targets.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <strata/plugin.hpp>

#include "optimizer_kernels.hpp"

namespace strata::offload {
namespace {

constexpr CpuIsa kWidestFirst[] = {CpuIsa::avx512, CpuIsa::avx2, CpuIsa::scalar};

// The Highway targets that make up each path, limited to those this build compiled.
int64_t targets_of(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::scalar:
      return (HWY_EMU128 | HWY_SCALAR) & HWY_TARGETS;
    case CpuIsa::avx2:
      return HWY_AVX2 & HWY_TARGETS;
    case CpuIsa::avx512:
      return (HWY_AVX3 | HWY_AVX3_DL) & HWY_TARGETS;
  }
  return 0;
}

// Highway's targets for this CPU, read once. hwy::SupportedTargets() answers with DisableTargets()
// applied, so it is read before use_cpu_isa() first disables anything (every caller goes through
// here first). Reading it once also matters because Highway 1.0.3's SupportedTargets() resets the
// process-wide dispatch target to the widest as a side effect, which would undo a forced path.
int64_t cpu_targets() {
  static const int64_t cpu = hwy::SupportedTargets();
  return cpu;
}

std::mutex& choice_mutex() {
  static std::mutex m;
  return m;
}

// "avx2, scalar": the paths whose targets are in `cpu`, widest first.
std::string names_in(int64_t cpu) {
  std::string out;
  for (CpuIsa isa : kWidestFirst) {
    if (cpu & targets_of(isa)) out += std::string(out.empty() ? "" : ", ") + cpu_isa_name(isa);
  }
  return out;
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::scalar:
      return "scalar";
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::avx512:
      return "avx512";
  }
  return "unknown";
}

bool cpu_isa_supported(CpuIsa isa) {
  const std::lock_guard<std::mutex> lock(choice_mutex());
  return (cpu_targets() & targets_of(isa)) != 0;
}

CpuIsa widest_cpu_isa() {
  for (CpuIsa isa : kWidestFirst) {
    if (cpu_isa_supported(isa)) return isa;
  }
  return CpuIsa::scalar;
}

void use_cpu_isa(std::optional<CpuIsa> isa) {
  const std::lock_guard<std::mutex> lock(choice_mutex());
  const int64_t cpu = cpu_targets();
  const int64_t wanted = isa ? cpu & targets_of(*isa) : 0;  // 0: no forcing, the widest
  if (isa && wanted == 0) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, std::string(kCpuIsaVariable) + ": " + cpu_isa_name(*isa) +
                                          " requested but this CPU does not support it " +
                                          "(available: " + names_in(cpu) + ")");
  }
  // Highway's production knob for "the best target is undesirable" (SetSupportedTargetsForTest is
  // for tests): every target outside the wanted path is disabled (none when not forcing), and the
  // next HWY_DYNAMIC_DISPATCH picks the widest target left.
  hwy::DisableTargets(isa ? ~wanted : 0);
  if (isa && active_cpu_isa() != *isa) {
    sdk::fail(STRATA_ERR_INTERNAL, std::string(kCpuIsaVariable) + ": forcing " +
                                       cpu_isa_name(*isa) + " left the kernels on " +
                                       cpu_isa_name(active_cpu_isa()));
  }
}

std::optional<CpuIsa> parse_cpu_isa(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) return std::nullopt;
  for (CpuIsa isa : kWidestFirst) {
    if (std::strcmp(value, cpu_isa_name(isa)) == 0) return isa;
  }
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, std::string(kCpuIsaVariable) +
                                             ": expected scalar, avx2, avx512 or auto, got '" +
                                             value + "'");
}

std::string select_cpu_isa_from_env() {
  const std::optional<CpuIsa> forced = parse_cpu_isa(std::getenv(kCpuIsaVariable));
  use_cpu_isa(forced);
  const std::string name = cpu_isa_name(active_cpu_isa());
  if (forced) return name + " (forced by " + kCpuIsaVariable + ")";
  return name + " (the widest this CPU has)";
}

CpuIsa active_cpu_isa() {
  const int64_t target = dispatched_target();
  if (target & (HWY_AVX3 | HWY_AVX3_DL)) return CpuIsa::avx512;
  if (target & HWY_AVX2) return CpuIsa::avx2;
  return CpuIsa::scalar;
}

}  // namespace strata::offload
