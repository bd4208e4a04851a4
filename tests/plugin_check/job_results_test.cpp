// How strata-plugin-check merges the ranks' result files into one verdict per check
// (tools/strata-plugin-check/job_results.cpp), with files written as the workers write them.
#include "job_results.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace strata::plugin_check {
namespace {

namespace fs = std::filesystem;

class MergeJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("strata-job-results-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One rank's file: the lines, tab-separated as FileRecorder writes them, then "done".
  void rank(int r, const std::vector<std::string>& lines) {
    std::ofstream out(dir_ / ("rank-" + std::to_string(r) + ".txt"));
    for (const std::string& line : lines) out << line << "\n";
    out << "done\n";
  }
  std::vector<CheckResult> merge(int ranks) {
    return merge_job(dir_.string(), ranks, "comm.np2.", {});
  }

  fs::path dir_;
};

TEST_F(MergeJob, OneRankThatCannotRunDecidesWithItsReason) {
  rank(0, {"begin\tcaps", "pass\tcaps\t"});
  rank(1, {"begin\tcaps", "cannot_run\tcaps\tno CUDA device visible"});
  const auto results = merge(2);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].name, "comm.np2.caps");
  EXPECT_EQ(results[0].outcome, Outcome::CannotRun);
  EXPECT_EQ(results[0].detail, "rank 1: no CUDA device visible");
}

TEST_F(MergeJob, AFailureOnAnotherRankStillFails) {
  rank(0, {"begin\tcaps", "cannot_run\tcaps\tno CUDA device visible"});
  rank(1, {"begin\tcaps", "fail\tcaps\tquery returned STRATA_ERR_INTERNAL"});
  const auto results = merge(2);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, Outcome::Fail);
  EXPECT_EQ(results[0].detail, "rank 1: query returned STRATA_ERR_INTERNAL");
}

TEST_F(MergeJob, EveryRankCannotRunNamesTheLowest) {
  rank(0, {"begin\tcaps", "cannot_run\tcaps\tno device on host a"});
  rank(1, {"begin\tcaps", "cannot_run\tcaps\tno device on host b"});
  const auto results = merge(2);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, Outcome::CannotRun);
  EXPECT_EQ(results[0].detail, "rank 0: no device on host a");
}

TEST_F(MergeJob, PassOnOneRankAndSkipOnAnotherStillDisagree) {
  rank(0, {"begin\tbarrier", "pass\tbarrier\t"});
  rank(1, {"skip\tbarrier\tthe caps do not claim barrier"});
  const auto results = merge(2);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].outcome, Outcome::Fail);
  EXPECT_EQ(results[0].detail,
            "ranks disagree: rank 0 passed, rank 1 skipped (the caps do not claim barrier)");
}

}  // namespace
}  // namespace strata::plugin_check
