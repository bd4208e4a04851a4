// strata_common_shm (plugins/common/shm): the shared-memory segment and phase sync
// (shm_segment.cpp, shm_sync.cpp), with real processes but no MPI: fork()ed children stand in for
// ranks. Proves that a rank waiting for a phase names a peer that exited before reaching it
// (within a few 50 ms liveness checks, through its pidfd), that a peer which is only late is
// waited for and one that exited after reaching the phase is not blamed; and that segments leave
// no name behind and stale names (a dead creator's) are removed while live ones are kept; and that
// a wait spins on the budget of what it waits for (a collective's arrival, or a round inside it).
#include <strata_common/shm_segment.hpp>
#include <strata_common/shm_sync.hpp>

#include <strata/plugin.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <new>
#include <string>
#include <thread>

namespace strata::common::shm {
namespace {

using Clock = std::chrono::steady_clock;

// A segment holding the futex word and two ranks' phase counters. Local rank 0 is this process,
// local rank 1 a child.
struct TwoRanks {
  ShmSegment segment = ShmSegment::create(4096);
  WakeWord* wake = new (segment.data()) WakeWord{};
  PhaseCounter* counters[2] = {new (segment.data() + 64) PhaseCounter{},
                               new (segment.data() + 128) PhaseCounter{}};
  std::vector<PhaseCounter*> all() const { return {counters[0], counters[1]}; }
};

// Forks local rank 1: it sleeps `delay`, arrives at phase 1 (waiting for everyone there) and
// exits. Returns its pid.
pid_t fork_rank1(TwoRanks& ranks, std::chrono::milliseconds delay) {
  const pid_t pid = fork();
  if (pid == 0) {
    PhaseSync sync(ranks.wake, ranks.all(), 1, SpinBudget::with_core_per_rank(), {});
    std::this_thread::sleep_for(delay);
    sync.arrive(1);
    try {
      sync.wait_all(1, "child");
    } catch (...) {
      _exit(2);
    }
    _exit(0);
  }
  return pid;
}

int exit_status(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(ShmPhaseSync, PeerThatExitedBeforeReachingThePhaseIsNamed) {
  TwoRanks ranks;
  const pid_t child = fork_rank1(ranks, std::chrono::milliseconds(0));
  ASSERT_GT(child, 0);
  PhaseSync sync(ranks.wake, ranks.all(), 0, SpinBudget::none(), {{1, child}});
  sync.arrive(1);
  sync.wait_all(1, "allreduce");  // the child reaches phase 1, then exits
  sync.arrive(2);
  const auto start = Clock::now();
  try {
    sync.wait_all(2, "allreduce");
    ADD_FAILURE() << "wait_all returned although rank 1 exited before phase 2";
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_COMM);
    const std::string expected = "allreduce over shared memory: rank 1 (pid " +
                                 std::to_string(child) +
                                 ", same host) exited before it reached this collective's step 2";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  // After the grace that leaves the runtime's own report first (shm_sync.hpp): 3 s, checked
  // every 50 ms.
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(2900));
  EXPECT_LT(waited, std::chrono::milliseconds(5000));
  EXPECT_EQ(exit_status(child), 0);
}

TEST(ShmPhaseSync, LatePeerIsWaitedFor) {
  TwoRanks ranks;
  const pid_t child = fork_rank1(ranks, std::chrono::milliseconds(300));
  ASSERT_GT(child, 0);
  PhaseSync sync(ranks.wake, ranks.all(), 0, SpinBudget::with_core_per_rank(), {{1, child}});
  const auto start = Clock::now();
  sync.arrive(1);
  EXPECT_NO_THROW(sync.wait_all(1, "barrier"));
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(250));
  EXPECT_EQ(exit_status(child), 0);
}

TEST(ShmPhaseSync, PeerThatExitedAfterReachingThePhaseIsNotBlamed) {
  TwoRanks ranks;
  const pid_t child = fork_rank1(ranks, std::chrono::milliseconds(0));
  ASSERT_GT(child, 0);
  PhaseSync sync(ranks.wake, ranks.all(), 0, SpinBudget::none(), {{1, child}});
  sync.arrive(1);
  // The child is waiting for us at phase 1; once we arrived it returns and exits.
  while (kill(child, 0) == 0 && ranks.counters[1]->reached.load() < 1) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NO_THROW(sync.wait_all(1, "barrier"));
  EXPECT_EQ(exit_status(child), 0);
}

// A wait for the peers to enter a collective spins on the arrival budget; a wait inside one (the
// peers passed the previous phase) on the round budget. With budgets of 0 and 10 s and a peer
// 200 ms late each time, the first wait must sleep and the second must not.
TEST(ShmPhaseSync, WaitsInsideACollectiveSpinOnTheRoundBudget) {
  TwoRanks ranks;
  const pid_t child = fork();
  if (child == 0) {
    PhaseSync sync(ranks.wake, ranks.all(), 1, SpinBudget::none(), {});
    for (uint64_t phase = 1; phase <= 2; ++phase) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      sync.arrive(phase);
      sync.wait_all(phase, "child");
    }
    _exit(0);
  }
  ASSERT_GT(child, 0);
  PhaseSync sync(ranks.wake, ranks.all(), 0, SpinBudget{0, 10'000'000'000}, {{1, child}});
  sync.arrive(1);
  sync.wait_all(1, "allreduce", WaitFor::arrival);
  EXPECT_EQ(sync.sleeps(), 1u) << "the arrival budget is 0: a wait for a late peer sleeps";
  sync.arrive(2);
  sync.wait_all(2, "allreduce", WaitFor::round);
  EXPECT_EQ(sync.sleeps(), 1u) << "the round budget (10 s) covers a peer 200 ms late";
  EXPECT_EQ(exit_status(child), 0);
}

bool listed(const std::string& name) {
  struct stat st {};
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

TEST(ShmSegment, NameGoesOnUnlinkAndWithTheCreator) {
  std::string name;
  {
    ShmSegment segment = ShmSegment::create(8192);
    name = segment.name();
    EXPECT_EQ(name.rfind("/" + segment_prefix() + std::to_string(getpid()) + "-", 0), 0u) << name;
    EXPECT_TRUE(listed(name));
    ShmSegment other = ShmSegment::open(name, 8192);
    segment.data()[100] = 42;
    EXPECT_EQ(other.data()[100], 42);
    segment.unlink();
    EXPECT_FALSE(listed(name));
    EXPECT_EQ(other.data()[100], 42);  // the memory lives on in the mappings
  }
  {
    ShmSegment segment = ShmSegment::create(4096);  // destroyed without unlink()
    name = segment.name();
  }
  EXPECT_FALSE(listed(name));
}

TEST(ShmSegment, StaleNamesAreRemovedAndLiveOnesKept) {
  pid_t dead = 4194000;
  while (kill(dead, 0) == 0 || errno == EPERM) ++dead;
  const std::string stale = "/" + segment_prefix() + std::to_string(dead) + "-3";
  const std::string live = "/" + segment_prefix() + std::to_string(getpid()) + "-999998";
  for (const std::string& name : {stale, live}) {
    const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
    ASSERT_GE(fd, 0) << name;
    close(fd);
  }
  EXPECT_GE(remove_stale_segments(), 1);
  EXPECT_FALSE(listed(stale));
  EXPECT_TRUE(listed(live));
  shm_unlink(live.c_str());
  shm_unlink(stale.c_str());
}

}  // namespace
}  // namespace strata::common::shm
