#include "network.hpp"

#include "error.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata::run {
namespace {

bool is_interface_address(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  const bool is_v4 = inet_pton(AF_INET, host.c_str(), &v4) == 1;
  const bool is_v6 = !is_v4 && inet_pton(AF_INET6, host.c_str(), &v6) == 1;
  if (!is_v4 && !is_v6) return false;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* it = list; it != nullptr && !found; it = it->ifa_next) {
    if (it->ifa_addr == nullptr) continue;
    if (is_v4 && it->ifa_addr->sa_family == AF_INET) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
      found = sin->sin_addr.s_addr == v4.s_addr;
    } else if (is_v6 && it->ifa_addr->sa_family == AF_INET6) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(it->ifa_addr);
      found = std::memcmp(&sin6->sin6_addr, &v6, sizeof v6) == 0;
    }
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

bool is_local_host(const std::string& host) {
  if (host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0) return true;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) {
    const std::string full = name;
    const std::string short_name = full.substr(0, full.find('.'));
    if (host == full || host == short_name) return true;
  }
  return is_interface_address(host);
}

int find_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw UsageError(std::string("cannot create a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int saved = errno;
  close(fd);
  if (!ok) throw UsageError(std::string("cannot find a free port: ") + std::strerror(saved));
  return ntohs(addr.sin_port);
}

bool valid_network_interface(const std::string& value) {
  const auto slash = value.find('/');
  if (slash != std::string::npos) {
    in_addr addr{};
    const std::string bits = value.substr(slash + 1);
    if (inet_pton(AF_INET, value.substr(0, slash).c_str(), &addr) != 1) return false;
    if (bits.empty() || bits.size() > 2) return false;
    for (const char c : bits) {
      if (c < '0' || c > '9') return false;
    }
    return std::stoi(bits) <= 32;
  }
  // Linux interface names: 1..15 characters, no '/', no whitespace.
  if (value.empty() || value.size() > 15) return false;
  for (const char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.' || c == ':' || c == '@';
    if (!ok) return false;
  }
  return true;
}

}  // namespace strata::run
