#include <strata_common/shm_sync.hpp>

#include <strata/plugin.hpp>

#include <climits>
#include <utility>
#include <ctime>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace strata::common::shm {
namespace {

// How long a wait for the peers to enter a collective spins before it sleeps, when every rank has
// a core. A healthy exchange between running ranks completes within a few µs; a futex wake-up
// costs ~5-10 µs more than a spin, which matters for small collectives. Longer spins only burn
// the core of a rank whose peer is late (still computing).
constexpr int64_t kArrivalSpinNs = 20'000;
// How long a wait inside a collective spins: about one round of shm_chunk_bytes (1 MiB) at a few
// GB/s. Every peer is then copying its own round; with only the arrival budget such waits ended
// in a futex sleep and wake-up. bench/allreduce --shm-only, 2 ranks on a 2-core VM, 6 runs
// alternating with a build that spun 20 µs here (2026-12-07): medians 14.4 against 8.0 GB/s at
// 1 MiB, 5.9 against 4.6 at 4 MiB, 4.8 against 3.3 at 16 MiB (the runs spread 2-3x either way),
// and 121 futex calls per rank against 150 in a 4 MiB run.
constexpr int64_t kRoundSpinNs = 500'000;
// How often a sleeping rank checks that its peers still run, and how long after it first sees one
// gone it gives up (see the header: the runtime's own report, with the cause, comes first).
constexpr long kLivenessCheckNs = 50'000'000;
constexpr int64_t kExitGraceNs = 3'000'000'000;

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Shared (not FUTEX_PRIVATE): the word is in memory mapped by several processes.
long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

int pidfd_open(int pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

SpinBudget SpinBudget::with_core_per_rank() { return {kArrivalSpinNs, kRoundSpinNs}; }

PhaseSync::PhaseSync(WakeWord* wake, std::vector<PhaseCounter*> counters, int local_rank,
                     SpinBudget spin, const std::vector<Peer>& watched)
    : wake_(wake), counters_(std::move(counters)), local_rank_(local_rank), spin_(spin) {
  for (const Peer& peer : watched) {
    // A kernel without pidfd_open (before 5.3) leaves the peer to the runtime's watchdog.
    const int fd = pidfd_open(peer.pid);
    if (fd >= 0) watches_.push_back({peer, fd});
  }
}

PhaseSync::~PhaseSync() {
  for (const Watch& watch : watches_) close(watch.pidfd);
}

void PhaseSync::arrive(uint64_t phase) {
  counters_[local_rank_]->reached.store(phase, std::memory_order_seq_cst);
  wake_->epoch.fetch_add(1, std::memory_order_seq_cst);
  if (wake_->sleepers.load(std::memory_order_seq_cst) != 0) {
    futex(&wake_->epoch, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

bool PhaseSync::all_reached(uint64_t phase) const {
  for (const PhaseCounter* counter : counters_) {
    if (counter->reached.load(std::memory_order_acquire) < phase) return false;
  }
  return true;
}

void PhaseSync::wait_all(uint64_t phase, const char* what, WaitFor kind) {
  if (all_reached(phase)) return;
  const int64_t spin_ns = kind == WaitFor::round ? spin_.round_ns : spin_.arrival_ns;
  if (spin_ns > 0) {
    const int64_t until = now_ns() + spin_ns;
    for (int i = 1;; ++i) {
      cpu_relax();
      if (all_reached(phase)) return;
      if (i % 64 == 0 && now_ns() > until) break;
    }
  } else {
    sched_yield();  // a peer that only needs the CPU for a moment gets it at once
    if (all_reached(phase)) return;
  }
  ++sleeps_;
  const timespec slice{0, kLivenessCheckNs};
  const int64_t began = timeout_ns_ > 0 ? now_ns() : 0;
  for (;;) {
    const uint32_t epoch = wake_->epoch.load(std::memory_order_seq_cst);
    wake_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const bool done = all_reached(phase);
    if (!done) futex(&wake_->epoch, FUTEX_WAIT, epoch, &slice);
    wake_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (done || all_reached(phase)) return;
    check_peers(phase, what);
    if (timeout_ns_ > 0 && now_ns() - began >= timeout_ns_) fail_timeout(phase, what);
  }
}

void PhaseSync::fail_timeout(uint64_t phase, const char* what) const {
  const std::string step = "this collective's step " + std::to_string(phase);
  for (size_t r = 0; r < counters_.size(); ++r) {
    if (counters_[r]->reached.load(std::memory_order_acquire) >= phase) continue;
    std::string who = "rank " + std::to_string(r);
    for (const Watch& watch : watches_) {
      if (watch.peer.local_rank != static_cast<int>(r)) continue;
      who += " (pid " + std::to_string(watch.peer.pid) + ", same host)";
      pollfd fd{watch.pidfd, POLLIN, 0};
      if (poll(&fd, 1, 0) > 0) {
        sdk::fail(STRATA_ERR_COMM, std::string(what) + " over shared memory: " + who +
                                       " exited before it reached " + step +
                                       "; the collective cannot complete");
      }
    }
    sdk::fail(STRATA_ERR_COMM, std::string(what) + " over shared memory: " + who +
                                   " did not reach " + step + " within the timeout (" +
                                   std::to_string(timeout_ns_ / 1'000'000) + " ms)");
  }
  sdk::fail(STRATA_ERR_COMM, std::string(what) + " over shared memory: timed out at " + step);
}

void PhaseSync::check_peers(uint64_t phase, const char* what) {
  for (const Watch& watch : watches_) {
    if (counters_[watch.peer.local_rank]->reached.load(std::memory_order_acquire) >= phase) continue;
    pollfd fd{watch.pidfd, POLLIN, 0};
    if (poll(&fd, 1, 0) <= 0) continue;  // still running
    const int64_t now = now_ns();
    if (peer_gone_since_ns_ == 0) peer_gone_since_ns_ = now;
    if (now - peer_gone_since_ns_ < kExitGraceNs) return;
    sdk::fail(STRATA_ERR_COMM,
              std::string(what) + " over shared memory: rank " + std::to_string(watch.peer.local_rank) +
                  " (pid " + std::to_string(watch.peer.pid) +
                  ", same host) exited before it reached this collective's step " +
                  std::to_string(phase) + "; the collective cannot complete");
  }
}

}  // namespace strata::common::shm
