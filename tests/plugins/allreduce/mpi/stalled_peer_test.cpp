// Ranks that wait for a stalled peer must sleep, not spin (issue 10, "No silent hang").
//
// The last rank sleeps before it enters an allreduce, as a rank stopped by a hung NFS read or a
// swapped-out node would; the others measure their own process CPU time (every thread: the
// progress thread runs the non-blocking work) across the collective. Open MPI's blocking
// collectives busy-poll, so without the arrival gate a waiting rank shows ~100 % of the wall time.
// Run with 3 ranks (tests/plugins/allreduce/mpi/CMakeLists.txt); oversubscribed is fine, and is the case that
// matters most.
#include "comm_env.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace strata::test::comm {
namespace {

constexpr auto kStall = std::chrono::seconds(3);
constexpr double kMaxCpuFraction = 0.25;
// Three 1 MiB pieces and a bit: the gate runs once per collective, not per piece.
constexpr uint64_t kCount = 3 * (uint64_t{1} << 18) + 7;

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

void barrier() {
  strata_error err = sdk::make_error();
  ASSERT_EQ(abi::barrier(instance(), nullptr, &err), STRATA_OK) << err.message;
}

// Runs `collective` on every rank, the last one entering kStall late, and checks on the others
// that they waited about that long on less than kMaxCpuFraction of a core.
void expect_waiting_ranks_sleep(const char* label, const std::function<void()>& collective) {
  barrier();
  const bool stalled = rank() == world() - 1;
  if (stalled) std::this_thread::sleep_for(kStall);
  const auto wall_start = std::chrono::steady_clock::now();
  const double cpu_start = process_cpu_seconds();
  collective();
  const double cpu = process_cpu_seconds() - cpu_start;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (stalled) return;
  std::fprintf(stderr, "[rank %d] %s: waited %.2f s on %.3f s of CPU (%.1f %%)\n", rank(), label,
               wall, cpu, 100.0 * cpu / wall);
  // Rank 2's sleep started after the barrier released it, so we waited for most of it.
  EXPECT_GT(wall, 0.5 * std::chrono::duration<double>(kStall).count()) << label;
  EXPECT_LT(cpu, kMaxCpuFraction * wall) << label << ": spun while waiting for the stalled rank";
}

TEST(StalledPeer, BlockingAllreduceWaitsWithoutSpinning) {
  ASSERT_GE(world(), 2) << "needs a rank to stall and one to wait";
  Bytes data = rank_input(STRATA_F32, rank(), kCount);
  strata_buffer buffer = view(data, STRATA_F32);
  expect_waiting_ranks_sleep("blocking allreduce", [&] {
    strata_error err = sdk::make_error();
    ASSERT_EQ(abi::allreduce(instance(), &buffer, &buffer, STRATA_SUM, nullptr, &err), STRATA_OK)
        << err.message;
  });
  EXPECT_EQ(first_difference(data, expected_reduction(STRATA_F32, STRATA_SUM, world(), kCount),
                             STRATA_F32),
            "");
}

TEST(StalledPeer, NonblockingAllreduceWaitsWithoutSpinning) {
  ASSERT_GE(world(), 2) << "needs a rank to stall and one to wait";
  Bytes data = rank_input(STRATA_F32, rank(), kCount);
  strata_buffer buffer = view(data, STRATA_F32);
  expect_waiting_ranks_sleep("non-blocking allreduce + wait", [&] {
    strata_error err = sdk::make_error();
    strata_request req = nullptr;
    ASSERT_EQ(abi::allreduce(instance(), &buffer, &buffer, STRATA_AVG, &req, &err), STRATA_OK)
        << err.message;
    ASSERT_EQ(ops().wait(instance(), req, &err), STRATA_OK) << err.message;
  });
  EXPECT_EQ(first_difference(data, expected_reduction(STRATA_F32, STRATA_AVG, world(), kCount),
                             STRATA_F32),
            "");
}

// The same over MPI itself (mpi_instance: shared memory off, where instance() takes it on one
// host): a large allreduce passes the arrival gate, a small one (below arrival_gate_min_bytes)
// runs as MPI_Iallreduce waited politely; both must sleep.
TEST(StalledPeer, BlockingAllreduceOverMpiWaitsWithoutSpinningLargeAndSmall) {
  ASSERT_GE(world(), 2) << "needs a rank to stall and one to wait";
  for (uint64_t count : {kCount, uint64_t{256}}) {
    Bytes data = rank_input(STRATA_F32, rank(), count);
    strata_buffer buffer = view(data, STRATA_F32);
    const std::string label =
        "blocking allreduce over MPI of " + std::to_string(count * 4) + " bytes";
    expect_waiting_ranks_sleep(label.c_str(), [&] {
      strata_error err = sdk::make_error();
      ASSERT_EQ(abi::allreduce(mpi_instance(), &buffer, &buffer, STRATA_SUM, nullptr, &err),
                STRATA_OK)
          << err.message;
    });
    EXPECT_EQ(first_difference(data, expected_reduction(STRATA_F32, STRATA_SUM, world(), count),
                               STRATA_F32),
              "");
  }
}

}  // namespace
}  // namespace strata::test::comm
