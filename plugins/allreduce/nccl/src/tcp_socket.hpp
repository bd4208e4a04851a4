// The few blocking TCP operations the unique-id exchange needs, each bounded by a deadline.
// Failures throw TcpError with a sentence; callers add who they were talking to.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace strata::allreduce_nccl {

using Clock = std::chrono::steady_clock;

struct TcpError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An owned socket.
class TcpSocket {
 public:
  TcpSocket() = default;
  explicit TcpSocket(int fd) : fd_(fd) {}
  TcpSocket(TcpSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  TcpSocket& operator=(TcpSocket&& other) noexcept;
  TcpSocket(const TcpSocket&) = delete;
  TcpSocket& operator=(const TcpSocket&) = delete;
  ~TcpSocket();
  int fd() const { return fd_; }

  void write_all(const std::string& data, Clock::time_point deadline) const;
  std::string read_exact(size_t bytes, Clock::time_point deadline) const;
  // A connection accepted on this listening socket, or an invalid socket (fd -1) at the deadline.
  TcpSocket accept_until(Clock::time_point deadline) const;

 private:
  int fd_ = -1;
};

// Listens on ip:port (SO_REUSEADDR), non-blocking.
TcpSocket listen_on(const std::string& ip, uint16_t port);
// Connects to ip:port, retrying until `deadline` (the server may start later).
TcpSocket connect_to(const std::string& ip, uint16_t port, Clock::time_point deadline);
// `host` (a name or dotted IPv4) as dotted IPv4.
std::string resolve_ipv4(const std::string& host);

}  // namespace strata::allreduce_nccl
