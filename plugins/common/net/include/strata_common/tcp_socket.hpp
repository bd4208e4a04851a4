// strata_common/tcp_socket.hpp — blocking TCP over IPv4 for the tree's comm plugins that find
// their peers themselves (the Gloo plugin's rendezvous store, the NCCL plugin's unique-id
// exchange): an owned socket whose every read, write and accept is bounded by a deadline,
// non-blocking connect with retries, length-prefixed frames and little-endian u32 fields. Every
// failure throws SocketError with a sentence; callers add who they were talking to.
// Library strata_common_net (plugins/common, never installed). POSIX sockets (Linux: accept4,
// SOCK_CLOEXEC). Thread-safety: a Socket is used by one thread at a time; the free functions are
// thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace strata::common::net {

using Clock = std::chrono::steady_clock;

// `error_number` is the errno behind the failure where one is known (e.g. EADDRINUSE from
// listen_on), else 0.
struct SocketError : std::runtime_error {
  explicit SocketError(const std::string& what, int error_number = 0)
      : std::runtime_error(what), error_number(error_number) {}
  int error_number;
};

// Little-endian u32, the length and rank fields of our wire formats.
std::string u32(uint32_t value);

// The u32 at `offset`; std::out_of_range when `bytes` is too short.
uint32_t read_u32(const std::string& bytes, std::size_t offset = 0);

// An owned socket (closed when the owner goes); invalid (fd -1) when default-constructed or moved
// from.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();
  int fd() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  // Each waits at most until `deadline`.
  void write_all(const std::string& data, Clock::time_point deadline) const;
  std::string read_exact(std::size_t bytes, Clock::time_point deadline) const;

  // A frame is a u32 length, then that many bytes.
  void write_frame(const std::string& data, Clock::time_point deadline) const;
  std::string read_frame(Clock::time_point deadline, std::size_t limit = 64u << 20) const;

  // A connection accepted on this listening socket (non-blocking, like every socket here), or an
  // invalid socket at the deadline.
  Socket accept_until(Clock::time_point deadline) const;

 private:
  int fd_ = -1;
};

// A non-blocking listening socket on ip:port (SO_REUSEADDR). Throws SocketError with errno's text
// alone, and errno in error_number.
Socket listen_on(const std::string& ip, uint16_t port);

// Connects to ip:port, retrying until `deadline` (the server may start later). The connect is
// non-blocking, so that an address that drops SYNs costs at most the deadline, not the kernel's
// two-minute connect timeout; the socket stays non-blocking: every read and write waits in poll()
// with a deadline. TCP_NODELAY is set.
Socket connect_to(const std::string& ip, uint16_t port, Clock::time_point deadline);

// "a.b.c.d:port" of the peer, or "an unknown peer".
std::string peer_name(int fd);

// `host` (a name or dotted IPv4) as dotted IPv4; SocketError with getaddrinfo's text otherwise.
std::string resolve_ipv4(const std::string& host);

}  // namespace strata::common::net
