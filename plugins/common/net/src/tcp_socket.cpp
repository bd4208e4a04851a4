#include <strata_common/tcp_socket.hpp>

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

namespace strata::common::net {
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
    if (errno != EINTR) throw SocketError(std::string("poll: ") + std::strerror(errno), errno);
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

std::string u32(uint32_t value) {
  std::string out(4, '\0');
  for (std::size_t i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

uint32_t read_u32(const std::string& bytes, std::size_t offset) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) {
    value = value << 8 | static_cast<unsigned char>(bytes.at(offset + static_cast<std::size_t>(i)));
  }
  return value;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) close(fd_);
}

void Socket::write_all(const std::string& data, Clock::time_point deadline) const {
  std::size_t done = 0;
  while (done < data.size()) {
    if (!ready(fd_, POLLOUT, deadline)) throw SocketError("timed out sending");
    const ssize_t n = send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) throw SocketError(std::string("send: ") + std::strerror(errno), errno);
    done += static_cast<std::size_t>(n);
  }
}

std::string Socket::read_exact(std::size_t bytes, Clock::time_point deadline) const {
  std::string data(bytes, '\0');
  std::size_t done = 0;
  while (done < bytes) {
    if (!ready(fd_, POLLIN, deadline)) throw SocketError("timed out receiving");
    const ssize_t n = recv(fd_, data.data() + done, bytes - done, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n == 0) throw SocketError("connection closed");
    if (n < 0) throw SocketError(std::string("recv: ") + std::strerror(errno), errno);
    done += static_cast<std::size_t>(n);
  }
  return data;
}

void Socket::write_frame(const std::string& data, Clock::time_point deadline) const {
  write_all(u32(static_cast<uint32_t>(data.size())) + data, deadline);
}

std::string Socket::read_frame(Clock::time_point deadline, std::size_t limit) const {
  const uint32_t length = read_u32(read_exact(4, deadline));
  if (length > limit) {
    throw SocketError("frame of " + std::to_string(length) + " bytes is too large");
  }
  return read_exact(length, deadline);
}

Socket Socket::accept_until(Clock::time_point deadline) const {
  while (ready(fd_, POLLIN, deadline)) {
    const int fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) return Socket(fd);
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      throw SocketError(std::string("accept: ") + std::strerror(errno), errno);
    }
  }
  return Socket();
}

Socket listen_on(const std::string& ip, uint16_t port) {
  Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const int one = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in a = address(ip, port);
  if (s.fd() < 0 || bind(s.fd(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      listen(s.fd(), 128) != 0) {
    throw SocketError(std::strerror(errno), errno);
  }
  return s;
}

Socket connect_to(const std::string& ip, uint16_t port, Clock::time_point deadline) {
  const sockaddr_in a = address(ip, port);
  std::string last = "timed out";
  do {
    Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
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
  throw SocketError(last);
}

std::string peer_name(int fd) {
  sockaddr_in a{};
  socklen_t length = sizeof a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0) return "an unknown peer";
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(a.sin_port));
}

std::string resolve_ipv4(const std::string& host) {
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

}  // namespace strata::common::net
