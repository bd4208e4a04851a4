// The watchdog: one thread per rank (ranks > 1) that keeps the job from hanging silently.
//  - Heartbeats: once a tick it sends this rank's activity to every other rank over the control
//    channel and records theirs.
//  - Stall inspector: when this rank has been blocked on a collective for warning_seconds, it logs
//    which ranks have not arrived and what each last did; at shutdown_seconds it tells the others
//    and ends this process (exit status kExitStatus) with that message. 0 turns either off.
//  - Failures: when another rank reports a failure, or its connection closes without a goodbye (a
//    killed or crashed process), this rank logs it and, after a short grace in which its own host
//    may see the same error, ends with that rank's message: a rank blocked in a collective (MPI
//    cannot be interrupted) has no other way out.
// Why end the process rather than return an error: see docs/DESIGN.md, "Faults".
#pragma once

#include "activity.hpp"
#include "control_channel.hpp"
#include "stall_report.hpp"

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

  // Starts the thread. `channel` and `board` must outlive the watchdog.
  Watchdog(ControlChannel& channel, const ActivityBoard& board, int rank, int size,
           WatchdogSettings settings);
  // Says goodbye to the other ranks and stops the thread.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Names for messages (after finalize). Thread-safe.
  void set_names(ActivityNames names);
  // This rank failed in a call that leaves the others stuck: tell them. Thread-safe.
  void local_failure(const std::string& message);
  // strata_destroy began: a goodbye, so our disconnect does not look like a crash. Thread-safe.
  void closing();

 private:
  using Clock = std::chrono::steady_clock;
  void run();
  void handle(const ControlEvent& event);
  void check_stall();
  void check_peer_failure();
  void doom(const std::string& message);
  void end_silent_local_peers();
  [[noreturn]] void end_process(const std::string& message);
  ActivityNames names();

  ControlChannel& channel_;
  const ActivityBoard& board_;
  int rank_;
  WatchdogSettings settings_;
  double tick_seconds_;
  double silent_after_;

  std::mutex names_mutex_;
  ActivityNames names_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> local_failed_{false};
  std::atomic<bool> said_goodbye_{false};
  std::atomic<bool> closing_{false};

  // Touched by the watchdog thread only.
  std::vector<PeerState> peers_;
  std::vector<Clock::time_point> heard_at_;
  int64_t warned_for_ = 0;  // wait_since of the wait already warned about
  static constexpr double kAnnounceAfterSeconds = 0.25;
  struct Doom {
    Clock::time_point since;
    std::string message;
    bool announced;
  };
  std::optional<Doom> doom_;

  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace strata::rt
