// How the ranks of a shared-memory group wait for each other: numbered phases, a futex, and a
// watch on the peers' processes.
//
// Every rank counts the phases it has reached in its own cache line (arrive); a rank that needs
// everyone at phase p waits until every counter is at least p (wait_all). Counters only grow, so
// there is nothing to reset and no generation to get wrong.
//
// Waiting does not burn a core that a descheduled peer needs: a rank spins only when the group has
// a core per rank (with more ranks than cores it goes straight to sleep), and only briefly where a
// peer may be busy elsewhere, then sleeps on a futex word in the segment. Two budgets
// (SpinBudget): a wait for the peers to enter a collective (its first phase: a peer may still be
// computing, for any time) spins a few µs; a wait inside a collective (every peer has reached the
// previous phase of it and is copying its round) spins up to about a round's copying time: those
// peers arrive once their round is copied unless descheduled, and a futex sleep and wake-up there
// adds tens of µs to every round. arrive() bumps the word and wakes sleepers, which costs a system
// call only when someone sleeps (the classic event count: sleepers registers itself before its
// last check, arrive reads sleepers after its store; both seq_cst).
//
// A sleeping rank wakes every 50 ms to ask whether a peer has exited (through a pidfd taken at
// set-up, so a recycled pid cannot fool it) and, if one has, throws naming it: a rank killed
// mid-collective ends its peers' wait with an error instead of a hang. It throws only after a
// grace of a few seconds: under the runtime, the dead rank's control connection tells every rank
// first, with the cause (its own error message), and the runtime ends the job with that; the
// plugin's own error is for hosts that use the plugin without the runtime.
//
// With a timeout (set_timeout; a plugin whose transport promises one, as allreduce-gloo's
// timeout_ms), a wait that lasts longer throws naming the first rank that has not arrived, as
// exited if it has: a live peer that stalls fails the collective instead of hanging it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::common::shm {

// The futex word and the count of ranks sleeping on it, in the segment (one cache line).
struct alignas(64) WakeWord {
  std::atomic<uint32_t> epoch;
  std::atomic<uint32_t> sleepers;
};

// One rank's phase counter, in the segment (its own cache line).
struct alignas(64) PhaseCounter {
  std::atomic<uint64_t> reached;
};

// A peer to watch: its local rank (the job's rank: a group exists only when every rank is on this
// host) and its pid (as this process sees pids).
struct Peer {
  int local_rank;
  int pid;
};

// How long a wait spins before it sleeps, by what it waits for (0: it sleeps at once).
struct SpinBudget {
  int64_t arrival_ns = 0;  // the peers entering a collective (they may still be computing)
  int64_t round_ns = 0;    // the peers, all inside the collective, finishing a round
  static SpinBudget none() { return {}; }
  // For a group with a core per rank (shm_sync.cpp says where the figures come from).
  static SpinBudget with_core_per_rank();
};

// What a wait waits for (which budget it spins on).
enum class WaitFor { arrival, round };

class PhaseSync {
 public:
  // `counters[r]` is local rank r's counter. `watched`: the peers whose exit this rank can detect (those
  // in its pid namespace). Not thread-safe: one thread per rank uses it at a time.
  // `spin`: how long waits may spin before sleeping (none() unless every rank has a core).
  PhaseSync(WakeWord* wake, std::vector<PhaseCounter*> counters, int local_rank, SpinBudget spin,
            const std::vector<Peer>& watched);
  ~PhaseSync();
  PhaseSync(const PhaseSync&) = delete;
  PhaseSync& operator=(const PhaseSync&) = delete;

  // This rank has reached `phase` (release: what it wrote before is visible to the others).
  void arrive(uint64_t phase);
  // Returns once every rank has reached `phase` (acquire). Throws sdk::Error (STRATA_ERR_COMM)
  // naming `what` and the peer if a watched peer has exited meanwhile. `kind` picks the spin
  // budget: WaitFor::round only when every rank has already reached phase - 1 of the same
  // collective.
  void wait_all(uint64_t phase, const char* what, WaitFor kind = WaitFor::arrival);

  // Whether waits spin before sleeping (the group has a core per rank).
  bool spins() const { return spin_.arrival_ns > 0 || spin_.round_ns > 0; }
  // How many waits have gone to sleep on the futex (for tests and diagnostics).
  uint64_t sleeps() const { return sleeps_; }
  // Bounds every wait_all (0: no bound, the default).
  void set_timeout(int64_t timeout_ns) { timeout_ns_ = timeout_ns; }

 private:
  bool all_reached(uint64_t phase) const;
  void check_peers(uint64_t phase, const char* what);
  [[noreturn]] void fail_timeout(uint64_t phase, const char* what) const;

  WakeWord* wake_;
  std::vector<PhaseCounter*> counters_;
  int local_rank_;
  SpinBudget spin_;
  uint64_t sleeps_ = 0;
  struct Watch {
    Peer peer;
    int pidfd;
  };
  std::vector<Watch> watches_;
  int64_t peer_gone_since_ns_ = 0;  // when a wait first saw a watched peer gone; 0: none
  int64_t timeout_ns_ = 0;
};

}  // namespace strata::common::shm
