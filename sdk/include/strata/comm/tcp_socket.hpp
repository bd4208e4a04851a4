// strata/comm/tcp_socket.hpp — header-only blocking TCP over IPv4 for comm plugins that find
// their peers themselves (a rendezvous store, a unique-id exchange): an owned socket whose every
// read, write and accept is bounded by a deadline, non-blocking connect with retries,
// length-prefixed frames and little-endian u32 fields. Every failure throws SocketError with a
// sentence; callers add who they were talking to. C++17 or later; POSIX sockets (Linux: accept4,
// SOCK_CLOEXEC).
#pragma once

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

namespace strata::sdk::comm {

using Clock = std::chrono::steady_clock;

// `error_number` is the errno behind the failure where one is known (e.g. EADDRINUSE from
// listen_on), else 0.
struct SocketError : std::runtime_error {
  explicit SocketError(const std::string& what, int error_number = 0)
      : std::runtime_error(what), error_number(error_number) {}
  int error_number;
};

// Little-endian u32, the length and rank fields of our wire formats.
inline std::string u32(uint32_t value) {
  std::string out(4, '\0');
  for (size_t i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

// The u32 at `offset`; std::out_of_range when `bytes` is too short.
inline uint32_t read_u32(const std::string& bytes, size_t offset = 0) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) {
    value = value << 8 | static_cast<unsigned char>(bytes.at(offset + static_cast<size_t>(i)));
  }
  return value;
}

namespace tcp_detail {

inline int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

// True when `fd` is ready for `events` before the deadline.
inline bool ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw SocketError(std::string("poll: ") + std::strerror(errno), errno);
  }
}

inline sockaddr_in address(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

}  // namespace tcp_detail

// An owned socket (closed when the owner goes); invalid (fd -1) when default-constructed or moved
// from.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) close(fd_);
      fd_ = other.release();
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  // Each waits at most until `deadline`.
  void write_all(const std::string& data, Clock::time_point deadline) const {
    size_t done = 0;
    while (done < data.size()) {
      if (!tcp_detail::ready(fd_, POLLOUT, deadline)) throw SocketError("timed out sending");
      const ssize_t n = send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) throw SocketError(std::string("send: ") + std::strerror(errno), errno);
      done += static_cast<size_t>(n);
    }
  }

  std::string read_exact(size_t bytes, Clock::time_point deadline) const {
    std::string data(bytes, '\0');
    size_t done = 0;
    while (done < bytes) {
      if (!tcp_detail::ready(fd_, POLLIN, deadline)) throw SocketError("timed out receiving");
      const ssize_t n = recv(fd_, data.data() + done, bytes - done, 0);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n == 0) throw SocketError("connection closed");
      if (n < 0) throw SocketError(std::string("recv: ") + std::strerror(errno), errno);
      done += static_cast<size_t>(n);
    }
    return data;
  }

  // A frame is a u32 length, then that many bytes.
  void write_frame(const std::string& data, Clock::time_point deadline) const {
    write_all(u32(static_cast<uint32_t>(data.size())) + data, deadline);
  }

  std::string read_frame(Clock::time_point deadline, size_t limit = 64u << 20) const {
    const uint32_t length = read_u32(read_exact(4, deadline));
    if (length > limit) {
      throw SocketError("frame of " + std::to_string(length) + " bytes is too large");
    }
    return read_exact(length, deadline);
  }

  // A connection accepted on this listening socket (non-blocking, like every socket here), or an
  // invalid socket at the deadline.
  Socket accept_until(Clock::time_point deadline) const {
    while (tcp_detail::ready(fd_, POLLIN, deadline)) {
      const int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) return Socket(fd);
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
        throw SocketError(std::string("accept: ") + std::strerror(errno), errno);
      }
    }
    return Socket();
  }

 private:
  int fd_ = -1;
};

// A non-blocking listening socket on ip:port (SO_REUSEADDR). Throws SocketError with errno's text
// alone, and errno in error_number.
inline Socket listen_on(const std::string& ip, uint16_t port) {
  Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int one = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in a = tcp_detail::address(ip, port);
  if (s.fd() < 0 || bind(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      listen(s.fd(), 128) != 0) {
    throw SocketError(std::strerror(errno), errno);
  }
  return s;
}

// Connects to ip:port, retrying until `deadline` (the server may start later). The connect is
// non-blocking, so that an address that drops SYNs costs at most the deadline, not the kernel's
// two-minute connect timeout; the socket stays non-blocking: every read and write waits in poll()
// with a deadline.
inline Socket connect_to(const std::string& ip, uint16_t port, Clock::time_point deadline) {
  const sockaddr_in a = tcp_detail::address(ip, port);
  std::string last = "timed out";
  do {
    Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int rc = connect(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a);
    if (rc != 0 && errno == EINPROGRESS) {
      int error = ETIMEDOUT;
      if (tcp_detail::ready(s.fd(), POLLOUT, deadline)) {
        socklen_t length = sizeof error;
        getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
      }
      errno = error;
      rc = error == 0 ? 0 : -1;
    }
    if (rc == 0) {
      const int one = 1;
      setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return s;
    }
    last = std::strerror(errno);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (Clock::now() < deadline);
  throw SocketError(last);
}

// "a.b.c.d:port" of the peer, or "an unknown peer".
inline std::string peer_name(int fd) {
  sockaddr_in a{};
  socklen_t length = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0) return "an unknown peer";
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(a.sin_port));
}

// `host` (a name or dotted IPv4) as dotted IPv4; SocketError with getaddrinfo's text otherwise.
inline std::string resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) throw SocketError(gai_strerror(rc));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  freeaddrinfo(found);
  return text;
}

}  // namespace strata::sdk::comm
