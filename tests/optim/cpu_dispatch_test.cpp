// The kernels' run-time instruction-set choice: the widest path the CPU reports, STRATA_CPU_ISA
// forcing a path that the dispatched code then really runs, and clear errors for paths the CPU
// lacks or names that mean nothing; also as seen through the offload plugin and its log.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cstdlib>
#include <optional>
#include <strata/cpu_threads.hpp>
#include <strata/plugin.hpp>
#include <string>
#include <vector>

#include "cpu_isa.hpp"
#include "cpu_test_support.hpp"
#include "optim_harness.hpp"
#include "optimizer_kernels.hpp"
#include "thread_pool.hpp"

namespace strata::test {
namespace {

using offload::CpuIsa;

// Sets (or with NULL unsets) an environment variable for the length of a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
    offload::use_cpu_isa(std::nullopt);
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// What the CPU itself reports, by GCC's cpuid reading rather than Highway's.
bool cpu_reports(CpuIsa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case CpuIsa::scalar:
      return true;
    case CpuIsa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2");
    case CpuIsa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  }
  return false;
}

CpuIsa widest_the_cpu_reports() {
  for (CpuIsa isa : {CpuIsa::avx512, CpuIsa::avx2}) {
    if (cpu_reports(isa)) return isa;
  }
  return CpuIsa::scalar;
}

std::optional<CpuIsa> a_path_the_cpu_lacks() {
  for (CpuIsa isa : {CpuIsa::avx512, CpuIsa::avx2}) {
    if (!cpu_reports(isa)) return isa;
  }
  return std::nullopt;
}

TEST(CpuIsaDispatch, PicksTheWidestPathTheCpuReports) {
  const ScopedEnv env(offload::kCpuIsaVariable, nullptr);
  const std::string choice = offload::select_cpu_isa_from_env();
  const CpuIsa expected = widest_the_cpu_reports();
  std::printf("[ figures  ] CPU reports %s; kernels run %s\n", cpu_isa_name(expected),
              choice.c_str());
  EXPECT_EQ(offload::active_cpu_isa(), expected);
  EXPECT_EQ(offload::widest_cpu_isa(), expected);
  EXPECT_EQ(choice, std::string(cpu_isa_name(expected)) + " (the widest this CPU has)");
  for (CpuIsa isa : {CpuIsa::scalar, CpuIsa::avx2, CpuIsa::avx512}) {
    EXPECT_EQ(offload::cpu_isa_supported(isa), cpu_reports(isa)) << cpu_isa_name(isa);
  }
}

class CpuIsaForced : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(CpuIsaForced, EnvironmentVariableSelectsThePathTheKernelsRun) {
  const CpuIsa isa = GetParam();
  if (!cpu_reports(isa)) GTEST_SKIP() << cpu_isa_name(isa) << ": not on this CPU";
  const ScopedEnv env(offload::kCpuIsaVariable, cpu_isa_name(isa));
  EXPECT_EQ(offload::select_cpu_isa_from_env(),
            std::string(cpu_isa_name(isa)) + " (forced by STRATA_CPU_ISA)");
  EXPECT_EQ(offload::active_cpu_isa(), isa);
  // The dispatched code's own target bit, not only our reading of it.
  const int64_t family = isa == CpuIsa::avx512 ? (HWY_AVX3 | HWY_AVX3_DL)
                         : isa == CpuIsa::avx2 ? HWY_AVX2
                                               : (HWY_EMU128 | HWY_SCALAR);
  EXPECT_NE(offload::dispatched_target() & family, 0)
      << hwy::TargetName(offload::dispatched_target());
  // Asking what the CPU supports must not undo the forcing.
  EXPECT_TRUE(offload::cpu_isa_supported(widest_the_cpu_reports()));
  EXPECT_EQ(offload::active_cpu_isa(), isa);
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuIsaForced,
                         ::testing::Values(CpuIsa::scalar, CpuIsa::avx2, CpuIsa::avx512),
                         [](const auto& info) { return std::string(cpu_isa_name(info.param)); });

TEST(CpuIsaDispatch, PathTheCpuLacksIsAnErrorNamingTheVariable) {
  const std::optional<CpuIsa> missing = a_path_the_cpu_lacks();
  if (!missing) GTEST_SKIP() << "this CPU has every path";
  const ScopedEnv env(offload::kCpuIsaVariable, cpu_isa_name(*missing));
  try {
    offload::select_cpu_isa_from_env();
    ADD_FAILURE() << "forcing " << cpu_isa_name(*missing) << " did not fail";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find(std::string("STRATA_CPU_ISA: ") + cpu_isa_name(*missing) +
                                         " requested but this CPU does not support it"),
              std::string::npos)
        << e.what();
  }
}

TEST(CpuIsaDispatch, UnknownNameIsAnErrorNamingTheVariable) {
  const ScopedEnv env(offload::kCpuIsaVariable, "sse9");
  try {
    offload::select_cpu_isa_from_env();
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
  const ScopedEnv env(offload::kCpuIsaVariable, "scalar");
  const ScopedEnv threads(sdk::kCpuThreadsVariable, "3");
  const PluginRun run = create_plugin();
  ASSERT_EQ(run.status, STRATA_OK) << run.message;
  EXPECT_NE(run.log.find("CPU kernels scalar (forced by STRATA_CPU_ISA), 3 threads"),
            std::string::npos)
      << run.log;
  // Highway's dispatch state is the process's (one libhwy): the plugin's choice is ours now.
  EXPECT_EQ(offload::active_cpu_isa(), CpuIsa::scalar);
}

TEST(CpuIsaPlugin, LogsTheWidestPathByDefault) {
  const ScopedEnv env(offload::kCpuIsaVariable, nullptr);
  const PluginRun run = create_plugin();
  ASSERT_EQ(run.status, STRATA_OK) << run.message;
  const std::string expected =
      std::string("CPU kernels ") + cpu_isa_name(widest_the_cpu_reports()) + " (the widest";
  EXPECT_NE(run.log.find(expected), std::string::npos) << run.log;
}

TEST(CpuIsaPlugin, PathTheCpuLacksFailsCreate) {
  const std::optional<CpuIsa> missing = a_path_the_cpu_lacks();
  if (!missing) GTEST_SKIP() << "this CPU has every path";
  const ScopedEnv env(offload::kCpuIsaVariable, cpu_isa_name(*missing));
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
