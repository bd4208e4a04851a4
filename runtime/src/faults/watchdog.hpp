// The watchdog: one thread per rank (ranks > 1) that keeps the job from hanging silently.
//  - Heartbeats: once a tick it sends this rank's activity to every other rank over the control
//    channel and records theirs.
//  - Stall inspector: when this rank has been blocked on a collective for warning_seconds, it logs
//    which ranks have not arrived and what each last did; at shutdown_seconds it tells the others
//    and ends this process (exit status kExitStatus) with that message. 0 turns either off. It runs
//    from the start of strata_create, before the control channel is up (then without news of the
//    others), so a rank that stops during start-up does not hang the job either.
//  - Failures: when another rank reports a failure, its connection closes without a goodbye (a
//    killed or crashed process), or it tears the runtime down while this rank waits on a
//    collective it never joined, this rank says so and, after a short grace in which its own host
//    may see the same error, ends with that rank's message: a rank blocked in a collective (MPI
//    cannot be interrupted) has no other way out.
// Why end the process rather than return an error: see docs/DESIGN.md, "Faults".
#pragma once

#include "faults/activity.hpp"
#include "faults/control_channel.hpp"
#include "faults/stall_report.hpp"
#include "timeline/timeline.hpp"

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace strata::rt {

struct WatchdogSettings {
  double warning_seconds = 60.0;   // 0: no warning
  double shutdown_seconds = 300.0; // 0: never end the job for a stall
  double failure_grace_seconds = 2.0;
};

class Watchdog {
 public:
  static constexpr int kExitStatus = 70;  // EX_SOFTWARE: ended by the watchdog

  // Starts the thread, without a control channel yet. `board` must outlive the watchdog.
  // Stall warnings go on the timeline in `timeline` as events, and a rank the watchdog ends
  // finishes its own part of it with the message (Timeline::finish_alone). `timeline` (the
  // engine's slot) must outlive the watchdog too.
  Watchdog(const ActivityBoard& board, int rank, int size, WatchdogSettings settings,
           const TimelineSlot& timeline);
  // Says goodbye to the other ranks and stops the thread.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // The channel is up; it must outlive the watchdog. Call once.
  void attach(ControlChannel& channel);
  // Names for messages (after finalize). Thread-safe.
  void set_names(ActivityNames names);
  // This rank failed in a call that leaves the others stuck: tell them. Thread-safe.
  void local_failure(const std::string& message);
  // strata_destroy began: from now on a wait counts as a stall only while another rank is silent
  // or gone (teardown waits for the slowest rank, which may legitimately take long). Thread-safe.
  void closing();
  // Whether every other rank has failed, said goodbye or gone within `seconds`: after this rank
  // failed, that tells a failure every rank hit alike (all can tear down together) from one the
  // others are still waiting on. Thread-safe.
  bool others_done_within(double seconds) const;

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  void loop_once(Clock::time_point& next_beat);
  void handle(const ControlEvent& event);
  void check_stall();
  void check_departed_peers();
  void check_peer_failure();
  void doom(const std::string& message, uint64_t sender_collectives);
  void end_silent_local_peers();
  void refresh_peer_ages();
  bool some_peer_silent_or_gone() const;
  // `logged`: the message is in the log already.
  [[noreturn]] void end_process(const std::string& message, bool logged);
  ActivityNames names();
  void send(ControlMessage type, const std::string& payload) noexcept;

  const ActivityBoard& board_;
  int rank_;
  WatchdogSettings settings_;
  double tick_seconds_;
  double silent_after_;

  std::atomic<ControlChannel*> channel_{nullptr};
  const TimelineSlot& timeline_;
  std::mutex names_mutex_;
  ActivityNames names_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> local_failed_{false};
  std::atomic<bool> closing_{false};
  std::vector<std::atomic<bool>> peer_done_;  // failed, left or gone; written by the thread

  // Touched by the watchdog thread only.
  std::vector<PeerState> peers_;
  std::vector<Clock::time_point> heard_at_;
  int64_t warned_for_ = 0;  // wait_since of the wait already warned about
  bool saw_channel_ = false;
  static constexpr double kAnnounceAfterSeconds = 0.25;
  struct Doom {
    Clock::time_point since;
    std::string message;
    uint64_t sender_collectives;  // how many collectives the failed rank had started
    bool announced;
  };
  std::optional<Doom> doom_;

  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace strata::rt
