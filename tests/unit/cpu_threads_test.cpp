// strata/cpu_threads.hpp: the CPU thread count strata_offload and strata_amp share.
// STRATA_CPU_THREADS first, then OMP_NUM_THREADS, else hardware threads / ranks on the node (at
// least 1); bad values fail naming the variable.
#include <gtest/gtest.h>

#include <strata/cpu_threads.hpp>

#include <string>

namespace strata::sdk {
namespace {

TEST(CpuThreads, HardwareThreadsAreSharedByTheRanksOfTheNode) {
  EXPECT_EQ(choose_cpu_threads(nullptr, nullptr, 16, 4).count, 4u);
  EXPECT_EQ(choose_cpu_threads(nullptr, nullptr, 16, 3).count, 5u) << "rounded down";
  EXPECT_EQ(choose_cpu_threads(nullptr, nullptr, 16, 1).count, 16u);
  EXPECT_EQ(choose_cpu_threads("", "", 8, 2).count, 4u) << "empty variables count as unset";
  EXPECT_EQ(choose_cpu_threads(nullptr, nullptr, 16, 4).source,
            "16 hardware threads / 4 ranks on this node");
}

TEST(CpuThreads, AtLeastOneThread) {
  EXPECT_EQ(choose_cpu_threads(nullptr, nullptr, 2, 8).count, 1u) << "more ranks than threads";
  EXPECT_EQ(choose_cpu_threads(nullptr, nullptr, 0, 1).count, 1u) << "hardware count unknown";
  EXPECT_EQ(choose_cpu_threads(nullptr, nullptr, 4, 0).count, 4u) << "local size unknown: 1";
}

TEST(CpuThreads, StrataVariableWinsOverOmpAndTheNodeShare) {
  const CpuThreads t = choose_cpu_threads("3", "7", 64, 2);
  EXPECT_EQ(t.count, 3u);
  EXPECT_EQ(t.source, "from STRATA_CPU_THREADS");
  EXPECT_EQ(choose_cpu_threads("24", nullptr, 4, 4).count, 24u) << "not divided by the ranks";
}

TEST(CpuThreads, OmpNumThreadsIsNextAndMayBeAList) {
  const CpuThreads t = choose_cpu_threads(nullptr, "6", 64, 2);
  EXPECT_EQ(t.count, 6u);
  EXPECT_EQ(t.source, "from OMP_NUM_THREADS");
  EXPECT_EQ(choose_cpu_threads(nullptr, "8,2", 64, 2).count, 8u) << "the outer level";
}

std::string error_of(const char* strata_value, const char* omp_value) {
  try {
    choose_cpu_threads(strata_value, omp_value, 8, 1);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "(no error)";
}

TEST(CpuThreads, BadValuesNameTheVariableAndWhatItExpects) {
  EXPECT_EQ(error_of("0", nullptr),
            "STRATA_CPU_THREADS: expected a thread count from 1 to 4096, got '0'");
  EXPECT_EQ(error_of("four", nullptr),
            "STRATA_CPU_THREADS: expected a thread count from 1 to 4096, got 'four'");
  EXPECT_EQ(error_of("2,2", nullptr),
            "STRATA_CPU_THREADS: expected a thread count from 1 to 4096, got '2,2'");
  EXPECT_EQ(error_of("5000", nullptr),
            "STRATA_CPU_THREADS: expected a thread count from 1 to 4096, got '5000'");
  EXPECT_EQ(error_of(nullptr, "-1"),
            "OMP_NUM_THREADS: expected a thread count from 1 to 4096 (or a list of them), got "
            "'-1'");
  EXPECT_EQ(error_of(nullptr, "4x"),
            "OMP_NUM_THREADS: expected a thread count from 1 to 4096 (or a list of them), got "
            "'4x'");
  EXPECT_EQ(error_of("bad", "4"), error_of("bad", nullptr)) << "a bad STRATA_CPU_THREADS is not "
                                                              "hidden by OMP_NUM_THREADS";
}

// Without a comm stratum (a single-process host) the process has the node to itself.
TEST(CpuThreads, NoCommStratumMeansOneRankOnTheNode) {
  EXPECT_EQ(local_ranks(nullptr), 1);
  strata_host_api host{};
  host.struct_size = sizeof host;
  EXPECT_EQ(local_ranks(&host), 1);
}

}  // namespace
}  // namespace strata::sdk
