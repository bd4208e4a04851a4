// The control channel's traffic once it is up: framing, queued non-blocking sends, the poller, and
// closing the connections in a forked child. Building the mesh is in control_channel_setup.cpp.
#include "faults/control_channel.hpp"
#include "error.hpp"

#include "log.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace strata::rt {
namespace {

constexpr uint32_t kMagic = 0x53544331;  // "STC1"
constexpr size_t kHeader = 12;           // magic, type, length (uint32 each)
constexpr size_t kMaxPayload = 16384;
constexpr size_t kMaxQueued = 64 * 1024;

std::string frame(ControlMessage type, const std::string& payload) {
  const uint32_t header[3] = {kMagic, static_cast<uint32_t>(type),
                              static_cast<uint32_t>(std::min(payload.size(), kMaxPayload))};
  std::string out(reinterpret_cast<const char*>(header), kHeader);
  out.append(payload, 0, header[2]);
  return out;
}

// The live channel, for the fork handler below (one runtime per process).
std::atomic<ControlChannel*> g_live_channel{nullptr};

}  // namespace

void ControlChannel::close_after_fork() {
  // A forked child (a data-loader worker, say) must not keep the parent's connections open: if the
  // parent died, its peers would not see the connection close while the child lives.
  if (ControlChannel* channel = g_live_channel.load()) {
    for (Peer& p : channel->peers_) {
      if (p.fd >= 0) ::close(p.fd);
      p.fd = -1;
    }
    if (channel->wake_fd_ >= 0) ::close(channel->wake_fd_);
    channel->wake_fd_ = -1;
  }
}

void ControlChannel::track_for_fork() {
  static std::once_flag fork_handler;
  std::call_once(fork_handler, [] { pthread_atfork(nullptr, nullptr, &ControlChannel::close_after_fork); });
  g_live_channel = this;
}

ControlChannel::~ControlChannel() {
  g_live_channel = nullptr;
  for (Peer& p : peers_) {
    if (p.fd >= 0) ::close(p.fd);
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ControlChannel::flush_locked(Peer& peer) {
  while (!peer.out.empty() && peer.fd >= 0) {
    const ssize_t put = ::send(peer.fd, peer.out.data(), peer.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return;  // full (EAGAIN) or broken: poll() reports a broken one as closed
    peer.out.erase(0, static_cast<size_t>(put));
  }
}

void ControlChannel::send_all(ControlMessage type, const std::string& payload) {
  const std::string message = frame(type, payload);
  std::lock_guard lock(mutex_);
  for (Peer& p : peers_) {
    if (p.fd < 0 || p.out.size() + message.size() > kMaxQueued) continue;
    p.out += message;
    flush_locked(p);
  }
}

void ControlChannel::wake() {
  const uint64_t one = 1;
  if (wake_fd_ >= 0) (void)!::write(wake_fd_, &one, sizeof one);
}

void ControlChannel::close_locked(int rank) {
  Peer& p = peers_[static_cast<size_t>(rank)];
  if (p.fd >= 0) ::close(p.fd);
  p.fd = -1;
  p.in.clear();
  p.out.clear();
}

// Takes every whole message out of the peer's buffer; false if the bytes are not a control frame.
bool ControlChannel::take_messages(int rank, std::vector<ControlEvent>& events) {
  Peer& p = peers_[static_cast<size_t>(rank)];
  while (p.in.size() >= kHeader) {
    uint32_t header[3];
    std::memcpy(header, p.in.data(), kHeader);
    if (header[0] != kMagic || header[2] > kMaxPayload) return false;
    if (p.in.size() < kHeader + header[2]) break;
    events.push_back({ControlEvent::Kind::Message, rank, static_cast<ControlMessage>(header[1]),
                      p.in.substr(kHeader, header[2])});
    p.in.erase(0, kHeader + header[2]);
  }
  return true;
}

void ControlChannel::read_from(int rank, std::vector<ControlEvent>& events) {
  Peer& p = peers_[static_cast<size_t>(rank)];
  char buffer[8192];
  for (;;) {
    const ssize_t got = ::recv(p.fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (got <= 0) {
      // What arrived before the end still counts (a failure message, then the close).
      events.push_back({ControlEvent::Kind::Closed, rank, {},
                        got == 0 ? "connection closed" : "connection failed: " + errno_text()});
      close_locked(rank);
      return;
    }
    p.in.append(buffer, static_cast<size_t>(got));
    // Parsed as it arrives, so a peer sending garbage cannot grow the buffer without bound.
    if (!take_messages(rank, events)) {
      events.push_back({ControlEvent::Kind::Garbled, rank, {},
                        "sent bytes that are not a Strata control message"});
      close_locked(rank);
      return;
    }
  }
}

std::vector<ControlEvent> ControlChannel::poll(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  {
    std::lock_guard lock(mutex_);
    for (size_t r = 0; r < peers_.size(); ++r) {
      if (peers_[r].fd < 0) continue;
      fds.push_back({peers_[r].fd, static_cast<short>(POLLIN | (peers_[r].out.empty() ? 0 : POLLOUT)), 0});
      ranks.push_back(static_cast<int>(r));
    }
  }
  fds.push_back({wake_fd_, POLLIN, 0});
  const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
  std::vector<ControlEvent> events;
  if (ready <= 0) return events;
  std::lock_guard lock(mutex_);
  if ((fds.back().revents & POLLIN) != 0) {
    uint64_t count = 0;
    (void)!::read(wake_fd_, &count, sizeof count);
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    Peer& p = peers_[static_cast<size_t>(ranks[i])];
    if (p.fd != fds[i].fd) continue;  // closed meanwhile
    if ((fds[i].revents & POLLOUT) != 0) flush_locked(p);
    if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_from(ranks[i], events);
  }
  return events;
}

}  // namespace strata::rt
