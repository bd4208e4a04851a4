// strata_common_cpu_isa (plugins/common/cpu_isa): the one instruction-set choice every plugin
// makes per instance. STRATA_CPU_ISA forces a set; a plugin's old variable is honoured (with a
// deprecation warning) only when STRATA_CPU_ISA is unset; a set this CPU lacks or an unknown name
// is refused naming the variable read. The CPU is read here independently of the library.
#include <cpu_reading.hpp>
#include <gtest/gtest.h>
#include <strata/plugin.hpp>
#include <strata_common/cpu_isa.hpp>

#include <cstdlib>
#include <optional>
#include <string>

namespace strata::common::cpu {
namespace {

// The tests' own reading of the CPU (tests/support/cpu_reading.hpp), not the library's.
bool cpu_runs(Isa isa) {
  return isa == Isa::scalar || (isa == Isa::avx2 && test::cpu_runs_avx2()) ||
         (isa == Isa::avx512 && test::cpu_runs_avx512());
}

Isa widest_the_cpu_runs() {
  for (Isa isa : {Isa::avx512, Isa::avx2}) {
    if (cpu_runs(isa)) return isa;
  }
  return Isa::scalar;
}

std::optional<Isa> a_set_the_cpu_lacks() {
  for (Isa isa : {Isa::avx512, Isa::avx2}) {
    if (!cpu_runs(isa)) return isa;
  }
  return std::nullopt;
}

// The sdk::Error a call throws (code and message); code STRATA_OK when it does not throw.
template <class F>
std::pair<strata_status, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const sdk::Error& e) {
    return {e.code(), e.what()};
  }
  return {STRATA_OK, ""};
}

TEST(CpuIsa, AvailabilityMatchesTheCpu) {
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    EXPECT_EQ(isa_available(isa), cpu_runs(isa)) << isa_name(isa);
    EXPECT_EQ(missing_features(isa).empty(), cpu_runs(isa)) << isa_name(isa);
  }
  EXPECT_EQ(widest_isa(), widest_the_cpu_runs());
}

TEST(CpuIsa, UnsetEmptyOrAutoChoosesTheWidest) {
  for (const char* value : {static_cast<const char*>(nullptr), "", "auto"}) {
    const IsaChoice c = choose_isa(value, nullptr, nullptr);
    EXPECT_EQ(c.isa, widest_the_cpu_runs());
    EXPECT_EQ(c.forced_by, "");
    EXPECT_EQ(c.deprecation, "");
    EXPECT_EQ(c.describe(), std::string(isa_name(c.isa)) + " (the widest this CPU has)");
  }
}

TEST(CpuIsa, StrataCpuIsaForcesEverySetTheCpuRuns) {
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!cpu_runs(isa)) continue;
    const IsaChoice c = choose_isa(isa_name(isa), "STRATA_AMP_ISA", nullptr);
    EXPECT_EQ(c.isa, isa);
    EXPECT_EQ(c.forced_by, "STRATA_CPU_ISA");
    EXPECT_EQ(c.deprecation, "");
    EXPECT_EQ(c.describe(), std::string(isa_name(isa)) + " (forced by STRATA_CPU_ISA)");
  }
}

TEST(CpuIsa, ASetTheCpuLacksIsRefusedNamingTheVariableAndTheMissingFeatures) {
  const std::optional<Isa> missing = a_set_the_cpu_lacks();
  if (!missing) GTEST_SKIP() << "this CPU runs every set (avx512 included): nothing to refuse";
  for (const char* variable : {"STRATA_CPU_ISA", "STRATA_COMM_ISA"}) {
    const bool legacy = std::string(variable) != "STRATA_CPU_ISA";
    const auto [code, message] = error_of([&] {
      legacy ? choose_isa(nullptr, variable, isa_name(*missing))
             : choose_isa(isa_name(*missing), nullptr, nullptr);
    });
    EXPECT_EQ(code, STRATA_ERR_UNSUPPORTED);
    EXPECT_NE(message.find(std::string(variable) + ": " + isa_name(*missing) +
                           " requested but this CPU does not support it"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(missing_features(*missing)), std::string::npos) << message;
  }
}

TEST(CpuIsa, AnUnknownNameIsRefusedNamingTheVariable) {
  auto [code, message] = error_of([] { choose_isa("sse9", nullptr, nullptr); });
  EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(message, "STRATA_CPU_ISA: expected scalar, avx2, avx512 or auto, got 'sse9'");
  std::tie(code, message) = error_of([] { choose_isa(nullptr, "STRATA_COMM_ISA", "bogus"); });
  EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(message, "STRATA_COMM_ISA: expected scalar, avx2, avx512 or auto, got 'bogus'");
}

TEST(CpuIsa, AnOldVariableAloneIsHonouredWithADeprecationWarning) {
  const IsaChoice c = choose_isa(nullptr, "STRATA_AMP_ISA", "scalar");
  EXPECT_EQ(c.isa, Isa::scalar);
  EXPECT_EQ(c.forced_by, "STRATA_AMP_ISA");
  EXPECT_EQ(c.deprecation,
            "STRATA_AMP_ISA is deprecated: use STRATA_CPU_ISA, which chooses for every plugin");
  EXPECT_EQ(c.describe(), "scalar (forced by STRATA_AMP_ISA)");
  // Empty counts as unset, for either variable.
  EXPECT_EQ(choose_isa("", "STRATA_AMP_ISA", "scalar").forced_by, "STRATA_AMP_ISA");
  EXPECT_EQ(choose_isa(nullptr, "STRATA_AMP_ISA", "").deprecation, "");
}

TEST(CpuIsa, StrataCpuIsaWinsOverAnOldVariableWhichIsReportedIgnored) {
  // The old variable's value would be refused: it is not even read.
  const IsaChoice c = choose_isa("scalar", "STRATA_COMM_ISA", "bogus");
  EXPECT_EQ(c.isa, Isa::scalar);
  EXPECT_EQ(c.forced_by, "STRATA_CPU_ISA");
  EXPECT_EQ(c.deprecation,
            "STRATA_COMM_ISA is deprecated and ignored: STRATA_CPU_ISA is set and chooses for "
            "every plugin");
}

TEST(CpuIsa, TheEnvironmentIsReadPerCall) {
  const char* saved = std::getenv("STRATA_CPU_ISA");
  const std::string restore = saved == nullptr ? "" : saved;
  setenv("STRATA_CPU_ISA", "scalar", 1);
  EXPECT_EQ(choose_isa(nullptr).isa, Isa::scalar);
  unsetenv("STRATA_CPU_ISA");
  EXPECT_EQ(choose_isa(nullptr).isa, widest_the_cpu_runs());
  if (saved != nullptr) setenv("STRATA_CPU_ISA", restore.c_str(), 1);
}

}  // namespace
}  // namespace strata::common::cpu
