#include "watchdog.hpp"

#include "log.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace strata::rt {

Watchdog::Watchdog(ControlChannel& channel, const ActivityBoard& board, int rank, int size,
                   WatchdogSettings settings)
    : channel_(channel),
      board_(board),
      rank_(rank),
      settings_(settings),
      // A few heartbeats per warning period, so the report is fresh; at most one a second.
      tick_seconds_(settings.warning_seconds > 0 ? std::clamp(settings.warning_seconds / 5, 0.1, 1.0)
                                                 : 1.0),
      silent_after_(std::max(3 * tick_seconds_, 2.0)),
      peers_(static_cast<size_t>(size)),
      heard_at_(static_cast<size_t>(size), Clock::now()),
      thread_([this] { run(); }) {
  for (int r = 0; r < size; ++r) peers_[static_cast<size_t>(r)].rank = r;
}

Watchdog::~Watchdog() {
  closing();
  stop_ = true;
  channel_.wake();
  thread_.join();
}

void Watchdog::set_names(ActivityNames names) {
  std::lock_guard lock(names_mutex_);
  names_ = std::move(names);
}

ActivityNames Watchdog::names() {
  std::lock_guard lock(names_mutex_);
  return names_;
}

void Watchdog::local_failure(const std::string& message) {
  local_failed_ = true;
  channel_.send_all(ControlMessage::Failure, message);
}

void Watchdog::closing() {
  closing_ = true;
  if (!said_goodbye_.exchange(true)) channel_.send_all(ControlMessage::Bye, {});
}

void Watchdog::run() {
  auto next_beat = Clock::now();
  while (!stop_) {
    const auto now = Clock::now();
    if (now >= next_beat) {
      channel_.send_all(ControlMessage::Heartbeat, board_.snapshot().encode());
      next_beat = now + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(tick_seconds_));
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - now);
    for (const ControlEvent& event : channel_.poll(static_cast<int>(std::max<int64_t>(1, wait.count())))) {
      handle(event);
    }
    if (stop_) break;
    check_stall();
    check_peer_failure();
  }
}

void Watchdog::handle(const ControlEvent& event) {
  PeerState& peer = peers_[static_cast<size_t>(event.peer)];
  if (event.kind == ControlEvent::Kind::Closed) {
    if (peer.left) return;  // it said goodbye first: a clean exit
    peer.lost = event.payload + " without a goodbye: the process ended, was killed or crashed";
    doom("rank " + std::to_string(event.peer) + " is gone (" + peer.lost + ")");
    return;
  }
  switch (event.type) {
    case ControlMessage::Heartbeat:
      try {
        peer.last = ActivitySnapshot::decode(event.payload);
        peer.heard = true;
        heard_at_[static_cast<size_t>(event.peer)] = Clock::now();
      } catch (const std::exception&) {
        logger().warn("rank {} sent a malformed heartbeat; ignored", event.peer);
      }
      break;
    case ControlMessage::Failure:
      doom("rank " + std::to_string(event.peer) + " failed: " + event.payload);
      break;
    case ControlMessage::Bye:
      peer.left = true;
      break;
  }
}

// When every rank fails alike (an agreed error) each host reports its own error within moments and
// the others' echoes would be noise, so a peer's failure is announced at once only by a rank blocked
// on a collective, else after a short pause in which this rank did not fail too.
void Watchdog::doom(const std::string& message) {
  if (doom_) return;  // the first failure is the cause; the rest are its echoes
  doom_ = Doom{Clock::now(), message, false};
}

// A rank whose own call failed is its host's to end; one that has finished (strata_destroy) and is
// not blocked needs nothing from the others any more. Every other rank would wait forever: it says
// why at once (the launcher may end it before the grace is over) and ends after the grace.
void Watchdog::check_peer_failure() {
  if (!doom_ || local_failed_) return;
  int64_t since = 0;
  if (closing_ && !board_.waiting(&since)) return;
  const double age = std::chrono::duration<double>(Clock::now() - doom_->since).count();
  const std::string message = doom_->message + "; ending rank " + std::to_string(rank_) +
                              " too, as it cannot continue without it";
  // A rank blocked on a collective is not about to fail alike: say it at once, before a launcher
  // that saw the failed rank exit ends this one.
  if (!doom_->announced && (age >= kAnnounceAfterSeconds || board_.waiting(&since))) {
    doom_->announced = true;
    logger().error("{}", message);
  }
  if (age >= settings_.failure_grace_seconds) end_process(doom_->announced ? std::string() : message);
}

void Watchdog::check_stall() {
  int64_t since = 0;
  if (!board_.waiting(&since)) return;
  const double waited = static_cast<double>(ActivityBoard::now_ns() - since) * 1e-9;
  const bool warn = settings_.warning_seconds > 0 && waited >= settings_.warning_seconds &&
                    warned_for_ != since;
  const bool shut = settings_.shutdown_seconds > 0 && waited >= settings_.shutdown_seconds;
  if (!warn && !shut) return;
  const auto now = Clock::now();
  for (size_t r = 0; r < peers_.size(); ++r) {
    peers_[r].seconds_since_heard = std::chrono::duration<double>(now - heard_at_[r]).count();
  }
  std::vector<PeerState> others;
  for (const PeerState& p : peers_) {
    if (p.rank != rank_) others.push_back(p);
  }
  const std::string report =
      stall_report(rank_, board_.snapshot(), waited, others, silent_after_, names());
  if (shut) {
    const std::string message = report + " Ending the job: stall_inspector.shutdown_seconds is " +
                                std::to_string(static_cast<int>(settings_.shutdown_seconds)) + " s.";
    channel_.send_all(ControlMessage::Failure, message);
    end_silent_local_peers();
    end_process(message);
  }
  warned_for_ = since;
  logger().warn("{} (stall_inspector.warning_seconds; the job ends at shutdown_seconds = {} s)",
                report, settings_.shutdown_seconds);
}

// A stopped process ignores the launcher's SIGTERM until it is continued, so mpirun can return and
// leave it behind. Peers on this host that have stopped answering are ended here, with the job; a
// peer is recognised by pid and start time, so a reused pid is never hit.
void Watchdog::end_silent_local_peers() {
  for (const PeerState& p : peers_) {
    if (p.rank == rank_ || !p.lost.empty() || p.left || p.seconds_since_heard <= silent_after_ ||
        !channel_.same_host(p.rank)) {
      continue;
    }
    const RankProcess& process = channel_.processes()[static_cast<size_t>(p.rank)];
    if (process.start_time == 0 || process_start_time(process.pid) != process.start_time) continue;
    logger().error("rank {} (pid {}) has not answered for {:.1f} s: ending it with the job",
                   p.rank, process.pid, p.seconds_since_heard);
    ::kill(static_cast<pid_t>(process.pid), SIGKILL);
  }
}

void Watchdog::end_process(const std::string& message) {
  if (!message.empty()) logger().error("{}", message);
  logger().flush();
  std::fflush(stdout);
  std::fflush(stderr);
  // The host's thread may be blocked inside the comm stratum, which cannot be interrupted; ending
  // the process is the one way out. Launchers (mpirun, strata-run) then end the other ranks.
  ::_exit(kExitStatus);
}

}  // namespace strata::rt
