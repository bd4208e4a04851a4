// A TCP connection from every rank to every other rank, beside the comm stratum, for the few
// messages that must get through while the data path is blocked: heartbeats carrying what each
// rank is doing (the stall inspector), "I failed" (so the others end instead of waiting forever)
// and "goodbye" (so a clean exit is not mistaken for a crash). A killed process shows up at once:
// the kernel closes its sockets.
//
// Why not the comm stratum itself: a comm plugin is used by one thread at a time and is exactly
// what is blocked when these messages matter; MPI cannot be interrupted, and the Gloo plugin to
// come has the same property. A full mesh keeps every rank's view first-hand (rank 0 may be the
// one that stopped); the message rate is one small heartbeat per peer per second.
//
// Only the job's own ranks get in: rank 0 draws a secret and broadcasts it through the comm
// stratum; a connecting rank answers the listener's random challenge with HMAC-SHA256(secret,
// challenge || rank). Anything else is refused and logged with its address. Listeners bind
// 127.0.0.1 when all ranks share a host, else the address in STRATA_CONTROL_ADDR or this host's
// first non-loopback IPv4 address.
#pragma once

#include "engine/collectives.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace strata::rt {

enum class ControlMessage : uint32_t { Heartbeat = 1, Failure = 2, Bye = 3 };

struct ControlEvent {
  enum class Kind { Message, Closed, Garbled };
  Kind kind;
  int peer;
  ControlMessage type{};  // Kind::Message only
  std::string payload;    // the message, or why the connection closed
};

// Which process a rank is: enough to recognise a peer on this host (see Watchdog's stall end).
struct RankProcess {
  std::string host;
  int64_t pid = 0;
  uint64_t start_time = 0;  // /proc/<pid>/stat field 22: tells a reused pid apart
};

// This process's start time as /proc/self/stat gives it (clock ticks since boot), or 0.
uint64_t process_start_time(int64_t pid);

class ControlChannel {
 public:
  // Collective over `collectives`: listens, exchanges addresses and the job secret, and connects
  // to every other rank. `one_host`: every rank runs on this host (the comm stratum's local_size
  // equals its size). Throws Error on every rank alike when a rank cannot listen; throws Error
  // naming the peer when a connection fails or the TCP part takes longer than `timeout_seconds`
  // (the exchanges through the comm stratum are the watchdog's to time).
  ControlChannel(const Collectives& collectives, int rank, int size, bool one_host,
                 double timeout_seconds);
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Queues a message to every connected peer and writes what the sockets take now. Never blocks:
  // a peer that stopped reading (a stopped process) gets nothing more once 64 KiB are queued for
  // it. Thread-safe.
  void send_all(ControlMessage type, const std::string& payload);
  // Waits up to `timeout_ms` for traffic (or wake()), then reads and writes what it can. One
  // thread only (the watchdog).
  std::vector<ControlEvent> poll(int timeout_ms);
  // Makes a poll() in progress return early. Thread-safe.
  void wake();
  // Every rank's process, as each reported it at the handshake.
  const std::vector<RankProcess>& processes() const { return processes_; }
  bool same_host(int rank) const { return processes_[static_cast<size_t>(rank)].host == processes_[static_cast<size_t>(rank_)].host; }

 private:
  struct Peer {
    int fd = -1;
    std::string in;   // bytes received, not yet a whole message
    std::string out;  // bytes queued, not yet written
  };
  using Clock = std::chrono::steady_clock;
  static void close_after_fork();  // pthread_atfork child handler
  void track_for_fork();           // registers this channel for close_after_fork
  void accept_peers(int listener, const unsigned char* secret, int expected,
                    Clock::time_point deadline);
  bool take_messages(int rank, std::vector<ControlEvent>& events);
  void flush_locked(Peer& peer);
  void close_locked(int rank);
  void read_from(int rank, std::vector<ControlEvent>& events);

  int rank_;
  std::vector<RankProcess> processes_;
  std::mutex mutex_;  // guards peers_ (send_all and poll run on different threads)
  std::vector<Peer> peers_;
  int wake_fd_ = -1;  // eventfd
};

}  // namespace strata::rt
