#include "tcp_socket.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace strata::allreduce_nccl {
namespace {

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

// True when `fd` is ready for `events` before the deadline.
bool ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = poll(&p, 1, remaining_ms(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw TcpError(std::string("poll: ") + std::strerror(errno));
  }
}

sockaddr_in address(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

}  // namespace

TcpSocket& TcpSocket::operator=(TcpSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

TcpSocket::~TcpSocket() {
  if (fd_ >= 0) close(fd_);
}

void TcpSocket::write_all(const std::string& data, Clock::time_point deadline) const {
  size_t done = 0;
  while (done < data.size()) {
    if (!ready(fd_, POLLOUT, deadline)) throw TcpError("timed out sending");
    const ssize_t n = send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) throw TcpError(std::string("send: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

std::string TcpSocket::read_exact(size_t bytes, Clock::time_point deadline) const {
  std::string data(bytes, '\0');
  size_t done = 0;
  while (done < bytes) {
    if (!ready(fd_, POLLIN, deadline)) throw TcpError("timed out receiving");
    const ssize_t n = recv(fd_, data.data() + done, bytes - done, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0) throw TcpError("connection closed");
    if (n < 0) throw TcpError(std::string("recv: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return data;
}

TcpSocket TcpSocket::accept_until(Clock::time_point deadline) const {
  while (ready(fd_, POLLIN, deadline)) {
    const int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) return TcpSocket(fd);
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      throw TcpError(std::string("accept: ") + std::strerror(errno));
    }
  }
  return TcpSocket();
}

TcpSocket listen_on(const std::string& ip, uint16_t port) {
  TcpSocket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int one = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in a = address(ip, port);
  if (s.fd() < 0 || bind(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      listen(s.fd(), 128) != 0) {
    throw TcpError(std::string("cannot listen: ") + std::strerror(errno));
  }
  return s;
}

// Non-blocking connect, so that an address that drops SYNs costs at most the deadline.
TcpSocket connect_to(const std::string& ip, uint16_t port, Clock::time_point deadline) {
  const sockaddr_in a = address(ip, port);
  std::string last = "timed out";
  do {
    TcpSocket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int rc = connect(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a);
    if (rc != 0 && errno == EINPROGRESS) {
      int error = ETIMEDOUT;
      if (ready(s.fd(), POLLOUT, deadline)) {
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
  throw TcpError(last);
}

std::string resolve_ipv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) throw TcpError(gai_strerror(rc));
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  freeaddrinfo(found);
  return text;
}

}  // namespace strata::allreduce_nccl
