// strata-run's restart policy (restarts.hpp) and the failed rank in mpirun's banners.
#include "mpi_output.hpp"
#include "restarts.hpp"

#include <gtest/gtest.h>

namespace strata::run {
namespace {

Placement two_hosts() { return place_ranks({{"a", 2, "-H entry 1"}, {"b", 2, "-H entry 2"}}, 0); }

std::string slots_of(const std::vector<Host>& hosts) { return hosts.empty() ? "none" : describe_slots(hosts); }

TEST(SlotLedger, AFailedRankLosesItsSlot) {
  SlotLedger ledger;
  JobOutcome outcome;
  outcome.exit_code = 137;
  outcome.failed_rank = 3;  // on host b
  ledger.record(two_hosts(), outcome, false);
  EXPECT_EQ(slots_of(ledger.apply({{"a", 2, ""}, {"b", 2, ""}})), "a:2, b:1");
  ledger.record(two_hosts(), outcome, false);
  EXPECT_EQ(slots_of(ledger.apply({{"a", 2, ""}, {"b", 2, ""}})), "a:2");
}

TEST(SlotLedger, AStartUpFailureOrAnUnreachableHostDropsTheHost) {
  SlotLedger ledger;
  JobOutcome crash;
  crash.failed_rank = 0;  // on host a
  ledger.record(two_hosts(), crash, true);
  EXPECT_EQ(slots_of(ledger.apply({{"a", 2, ""}, {"b", 2, ""}, {"c", 1, ""}})), "b:2, c:1");
  JobOutcome unreachable;
  unreachable.lost_host = "c";
  ledger.record(two_hosts(), unreachable, false);
  EXPECT_EQ(slots_of(ledger.apply({{"a", 2, ""}, {"b", 2, ""}, {"c", 1, ""}})), "b:2");
}

TEST(SlotLedger, AStartUpFailureOnTheOnlyHostLosesTheSlotAlone) {
  SlotLedger ledger;
  JobOutcome crash;
  crash.failed_rank = 1;
  ledger.record(place_ranks({{"localhost", 4, "default"}}, 0), crash, true);
  EXPECT_EQ(slots_of(ledger.apply({{"localhost", 4, "default"}})), "localhost:3");
}

TEST(SlotLedger, NoRankToBlameKeepsEverySlot) {
  SlotLedger ledger;
  JobOutcome outcome;
  outcome.exit_code = 1;
  ledger.record(two_hosts(), outcome, true);
  EXPECT_EQ(slots_of(ledger.apply({{"a", 2, ""}, {"b", 2, ""}})), "a:2, b:2");
}

TEST(RestartWorldSize, LargestAllowedSizeInRange) {
  const auto any = [](int) { return true; };
  const auto even = [](int n) { return n % 2 == 0; };
  EXPECT_EQ(restart_world_size(3, 1, 0, any), 3);
  EXPECT_EQ(restart_world_size(3, 1, 0, even), 2);
  EXPECT_EQ(restart_world_size(7, 1, 4, any), 4);
  EXPECT_EQ(restart_world_size(3, 4, 0, any), 0);
  EXPECT_EQ(restart_world_size(3, 3, 0, even), 0);
}

TEST(MpirunBanner, NamesTheFailedRank) {
  EXPECT_EQ(failed_rank_in_mpirun_line("mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)."),
            std::optional<int>(1));
  EXPECT_EQ(failed_rank_in_mpirun_line("  Process name: [[2107,1],12]"), std::optional<int>(12));
  EXPECT_EQ(failed_rank_in_mpirun_line("Primary job  terminated normally, but 1 process returned"), std::nullopt);
  EXPECT_EQ(failed_rank_in_mpirun_line("  Process name: [[2107,1],]"), std::nullopt);
}

}  // namespace
}  // namespace strata::run
