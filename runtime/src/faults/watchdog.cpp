#include "faults/watchdog.hpp"

#include "log.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace strata::rt {
namespace {

std::vector<PeerState> numbered_peers(int size) {
  std::vector<PeerState> peers(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) peers[static_cast<size_t>(r)].rank = r;
  return peers;
}

template <class Duration>
std::chrono::steady_clock::duration seconds_as(Duration seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

}  // namespace

Watchdog::Watchdog(const ActivityBoard& board, int rank, int size, WatchdogSettings settings,
                   const TimelineSlot& timeline)
    : board_(board),
      rank_(rank),
      settings_(settings),
      // A few heartbeats per warning period, so the report is fresh; at most one a second.
      tick_seconds_(settings.warning_seconds > 0 ? std::clamp(settings.warning_seconds / 5, 0.1, 1.0)
                                                 : 1.0),
      silent_after_(std::max(3 * tick_seconds_, 2.0)),
      timeline_(timeline),
      peer_done_(static_cast<size_t>(size)),
      peers_(numbered_peers(size)),
      heard_at_(static_cast<size_t>(size), Clock::now()),
      thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  // After the comm stratum's teardown: a rank that dies during it is still noticed.
  send(ControlMessage::Bye, {});
  stop_ = true;
  if (ControlChannel* channel = channel_.load()) channel->wake();
  thread_.join();
}

void Watchdog::attach(ControlChannel& channel) { channel_.store(&channel); }

void Watchdog::send(ControlMessage type, const std::string& payload) noexcept {
  try {
    if (ControlChannel* channel = channel_.load()) channel->send_all(type, payload);
  } catch (...) {
    // Out of memory for a queued message: the heartbeat after it will say the same.
  }
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
  send(ControlMessage::Failure, std::to_string(board_.snapshot().collectives) + "|" + message);
}

void Watchdog::closing() { closing_ = true; }

bool Watchdog::others_done_within(double seconds) const {
  const auto deadline = Clock::now() + seconds_as(seconds);
  for (;;) {
    bool all = true;
    for (size_t r = 0; r < peer_done_.size(); ++r) {
      if (static_cast<int>(r) != rank_ && !peer_done_[r]) all = false;
    }
    if (all) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Watchdog::run() {
  // The name the timeline's track and debuggers show (15 characters at most).
  pthread_setname_np(pthread_self(), "strata watchdog");
  try {
    auto next_beat = Clock::now();
    while (!stop_) loop_once(next_beat);
  } catch (const std::exception& e) {
    logger().error("watchdog: stopped by an error, this rank is no longer watched: {}", e.what());
  }
}

void Watchdog::loop_once(Clock::time_point& next_beat) {
  const auto now = Clock::now();
  ControlChannel* channel = channel_.load();
  if (channel != nullptr && !saw_channel_) {
    saw_channel_ = true;  // silence is counted from when the others could first be heard
    std::fill(heard_at_.begin(), heard_at_.end(), now);
  }
  if (channel != nullptr && now >= next_beat) {
    send(ControlMessage::Heartbeat, board_.snapshot().encode());
    next_beat = now + seconds_as(tick_seconds_);
  }
  // Wake at the next heartbeat, at the current wait's warning or shutdown time, and often while a
  // peer's failure is pending, so ranks that stalled together end together.
  auto wake_at = std::max(next_beat, now + std::chrono::milliseconds(1));
  if (doom_) wake_at = std::min(wake_at, now + std::chrono::milliseconds(50));
  int64_t since = 0;
  if (board_.waiting(&since)) {
    const auto started = Clock::time_point(std::chrono::nanoseconds(since));
    for (double limit : {settings_.warning_seconds, settings_.shutdown_seconds}) {
      const auto at = started + seconds_as(limit);
      if (limit > 0 && at > now) wake_at = std::min(wake_at, at);
    }
  }
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - now);
  const int timeout_ms = static_cast<int>(std::clamp<int64_t>(wait.count(), 1, 1000));
  if (channel != nullptr) {
    for (const ControlEvent& event : channel->poll(timeout_ms)) handle(event);
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 100)));
  }
  if (stop_) return;
  refresh_peer_ages();
  check_stall();
  check_departed_peers();
  check_peer_failure();
}

void Watchdog::handle(const ControlEvent& event) {
  const auto peer_index = static_cast<size_t>(event.peer);
  PeerState& peer = peers_[peer_index];
  switch (event.kind) {
    case ControlEvent::Kind::Closed:
      if (peer.left) return;  // it said goodbye first: a clean exit
      peer.lost = event.payload + " without a goodbye: the process ended, was killed or crashed";
      break;
    case ControlEvent::Kind::Garbled:
      peer.lost = event.payload;
      break;
    case ControlEvent::Kind::Message:
      switch (event.type) {
        case ControlMessage::Heartbeat:
          try {
            peer.last = ActivitySnapshot::decode(event.payload);
            peer.heard = true;
            heard_at_[peer_index] = Clock::now();
          } catch (const std::exception&) {
            logger().warn("rank {} sent a malformed heartbeat; ignored", event.peer);
          }
          return;
        case ControlMessage::Failure: {
          // "<collectives started>|<message>"
          const size_t bar = event.payload.find('|');
          const uint64_t count = bar == std::string::npos ? 0 : std::strtoull(event.payload.c_str(), nullptr, 10);
          peer_done_[peer_index] = true;
          doom("rank " + std::to_string(event.peer) + " failed: " +
                   (bar == std::string::npos ? event.payload : event.payload.substr(bar + 1)),
               count);
          return;
        }
        case ControlMessage::Bye:
          peer.left = true;
          peer_done_[peer_index] = true;
          return;
      }
      return;
  }
  peer_done_[peer_index] = true;
  doom("rank " + std::to_string(event.peer) + " is gone (" + peer.lost + ")",
       peer.heard ? peer.last.collectives : 0);
}

// When every rank fails alike (an agreed error) each host reports its own error within moments and
// the others' echoes would be noise, so a peer's failure is announced at once only by a rank
// blocked on a collective the failed rank never started, else after a short pause in which this
// rank did not fail too.
void Watchdog::doom(const std::string& message, uint64_t sender_collectives) {
  if (doom_) return;  // the first failure is the cause; the rest are its echoes
  doom_ = Doom{Clock::now(), message, sender_collectives, false};
}

// A peer that tore its runtime down (strata_destroy: its host is done, or unwinding from an error
// of its own) will never start the collective this rank waits on, if it had not started it yet.
void Watchdog::check_departed_peers() {
  int64_t since = 0;
  if (doom_ || closing_ || !board_.waiting(&since)) return;
  const ActivitySnapshot mine = board_.snapshot();
  for (const PeerState& p : peers_) {
    if (p.rank == rank_ || !p.heard || p.left || !p.lost.empty() || p.last.call != ApiCall::Destroy ||
        p.last.collectives >= mine.collectives) {
      continue;
    }
    doom("rank " + std::to_string(p.rank) + " has torn down its runtime (strata_destroy, after " +
             std::to_string(p.last.collectives) + " collectives) while rank " +
             std::to_string(rank_) + " waits on " + mine.collective + " #" +
             std::to_string(mine.collectives) + ", which it never started",
         p.last.collectives);
    return;
  }
}

// A rank whose own call failed is its host's to end, unless it is stuck; one that has finished
// (strata_destroy) and is not blocked needs nothing from the others any more. Every other rank
// would wait forever: it says why (at once when blocked, as the launcher may end it as soon as the
// failed rank exits) and ends after the grace.
void Watchdog::check_peer_failure() {
  if (!doom_) return;
  int64_t since = 0;
  const bool waiting = board_.waiting(&since);
  const double age = std::chrono::duration<double>(Clock::now() - doom_->since).count();
  if (local_failed_) {
    const double blocked = waiting ? static_cast<double>(ActivityBoard::now_ns() - since) * 1e-9 : 0.0;
    if (blocked >= settings_.failure_grace_seconds && age >= settings_.failure_grace_seconds) {
      end_process("rank " + std::to_string(rank_) + " failed and is blocked on the other ranks, "
                  "which are ending (" + doom_->message + ")", false);
    }
    return;
  }
  if (closing_ && !waiting) return;
  const std::string message = doom_->message + "; ending rank " + std::to_string(rank_) +
                              " too, as it cannot continue without it";
  const bool beyond = waiting && board_.snapshot().collectives > doom_->sender_collectives;
  if (!doom_->announced && (age >= kAnnounceAfterSeconds || beyond)) {
    doom_->announced = true;
    logger().error("{}", message);
  }
  if (age >= settings_.failure_grace_seconds) end_process(message, doom_->announced);
}

void Watchdog::refresh_peer_ages() {
  const auto now = Clock::now();
  for (size_t r = 0; r < peers_.size(); ++r) {
    peers_[r].seconds_since_heard = std::chrono::duration<double>(now - heard_at_[r]).count();
  }
}

bool Watchdog::some_peer_silent_or_gone() const {
  return std::any_of(peers_.begin(), peers_.end(), [&](const PeerState& p) {
    return p.rank != rank_ && (!p.lost.empty() || (!p.left && p.seconds_since_heard > silent_after_));
  });
}

void Watchdog::check_stall() {
  int64_t since = 0;
  if (!board_.waiting(&since)) return;
  // Teardown waits for the slowest rank, which may be busy for long (saving a model): only a
  // rank that is silent or gone makes it a stall.
  if (closing_ && !some_peer_silent_or_gone()) return;
  const double waited = static_cast<double>(ActivityBoard::now_ns() - since) * 1e-9;
  const bool warn = settings_.warning_seconds > 0 && waited >= settings_.warning_seconds &&
                    warned_for_ != since;
  const bool shut = settings_.shutdown_seconds > 0 && waited >= settings_.shutdown_seconds;
  if (!warn && !shut) return;
  std::vector<PeerState> others;
  for (const PeerState& p : peers_) {
    if (p.rank != rank_) others.push_back(p);
  }
  std::string report = stall_report(rank_, board_.snapshot(), waited, others, silent_after_, names());
  if (channel_.load() == nullptr) {
    report += " (The control channel is not up yet: there is no word from the other ranks.)";
  }
  if (shut) {
    const std::string message = report + " Ending the job: stall_inspector.shutdown_seconds is " +
                                std::to_string(static_cast<int>(settings_.shutdown_seconds)) + " s.";
    send(ControlMessage::Failure, std::to_string(board_.snapshot().collectives) + "|" + message);
    logger().error("{}", message);
    end_silent_local_peers();
    end_process(message, true);
  }
  warned_for_ = since;
  logger().warn("{} (stall_inspector.warning_seconds; the job ends at shutdown_seconds = {} s)",
                report, settings_.shutdown_seconds);
  if (Timeline* timeline = timeline_.load(std::memory_order_acquire)) {
    timeline->instant("runtime", "stall", report);
  }
}

// A stopped process ignores the launcher's SIGTERM until it is continued, so mpirun can return and
// leave it behind. Peers on this host that have stopped answering are ended here, with the job; a
// peer is recognised by pid and start time, so a reused pid is never hit. Peers on other hosts are
// their launcher's to end.
void Watchdog::end_silent_local_peers() {
  ControlChannel* channel = channel_.load();
  if (channel == nullptr) return;
  for (const PeerState& p : peers_) {
    if (p.rank == rank_ || !p.lost.empty() || p.left || p.seconds_since_heard <= silent_after_ ||
        !channel->same_host(p.rank)) {
      continue;
    }
    const RankProcess& process = channel->processes()[static_cast<size_t>(p.rank)];
    if (process.start_time == 0 || process_start_time(process.pid) != process.start_time) continue;
    logger().error("rank {} (pid {}) has not answered for {:.1f} s: ending it with the job",
                   p.rank, process.pid, p.seconds_since_heard);
    ::kill(static_cast<pid_t>(process.pid), SIGKILL);
  }
}

void Watchdog::end_process(const std::string& message, bool logged) {
  if (!logged) logger().error("{}", message);
  // The same message ends this rank's own timeline, so the trace tells what the log tells.
  if (Timeline* timeline = timeline_.load(std::memory_order_acquire)) {
    const std::string kept = timeline->finish_alone(message);
    if (!kept.empty()) logger().error("this rank's timeline, up to here: {}", kept);
  }
  logger().flush();
  std::fflush(stdout);
  std::fflush(stderr);
  // The host's thread may be blocked inside the comm stratum, which cannot be interrupted; ending
  // the process is the one way out. Launchers (mpirun, strata-run) then end the other ranks.
  ::_exit(kExitStatus);
}

}  // namespace strata::rt
