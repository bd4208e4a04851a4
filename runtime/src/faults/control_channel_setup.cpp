// Building the control channel's mesh at start-up: each rank's listener, one exchange of addresses
// and process ids through the comm stratum, the job secret, and the authenticated TCP handshakes.
#include "faults/control_channel.hpp"

#include "error.hpp"
#include "log.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace strata::rt {
namespace {

constexpr size_t kSecret = 32, kNonce = 16, kMac = 32;

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& message) { throw Error(STRATA_ERR_COMM, message); }

void random_bytes(unsigned char* out, size_t n) {
  while (n > 0) {
    const ssize_t got = getrandom(out, n, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      fail("control channel: getrandom failed: " + errno_text());
    }
    out += got;
    n -= static_cast<size_t>(got);
  }
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Reads exactly n bytes before the deadline; false on timeout, EOF or error.
bool read_exact(int fd, void* data, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<unsigned char*>(data);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (n > 0) {
    const ssize_t put = ::send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

void mac_of(const unsigned char* secret, const unsigned char* nonce, int32_t rank,
            unsigned char* out) {
  unsigned char message[kNonce + sizeof(int32_t)];
  std::memcpy(message, nonce, kNonce);
  std::memcpy(message + kNonce, &rank, sizeof rank);
  unsigned int length = kMac;
  HMAC(EVP_sha256(), secret, static_cast<int>(kSecret), message, sizeof message, out, &length);
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

// Whether IPv4 address `addr` (network order) is the interface `want` names: an interface name
// (eth0) or an IPv4 CIDR (10.0.0.0/24), as strata-run's --network-interface takes it.
bool interface_matches(const std::string& want, const char* name, in_addr addr) {
  const size_t slash = want.find('/');
  if (slash == std::string::npos) return want == name;
  in_addr net{};
  const std::string bits_text = want.substr(slash + 1);
  char* end = nullptr;
  const long bits = std::strtol(bits_text.c_str(), &end, 10);
  if (inet_pton(AF_INET, want.substr(0, slash).c_str(), &net) != 1 || bits_text.empty() ||
      *end != '\0' || bits < 0 || bits > 32) {
    fail("control channel: STRATA_NETWORK_INTERFACE '" + want +
         "' is neither an interface name nor an IPv4 CIDR such as 10.0.0.0/24");
  }
  const uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
  return (ntohl(addr.s_addr) & mask) == (ntohl(net.s_addr) & mask);
}

// The address this rank's listener binds and the others connect to: loopback when every rank is
// on this host; else STRATA_CONTROL_ADDR; else this host's IPv4 address on the interface
// STRATA_NETWORK_INTERFACE names; else its first non-loopback IPv4 address.
std::string listen_address(bool one_host) {
  if (one_host) return "127.0.0.1";
  if (const char* env = std::getenv("STRATA_CONTROL_ADDR"); env != nullptr && *env != '\0') {
    return env;
  }
  const char* wanted_env = std::getenv("STRATA_NETWORK_INTERFACE");
  const std::string wanted = wanted_env != nullptr ? wanted_env : "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) fail("control channel: getifaddrs failed: " + errno_text());
  std::string found;
  for (ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0) continue;
    const in_addr addr = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr;
    if (wanted.empty() ? (a->ifa_flags & IFF_LOOPBACK) != 0
                       : !interface_matches(wanted, a->ifa_name, addr)) {
      continue;
    }
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &addr, text, sizeof text);
    found = text;
  }
  freeifaddrs(list);
  if (found.empty() && !wanted.empty()) {
    fail("control channel: STRATA_NETWORK_INTERFACE is '" + wanted + "', but host " +
         host_name() + " has no IPv4 address on it that is up");
  }
  if (found.empty()) {
    fail("control channel: ranks run on several hosts, but this host has no non-loopback IPv4 "
         "address; set STRATA_CONTROL_ADDR to the address the other ranks can reach");
  }
  return found;
}

sockaddr_in parse_address(const std::string& host, uint16_t port, const std::string& what) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    fail("control channel: " + what + " '" + host + "' is not an IPv4 address");
  }
  return addr;
}

int make_socket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("control channel: socket failed: " + errno_text());
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

void set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// This rank's listener, bound before any collective so that a failure here is told to every rank
// in the one exchange below instead of leaving the ranks in different collectives.
struct Listener {
  int fd = -1;
  std::string address;
  uint16_t port = 0;
};

Listener open_listener(bool one_host, int backlog) {
  Listener l;
  l.address = listen_address(one_host);
  sockaddr_in bound = parse_address(l.address, 0, one_host ? "loopback" : "STRATA_CONTROL_ADDR");
  l.fd = make_socket();
  socklen_t length = sizeof bound;
  if (::bind(l.fd, reinterpret_cast<sockaddr*>(&bound), sizeof bound) != 0 ||
      ::listen(l.fd, backlog) != 0 ||
      getsockname(l.fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    const std::string why = errno_text();
    ::close(l.fd);
    fail("control channel: cannot listen on " + l.address + ": " + why);
  }
  l.port = ntohs(bound.sin_port);
  return l;
}

// Connects within the deadline (a filtered address would otherwise block for minutes).
void connect_before(int fd, const sockaddr_in& to, Clock::time_point deadline, const std::string& who) {
  set_nonblocking(fd);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS) {
    fail("control channel: cannot connect to " + who + ": " + errno_text());
  }
  pollfd pfd{fd, POLLOUT, 0};
  int ready = 0;
  do {
    ready = ::poll(&pfd, 1, remaining_ms(deadline));
  } while (ready < 0 && errno == EINTR);
  int error = 0;
  socklen_t length = sizeof error;
  if (ready <= 0) fail("control channel: no answer from " + who + " before the start-up deadline");
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) fail("control channel: cannot connect to " + who + ": " + std::strerror(error));
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

}  // namespace

uint64_t process_start_time(int64_t pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char text[1024] = {};
  const size_t got = std::fread(text, 1, sizeof text - 1, f);
  std::fclose(f);
  // Fields after the command name (which may hold spaces) start past the last ')'.
  const char* at = std::strrchr(text, ')');
  if (got == 0 || at == nullptr) return 0;
  unsigned long long start = 0;
  // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
  // cstime priority nice num_threads itrealvalue starttime
  if (std::sscanf(at + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                  &start) != 1) {
    return 0;
  }
  return start;
}

ControlChannel::ControlChannel(const Collectives& collectives, int rank, int size, bool one_host,
                               double timeout_seconds)
    : rank_(rank), peers_(static_cast<size_t>(size)) {
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  Listener listener;
  std::string mine;
  try {
    listener = open_listener(one_host, size);
    const int64_t pid = getpid();
    mine = "ok " + host_name() + " " + std::to_string(pid) + " " +
           std::to_string(process_start_time(pid)) + " " + listener.address + " " +
           std::to_string(listener.port);
  } catch (const Error& e) {
    mine = std::string("error ") + e.what();
  }
  unsigned char secret[kSecret] = {};
  try {
    // One exchange, made by every rank whatever happened above.
    const std::vector<std::string> all = collectives.allgather_strings(mine);
    std::vector<std::pair<std::string, uint16_t>> endpoints;
    for (size_t r = 0; r < all.size(); ++r) {
      if (all[r].rfind("error ", 0) == 0) {
        fail("rank " + std::to_string(r) + ": " + all[r].substr(6));
      }
      std::istringstream in(all[r].substr(3));
      RankProcess p;
      std::string address;
      unsigned port = 0;
      in >> p.host >> p.pid >> p.start_time >> address >> port;
      processes_.push_back(p);
      endpoints.emplace_back(address, static_cast<uint16_t>(port));
    }
    if (rank == 0) random_bytes(secret, kSecret);
    collectives.broadcast(secret, kSecret, STRATA_U8, 0);

    // Lower ranks listen, higher ranks connect: rank r connects to 0..r-1, then accepts r+1...
    for (int peer = 0; peer < rank; ++peer) {
      const auto& [address, port] = endpoints[static_cast<size_t>(peer)];
      const std::string who = "rank " + std::to_string(peer) + " at " + address + ":" + std::to_string(port);
      const int fd = make_socket();
      peers_[static_cast<size_t>(peer)].fd = fd;
      connect_before(fd, parse_address(address, port, who + "'s address"), deadline, who);
      unsigned char nonce[kNonce];
      unsigned char reply[sizeof(int32_t) + kMac];
      const int32_t me = rank;
      if (!read_exact(fd, nonce, kNonce, deadline)) {
        fail("control channel: " + who + " did not greet before the start-up deadline");
      }
      std::memcpy(reply, &me, sizeof me);
      mac_of(secret, nonce, me, reply + sizeof me);
      if (!write_all(fd, reply, sizeof reply)) fail("control channel: lost " + who + " during the handshake");
    }
    accept_peers(listener.fd, secret, size - 1 - rank, deadline);
  } catch (...) {
    if (listener.fd >= 0) ::close(listener.fd);
    for (Peer& p : peers_) {
      if (p.fd >= 0) ::close(p.fd);
      p.fd = -1;
    }
    OPENSSL_cleanse(secret, kSecret);
    throw;
  }
  ::close(listener.fd);
  OPENSSL_cleanse(secret, kSecret);
  for (Peer& p : peers_) {
    if (p.fd >= 0) set_nonblocking(p.fd);
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {
    for (Peer& p : peers_) {
      if (p.fd >= 0) ::close(p.fd);
    }
    fail("control channel: eventfd failed: " + errno_text());
  }
  track_for_fork();
}

// Accepts `expected` higher ranks. A connection that does not prove the job's secret within a few
// seconds is refused and logged with its address; it cannot hold the others up for longer.
void ControlChannel::accept_peers(int listener, const unsigned char* secret, int expected,
                                  Clock::time_point deadline) {
  while (expected > 0) {
    pollfd pfd{listener, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      fail("control channel: " + std::to_string(expected) +
           " higher rank(s) did not connect before the start-up deadline");
    }
    sockaddr_in from{};
    socklen_t from_length = sizeof from;
    const int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&from), &from_length, SOCK_CLOEXEC);
    if (fd < 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // EMFILE and the like: no spin
      continue;
    }
    char who[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &from.sin_addr, who, sizeof who);
    const std::string origin = std::string(who) + ":" + std::to_string(ntohs(from.sin_port));
    const auto handshake_deadline = std::min(deadline, Clock::now() + std::chrono::seconds(5));
    unsigned char nonce[kNonce];
    unsigned char reply[sizeof(int32_t) + kMac];
    unsigned char expected_mac[kMac];
    int32_t claimed = -1;
    bool valid = false;
    try {
      random_bytes(nonce, kNonce);
      if (write_all(fd, nonce, kNonce) && read_exact(fd, reply, sizeof reply, handshake_deadline)) {
        std::memcpy(&claimed, reply, sizeof claimed);
        mac_of(secret, nonce, claimed, expected_mac);
        valid = claimed > rank_ && claimed < static_cast<int32_t>(peers_.size()) &&
                peers_[static_cast<size_t>(claimed)].fd < 0 &&
                CRYPTO_memcmp(expected_mac, reply + sizeof claimed, kMac) == 0;
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (!valid) {
      logger().warn("control channel: refused a connection from {}: it did not prove the job's "
                    "secret", origin);
      ::close(fd);
      continue;
    }
    peers_[static_cast<size_t>(claimed)].fd = fd;
    --expected;
  }
}

}  // namespace strata::rt
