// Blocking TCP I/O with deadlines for the store: whole reads and writes, length-prefixed frames.
// Every failure throws SocketError with a sentence; callers add who they were talking to.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace strata::allreduce_gloo {

using Clock = std::chrono::steady_clock;

struct SocketError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An owned file descriptor.
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
  int release() { int fd = fd_; fd_ = -1; return fd; }

  // Each waits at most until `deadline`.
  void write_all(const std::string& data, Clock::time_point deadline) const;
  std::string read_exact(size_t bytes, Clock::time_point deadline) const;
  void write_frame(const std::string& data, Clock::time_point deadline) const;
  std::string read_frame(Clock::time_point deadline, size_t limit = 64u << 20) const;

 private:
  int fd_ = -1;
};

// A listening socket on ip:port (SO_REUSEADDR); throws SocketError with errno's text.
Socket listen_on(const std::string& ip, uint16_t port, int* error_number);
// Connects to ip:port, retrying until `deadline` (the server may start later).
Socket connect_to(const std::string& ip, uint16_t port, Clock::time_point deadline);
// "a.b.c.d:port" of the peer.
std::string peer_name(int fd);

std::string u32(uint32_t value);
uint32_t read_u32(const std::string& bytes, size_t offset = 0);

}  // namespace strata::allreduce_gloo
