// The offload kernels' instruction-set choice per instance (strata_common/cpu_isa.hpp): the
// widest path the CPU reports, STRATA_CPU_ISA forcing a path whose kernels then really run it
// (the dispatched code's own target bit), and clear errors for paths the CPU lacks or names that
// mean nothing; each path's kernels stay that path's whatever else the process chooses; also as
// seen through the offload plugin and its log. (tests/plugins/common/cpu_isa_test.cpp checks the choice.)
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdlib>
#include <optional>
#include <strata/cpu_threads.hpp>
#include <strata/plugin.hpp>
#include <strata_common/cpu_isa.hpp>
#include <string>
#include <vector>

#include "cpu_reading.hpp"
#include "cpu_test_support.hpp"
#include "optim_harness.hpp"
#include "scoped_env.hpp"
#include "optimizer_kernels.hpp"
#include "thread_pool.hpp"

namespace strata::test {
namespace {

using common::cpu::Isa;
using common::cpu::isa_name;
constexpr const char* kIsaVariable = common::cpu::kIsaVariable;

// What the CPU itself reports, by the tests' own reading (cpu_reading.hpp), not Highway's.
bool cpu_reports(Isa isa) {
  return isa == Isa::scalar || (isa == Isa::avx2 && cpu_runs_avx2()) ||
         (isa == Isa::avx512 && cpu_runs_avx512());
}

Isa widest_the_cpu_reports() {
  for (Isa isa : {Isa::avx512, Isa::avx2}) {
    if (cpu_reports(isa)) return isa;
  }
  return Isa::scalar;
}

std::optional<Isa> a_path_the_cpu_lacks() {
  for (Isa isa : {Isa::avx512, Isa::avx2}) {
    if (!cpu_reports(isa)) return isa;
  }
  return std::nullopt;
}

// The Highway targets that make up a path.
int64_t family_of(Isa isa) {
  return isa == Isa::avx512 ? (HWY_AVX3 | HWY_AVX3_DL)
         : isa == Isa::avx2 ? HWY_AVX2
                            : (HWY_EMU128 | HWY_SCALAR);
}

TEST(CpuIsaDispatch, PicksTheWidestPathTheCpuReports) {
  const ScopedEnv env(kIsaVariable, nullptr);
  const common::cpu::IsaChoice choice = common::cpu::choose_isa(nullptr);
  const Isa expected = widest_the_cpu_reports();
  const int64_t target = offload::kernels_for(choice.isa).target;
  std::printf("[ figures  ] CPU reports %s; kernels run %s (Highway %s)\n", isa_name(expected),
              choice.describe().c_str(), hwy::TargetName(target));
  EXPECT_EQ(choice.isa, expected);
  EXPECT_EQ(choice.describe(), std::string(isa_name(expected)) + " (the widest this CPU has)");
  EXPECT_NE(target & family_of(expected), 0) << hwy::TargetName(target);
  for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    EXPECT_EQ(common::cpu::isa_available(isa), cpu_reports(isa)) << isa_name(isa);
  }
}

class CpuIsaForced : public ::testing::TestWithParam<Isa> {};

TEST_P(CpuIsaForced, EnvironmentVariableSelectsThePathTheKernelsRun) {
  const Isa isa = GetParam();
  if (!cpu_reports(isa)) GTEST_SKIP() << isa_name(isa) << ": not on this CPU";
  const ScopedEnv env(kIsaVariable, isa_name(isa));
  const common::cpu::IsaChoice choice = common::cpu::choose_isa(nullptr);
  EXPECT_EQ(choice.describe(), std::string(isa_name(isa)) + " (forced by STRATA_CPU_ISA)");
  ASSERT_EQ(choice.isa, isa);
  // The kernels' own target bit, not only our reading of it.
  const int64_t target = offload::kernels_for(choice.isa).target;
  EXPECT_NE(target & family_of(isa), 0) << hwy::TargetName(target);
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuIsaForced,
                         ::testing::Values(Isa::scalar, Isa::avx2, Isa::avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

TEST(CpuIsaDispatch, EachPathsKernelsStayTheirsWhateverElseIsChosen) {
  // Per instance, not process-wide: taking one path's kernels changes no other path's, and
  // Highway's process-wide dispatch target (HWY_DYNAMIC_DISPATCH) is not what the kernels follow.
  for (Isa first : {Isa::scalar, Isa::avx2, Isa::avx512}) {
    if (!cpu_reports(first)) continue;
    const offload::OptimizerKernels& k = offload::kernels_for(first);
    for (Isa other : {Isa::scalar, Isa::avx2, Isa::avx512}) {
      if (cpu_reports(other)) (void)offload::kernels_for(other);
    }
    EXPECT_NE(k.target & family_of(first), 0) << isa_name(first);
    EXPECT_EQ(&k, &offload::kernels_for(first));
  }
}

TEST(CpuIsaDispatch, PathTheCpuLacksIsAnErrorNamingTheVariable) {
  const std::optional<Isa> missing = a_path_the_cpu_lacks();
  if (!missing) GTEST_SKIP() << "this CPU has every path";
  const ScopedEnv env(kIsaVariable, isa_name(*missing));
  try {
    common::cpu::choose_isa(nullptr);
    ADD_FAILURE() << "forcing " << isa_name(*missing) << " did not fail";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find(std::string("STRATA_CPU_ISA: ") + isa_name(*missing) +
                                         " requested but this CPU does not support it"),
              std::string::npos)
        << e.what();
  }
}

TEST(CpuIsaDispatch, UnknownNameIsAnErrorNamingTheVariable) {
  const ScopedEnv env(kIsaVariable, "sse9");
  try {
    common::cpu::choose_isa(nullptr);
    ADD_FAILURE() << "an unknown name was accepted";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "STRATA_CPU_ISA: expected scalar, avx2, avx512 or auto, got 'sse9'");
  }
}

// The plugin's log lines, collected through the fake host.
std::vector<std::string>& log_lines() {
  static std::vector<std::string> lines;
  return lines;
}

struct PluginRun {
  strata_status status;
  std::string message;
  std::string log;
};

PluginRun create_plugin() {
  FakeHost host;
  log_lines().clear();
  host.api()->log = [](void*, int32_t, const char* msg) { log_lines().push_back(msg); };
  Instance<strata_offload_ops> opt(offload_ops(), host, R"({"optimizer": {"type": "Adam"}})");
  std::string log;
  for (const std::string& line : log_lines()) log += line + "\n";
  return {opt.status(), opt.message(), log};
}

TEST(CpuIsaPlugin, LogsTheForcedPathAndRunsIt) {
  // Highway's process-wide dispatch target before and after: the plugin must not move it (the
  // choice is per instance, through the dispatch tables).
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  const size_t chosen_before = hwy::GetChosenTarget().GetIndex();
  const ScopedEnv env(kIsaVariable, "scalar");
  const ScopedEnv threads(sdk::kCpuThreadsVariable, "3");
  const PluginRun run = create_plugin();
  ASSERT_EQ(run.status, STRATA_OK) << run.message;
  // The Highway target is what the instance's kernels report of themselves (the portable one:
  // EMU128, or SCALAR where that is the build's static target): it runs the forced path, whatever
  // the process's dispatch target is.
  const bool portable =
      run.log.find("CPU kernels scalar (forced by STRATA_CPU_ISA, Highway EMU128), 3 threads") !=
          std::string::npos ||
      run.log.find("CPU kernels scalar (forced by STRATA_CPU_ISA, Highway SCALAR), 3 threads") !=
          std::string::npos;
  EXPECT_TRUE(portable) << run.log;
  EXPECT_EQ(hwy::GetChosenTarget().GetIndex(), chosen_before);
}

TEST(CpuIsaPlugin, LogsTheWidestPathByDefault) {
  const ScopedEnv env(kIsaVariable, nullptr);
  const PluginRun run = create_plugin();
  ASSERT_EQ(run.status, STRATA_OK) << run.message;
  const std::string expected =
      std::string("CPU kernels ") + isa_name(widest_the_cpu_reports()) + " (the widest";
  EXPECT_NE(run.log.find(expected), std::string::npos) << run.log;
}

TEST(CpuIsaPlugin, PathTheCpuLacksFailsCreate) {
  const std::optional<Isa> missing = a_path_the_cpu_lacks();
  if (!missing) GTEST_SKIP() << "this CPU has every path";
  const ScopedEnv env(kIsaVariable, isa_name(*missing));
  const PluginRun run = create_plugin();
  EXPECT_EQ(run.status, STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(run.message.find("STRATA_CPU_ISA"), std::string::npos) << run.message;
}

TEST(CpuIsaPlugin, BadThreadCountFailsCreate) {
  const ScopedEnv env(sdk::kCpuThreadsVariable, "0");
  const PluginRun run = create_plugin();
  EXPECT_EQ(run.status, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(run.message, "STRATA_CPU_THREADS: expected a thread count from 1 to 4096, got '0'");
}

}  // namespace
}  // namespace strata::test
